-- People must see what they approve (issue 22): an approval keeps the
-- canonical JSON (RFC 8785) of the arguments of the call it is bound to,
-- so the admin API, its stream, the console and the elicitation show them
-- whole. The gateway bounds them (approvals.MaxArgumentsBytes) and refuses
-- a call whose arguments do not fit; approvals made before this migration
-- keep '' (not recorded).

-- +goose Up
ALTER TABLE approvals ADD COLUMN arguments text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE approvals DROP COLUMN arguments;
