-- Signed-in console sessions, kept here so every replica serves a visitor
-- (no sticky sessions). The cookie value is never stored: id_hash is its
-- SHA-256; the visitor's credential is stored only sealed with a key
-- derived from the cookie value (sealed_token, flash), so this table alone
-- cannot be used to act as anyone. Rows past expires_at are swept.

-- +goose Up
CREATE TABLE console_sessions (
    id_hash      text        PRIMARY KEY,
    kind         text        NOT NULL CHECK (kind IN ('admin', 'reader', 'workspace_admin')),
    workspace_id text        NOT NULL DEFAULT '',
    subject      text        NOT NULL DEFAULT '',
    operator     text        NOT NULL DEFAULT '',
    csrf         text        NOT NULL,
    sealed_token bytea       NOT NULL,
    flash        bytea,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL
);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

-- +goose Down
DROP TABLE console_sessions;
