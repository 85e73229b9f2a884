package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
)

// pinColumns are read into pinRow.
const pinColumns = `surface, upstream, tool, state, change, renamed_from, hash, definition, current_hash, current,
decided_by, decided_at, updated_at`

// pinRow is an upstream_tool_pins row as either driver returns it.
type pinRow struct {
	Surface     string   `db:"surface"`
	Upstream    string   `db:"upstream"`
	Tool        string   `db:"tool"`
	State       string   `db:"state"`
	Change      string   `db:"change"`
	RenamedFrom string   `db:"renamed_from"`
	Hash        string   `db:"hash"`
	Definition  string   `db:"definition"`
	CurrentHash string   `db:"current_hash"`
	Current     string   `db:"current"`
	DecidedBy   string   `db:"decided_by"`
	DecidedAt   NullTime `db:"decided_at"`
	UpdatedAt   Time     `db:"updated_at"`
}

func (r pinRow) pin() gateway.ToolPin {
	p := gateway.ToolPin{Surface: r.Surface, Upstream: r.Upstream, Tool: r.Tool, State: gateway.PinState(r.State),
		Change: r.Change, RenamedFrom: r.RenamedFrom, Hash: r.Hash, CurrentHash: r.CurrentHash,
		DecidedBy: r.DecidedBy, UpdatedAt: r.UpdatedAt.Time}
	if r.Definition != "" {
		p.Definition = json.RawMessage(r.Definition)
	}
	if r.Current != "" {
		p.Current = json.RawMessage(r.Current)
	}
	if r.DecidedAt.Valid {
		t := r.DecidedAt.Time.Time
		p.DecidedAt = &t
	}
	return p
}

// ToolPins returns every pin, by surface, upstream and tool.
func (c *Core) ToolPins(ctx context.Context) ([]gateway.ToolPin, error) {
	var rows []pinRow
	if err := c.R.SelectContext(ctx, &rows, `SELECT `+pinColumns+` FROM upstream_tool_pins ORDER BY surface, upstream, tool`); err != nil {
		return nil, c.DriverError(err)
	}
	out := make([]gateway.ToolPin, len(rows))
	for i, r := range rows {
		out[i] = r.pin()
	}
	return out, nil
}

// AddToolPin inserts p unless its surface, upstream and tool have a pin,
// and reports whether it inserted (updated_at: p.UpdatedAt).
func (c *Core) AddToolPin(ctx context.Context, p gateway.ToolPin) (bool, error) {
	if err := checkPin(p); err != nil {
		return false, err
	}
	const q = `INSERT INTO upstream_tool_pins (surface, upstream, tool, state, change, renamed_from, hash, definition,
current_hash, current, decided_by, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?)
ON CONFLICT (surface, upstream, tool) DO NOTHING`
	res, err := c.W.ExecContext(ctx, c.Q(q), p.Surface, p.Upstream, p.Tool, string(p.State), p.Change, p.RenamedFrom,
		p.Hash, string(p.Definition), p.CurrentHash, string(p.Current), c.Time(p.UpdatedAt))
	if err != nil {
		return false, c.Translate(err, Msgs{})
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, c.DriverError(err)
	}
	return n == 1, nil
}

