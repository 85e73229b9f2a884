-- The surface, cc_server mode and approval id of every audit row, as in
-- ../postgres/00010_audit_surface.sql. Rows written before are SupaCloud's.

-- +goose Up
ALTER TABLE audit_events ADD COLUMN surface     TEXT NOT NULL DEFAULT 'supacloud';
ALTER TABLE audit_events ADD COLUMN mode        TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_events ADD COLUMN approval_id TEXT NOT NULL DEFAULT '';
CREATE INDEX audit_events_surface_time ON audit_events (surface, time);

-- +goose Down
DROP INDEX audit_events_surface_time;
ALTER TABLE audit_events DROP COLUMN approval_id;
ALTER TABLE audit_events DROP COLUMN mode;
ALTER TABLE audit_events DROP COLUMN surface;
