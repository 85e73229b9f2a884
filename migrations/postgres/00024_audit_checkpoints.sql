-- Signed checkpoints of the audit chain (issue 26; docs/architecture.md,
-- "The audit chain"): every minute or so the sealer's loop writes the chain
-- head {seq, hash, time}, signed with Ed25519 when the gateway has a key
-- (MCPGATE_AUDIT_SIGNING_KEY_FILE). key_id names the key (the first 16 hex
-- digits of SHA-256 of the public key) and signature is base64 of the
-- signature over the checkpoint's message (auditchain.Checkpoint.Message);
-- both are '' when the gateway runs without a key. One checkpoint per seq:
-- replicas that write the same head at once keep the first.

-- +goose Up
CREATE TABLE audit_checkpoints (
    seq       bigint      PRIMARY KEY,
    hash      text        NOT NULL,
    time      timestamptz NOT NULL,
    key_id    text        NOT NULL DEFAULT '',
    signature text        NOT NULL DEFAULT ''
);
CREATE INDEX audit_checkpoints_time ON audit_checkpoints (time);

-- +goose Down
DROP TABLE audit_checkpoints;
