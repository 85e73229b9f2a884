-- The canonical arguments of an approval's call, as in
-- ../postgres/00017_approval_arguments.sql.

-- +goose Up
ALTER TABLE approvals ADD COLUMN arguments TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE approvals DROP COLUMN arguments;
