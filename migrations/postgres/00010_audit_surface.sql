-- Every audit row names the surface (tool registry) its call was made on,
-- the cc_server conversation mode, and the approval a cc_server call waited
-- for (docs/requirements.md#cc-approval; the approvals themselves live in a table of their own).
-- Rows written before this migration are SupaCloud's.

-- +goose Up
ALTER TABLE audit_events ADD COLUMN surface     text NOT NULL DEFAULT 'supacloud';
ALTER TABLE audit_events ADD COLUMN mode        text NOT NULL DEFAULT '';
ALTER TABLE audit_events ADD COLUMN approval_id text NOT NULL DEFAULT '';
-- Listing one surface's trail, newest first.
CREATE INDEX audit_events_surface_time ON audit_events (surface, time);

-- +goose Down
DROP INDEX audit_events_surface_time;
ALTER TABLE audit_events DROP COLUMN approval_id;
ALTER TABLE audit_events DROP COLUMN mode;
ALTER TABLE audit_events DROP COLUMN surface;
