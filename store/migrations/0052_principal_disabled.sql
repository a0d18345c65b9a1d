-- Disabled users and service accounts (issue 14). A disabled principal keeps
-- its name, tokens and role bindings but is refused everywhere (tokens,
-- sessions, logins) until an admin enables it again. A table of its own:
-- principals comes from 0060, which runs after this number on a new
-- database.
CREATE TABLE principal_disabled (
  principal_id BIGINT NOT NULL PRIMARY KEY,
  disabled_ms BIGINT NOT NULL
) {{TABLE}};
