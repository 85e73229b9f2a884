-- Answers to the requests an upstream makes of the client during a call
-- (elicitation, sampling), for replicas behind a load balancer: the
-- replica holding the call records a row per request it relayed, keyed by
-- a hash of the session id and the gateway's request id and bound to the
-- session's whole credential identity (owner, a hash). The client's
-- response may be POSTed to any replica; one that does not hold the call
-- fills in answer (only for the same owner, before expires_at, once) and
-- announces the key on the channel mcpgate_relay; the holding replica
-- reads it and deletes the row. Rows of calls that ended without cleaning
-- up (a replica that stopped) are swept once expired. The embedded store
-- needs no table: it serves one process.

-- +goose Up
CREATE TABLE mcp_relay_answers (
    answer_key  text        PRIMARY KEY,
    owner       text        NOT NULL,
    expires_at  timestamptz NOT NULL,
    answer      bytea
);
CREATE INDEX mcp_relay_answers_expires ON mcp_relay_answers (expires_at);

-- +goose Down
DROP TABLE mcp_relay_answers;
