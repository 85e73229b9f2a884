-- Signed-in console sessions, as in ../postgres/00014_console_sessions.sql:
-- only a hash of the cookie value, the credential sealed with a key
-- derived from it, so a restart keeps visitors signed in.

-- +goose Up
CREATE TABLE console_sessions (
    id_hash      TEXT PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('admin', 'reader', 'workspace_admin')),
    workspace_id TEXT NOT NULL DEFAULT '',
    subject      TEXT NOT NULL DEFAULT '',
    operator     TEXT NOT NULL DEFAULT '',
    csrf         TEXT NOT NULL,
    sealed_token BLOB NOT NULL,
    flash        BLOB,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL
) STRICT;
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

-- +goose Down
DROP TABLE console_sessions;
