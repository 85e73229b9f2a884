-- Pinned definitions of bridged tools, as in
-- ../postgres/00020_upstream_tool_pins.sql (one process serves the
-- embedded store: its own decisions are announced in process).

-- +goose Up
CREATE TABLE upstream_tool_pins (
    surface      TEXT NOT NULL,
    upstream     TEXT NOT NULL,
    tool         TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('pinned', 'quarantined', 'rejected')),
    change       TEXT NOT NULL DEFAULT '' CHECK (change IN ('', 'definition', 'new', 'rename')),
    renamed_from TEXT NOT NULL DEFAULT '',
    hash         TEXT NOT NULL DEFAULT '',
    definition   TEXT NOT NULL DEFAULT '',
    current_hash TEXT NOT NULL DEFAULT '',
    current      TEXT NOT NULL DEFAULT '',
    decided_by   TEXT NOT NULL DEFAULT '',
    decided_at   TEXT,
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (surface, upstream, tool)
) STRICT;

-- +goose Down
DROP TABLE upstream_tool_pins;
