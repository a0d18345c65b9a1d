-- Accounts and access (issue 14): users and service accounts, role bindings,
-- API tokens owned by principals, browser sessions, the login limiter, SSO
-- login states, the audit log, and one version counter that replicas poll to
-- drop cached credentials when any of these change.

CREATE TABLE principals (
  id {{AUTO_ID}},
  name VARCHAR(64) NOT NULL,
  kind VARCHAR(16) NOT NULL,
  source VARCHAR(16) NOT NULL DEFAULT 'local',
  email VARCHAR(255) NOT NULL DEFAULT '',
  password_hash VARCHAR(255) NOT NULL DEFAULT '',
  sso_subject VARCHAR(255) NOT NULL DEFAULT '',
  sso_groups {{LONGTEXT}} NOT NULL,
  created_ms BIGINT NOT NULL,
  updated_ms BIGINT NOT NULL,
  last_login_ms BIGINT NOT NULL DEFAULT 0
) {{TABLE}};

CREATE UNIQUE INDEX principals_name ON principals (name);

CREATE TABLE role_bindings (
  id {{AUTO_ID}},
  role VARCHAR(16) NOT NULL,
  group_id BIGINT NOT NULL DEFAULT 0,
  principal_id BIGINT NOT NULL DEFAULT 0,
  sso_group VARCHAR(255) NOT NULL DEFAULT '',
  created_ms BIGINT NOT NULL
) {{TABLE}};

CREATE UNIQUE INDEX role_bindings_unique ON role_bindings (role, group_id, principal_id, sso_group);

ALTER TABLE api_tokens ADD COLUMN principal_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE api_tokens ADD COLUMN prefix VARCHAR(16) NOT NULL DEFAULT '';
ALTER TABLE api_tokens ADD COLUMN expires_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE api_tokens ADD COLUMN revoked_ms BIGINT NOT NULL DEFAULT 0;
CREATE INDEX api_tokens_principal ON api_tokens (principal_id);

CREATE TABLE sessions (
  id {{AUTO_ID}},
  token_hash CHAR(64) NOT NULL,
  principal_id BIGINT NOT NULL,
  csrf_token VARCHAR(64) NOT NULL,
  client_addr VARCHAR(64) NOT NULL DEFAULT '',
  created_ms BIGINT NOT NULL,
  last_seen_ms BIGINT NOT NULL,
  expires_ms BIGINT NOT NULL
) {{TABLE}};

CREATE UNIQUE INDEX sessions_hash ON sessions (token_hash);
CREATE INDEX sessions_principal ON sessions (principal_id);

CREATE TABLE login_failures (
  limiter_key VARCHAR(255) NOT NULL PRIMARY KEY,
  failures INT NOT NULL,
  last_ms BIGINT NOT NULL
) {{TABLE}};

CREATE TABLE sso_states (
  state_hash CHAR(64) NOT NULL PRIMARY KEY,
  verifier VARCHAR(128) NOT NULL,
  nonce VARCHAR(128) NOT NULL,
  return_to VARCHAR(255) NOT NULL DEFAULT '',
  expires_ms BIGINT NOT NULL
) {{TABLE}};

CREATE TABLE audit_events (
  id {{AUTO_ID}},
  at_ms BIGINT NOT NULL,
  principal VARCHAR(64) NOT NULL DEFAULT '',
  principal_id BIGINT NOT NULL DEFAULT 0,
  token_name VARCHAR(128) NOT NULL DEFAULT '',
  client_addr VARCHAR(64) NOT NULL DEFAULT '',
  request_id VARCHAR(64) NOT NULL DEFAULT '',
  action VARCHAR(64) NOT NULL,
  object_type VARCHAR(32) NOT NULL DEFAULT '',
  object_id VARCHAR(64) NOT NULL DEFAULT '',
  group_id BIGINT NOT NULL DEFAULT 0,
  changes {{LONGTEXT}} NOT NULL
) {{TABLE}};

CREATE INDEX audit_events_at ON audit_events (at_ms);
CREATE INDEX audit_events_principal ON audit_events (principal, id);
CREATE INDEX audit_events_object ON audit_events (object_type, object_id, id);
CREATE INDEX audit_events_action ON audit_events (action, id);

CREATE TABLE auth_version (
  id INT NOT NULL PRIMARY KEY,
  version BIGINT NOT NULL
) {{TABLE}};

INSERT INTO auth_version (id, version) VALUES (1, 1);
