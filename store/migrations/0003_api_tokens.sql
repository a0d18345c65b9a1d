-- API tokens for the REST API. Only the SHA-256 of a token is stored (tokens
-- are 32 random bytes, so a fast hash is enough; passwords use bcrypt).
CREATE TABLE api_tokens (
  id {{AUTO_ID}},
  name VARCHAR(128) NOT NULL,
  token_hash CHAR(64) NOT NULL,
  role VARCHAR(16) NOT NULL DEFAULT 'admin',
  created_ms BIGINT NOT NULL,
  last_used_ms BIGINT NOT NULL DEFAULT 0
) {{TABLE}};

CREATE UNIQUE INDEX api_tokens_hash ON api_tokens (token_hash);