// UpdateToolPin replaces what a review of the upstream's listing changes
// in the pin p names (state, change, renamed_from, hash, definition,
// current_hash, current, updated_at), only while the stored pin still
// holds the pinned hash p was reviewed against and is not yet quarantined
// with p's current definition: of replicas reviewing one change at once
// one writes it, and a review made before another replica's decision
// does not undo that decision (both get EConflict). ENotFound when there
// is no such pin.
func (c *Core) UpdateToolPin(ctx context.Context, p gateway.ToolPin) error {
	if err := checkPin(p); err != nil {
		return err
	}
	const q = `UPDATE upstream_tool_pins SET state = ?, change = ?, renamed_from = ?, hash = ?, definition = ?,
current_hash = ?, current = ?, updated_at = ? WHERE surface = ? AND upstream = ? AND tool = ?
AND hash = ? AND NOT (state = ? AND current_hash = ?)`
	res, err := c.W.ExecContext(ctx, c.Q(q), string(p.State), p.Change, p.RenamedFrom, p.Hash, string(p.Definition),
		p.CurrentHash, string(p.Current), c.Time(p.UpdatedAt), p.Surface, p.Upstream, p.Tool,
		p.Hash, string(p.State), p.CurrentHash)
	if err := c.ExpectOne(res, err, pinGone(p.Surface, p.Upstream, p.Tool)); gateway.ErrorCodeOf(err) != gateway.ENotFound {
		return err
	}
	var n int
	if err := c.W.GetContext(ctx, &n, c.Q(`SELECT COUNT(*) FROM upstream_tool_pins WHERE surface = ? AND upstream = ? AND tool = ?`),
		p.Surface, p.Upstream, p.Tool); err != nil {
		return c.DriverError(err)
	}
	if n == 0 {
		return gateway.Errorf(gateway.ENotFound, "%s", pinGone(p.Surface, p.Upstream, p.Tool))
	}
	return gateway.Errorf(gateway.EConflict, "tool %q of upstream %q was reviewed or decided through another replica first; its pin is read again from the change feed", p.Tool, p.Upstream)
}

// DecideToolPin approves or rejects a quarantined tool in one
// transaction: only a pin still quarantined is decided, so of two
// concurrent decisions one wins and the other gets EConflict.
func (c *Core) DecideToolPin(ctx context.Context, surface, upstream, tool string, approve bool, decidedBy string, now time.Time) (*gateway.ToolPin, error) {
	if decidedBy == "" {
		return nil, gateway.Errorf(gateway.EInvalid, "decided_by is required: name the person who reviewed the tool")
	}
	var out gateway.ToolPin
	err := c.InTx(ctx, func(tx *sqlx.Tx) error {
		var r pinRow
		err := tx.GetContext(ctx, &r, c.Q(`SELECT `+pinColumns+` FROM upstream_tool_pins WHERE surface = ? AND upstream = ? AND tool = ?`+c.D.LockRow),
			surface, upstream, tool)
		if errors.Is(err, sql.ErrNoRows) {
			return gateway.Errorf(gateway.ENotFound, "%s", pinGone(surface, upstream, tool))
		}
		if err != nil {
			return c.DriverError(err)
		}
		if r.State != string(gateway.PinQuarantined) {
			return gateway.Errorf(gateway.EConflict, "tool %q of upstream %q is %s, not quarantined: there is nothing to decide", tool, upstream, r.State)
		}
		q := `UPDATE upstream_tool_pins SET state = 'rejected', decided_by = ?, decided_at = ?, updated_at = ?
WHERE surface = ? AND upstream = ? AND tool = ?`
		args := []any{decidedBy, c.Time(now), c.Time(now), surface, upstream, tool}
		if approve {
			q = `UPDATE upstream_tool_pins SET state = 'pinned', hash = current_hash, definition = current, current_hash = '',
current = '', change = '', renamed_from = '', decided_by = ?, decided_at = ?, updated_at = ? WHERE surface = ? AND upstream = ? AND tool = ?`
		}
		if _, err := tx.ExecContext(ctx, c.Q(q), args...); err != nil {
			return c.Translate(err, Msgs{})
		}
		if err := tx.GetContext(ctx, &r, c.Q(`SELECT `+pinColumns+` FROM upstream_tool_pins WHERE surface = ? AND upstream = ? AND tool = ?`),
			surface, upstream, tool); err != nil {
			return c.DriverError(err)
		}
		out = r.pin()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// checkPin refuses a pin without its names or with an unknown state.
func checkPin(p gateway.ToolPin) error {
	if p.Surface == "" || p.Upstream == "" || p.Tool == "" {
		return gateway.Errorf(gateway.EInvalid, "a tool pin needs its surface, upstream and tool")
	}
	switch p.State {
	case gateway.PinPinned, gateway.PinQuarantined, gateway.PinRejected:
		return nil
	}
	return gateway.Errorf(gateway.EInvalid, "tool pin state %q: want pinned, quarantined or rejected", p.State)
}

// pinGone is the message of an unknown pin.
func pinGone(surface, upstream, tool string) string {
	return fmt.Sprintf("no pinned tool %q of upstream %q on the %s surface; GET /admin/v1/upstreams/%s/tools lists them", tool, upstream, surface, upstream)
}
