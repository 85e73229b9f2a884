package postgres

import (
	"context"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// RelayChannel carries the keys of relayed requests whose answer another
// replica recorded (DeliverRelayAnswer): {"s": schema, "k": answer key}.
const RelayChannel = "mcpgate_relay"

// AnswerHandler is implemented by a ChangeHandler that also takes the
// announcements of RelayChannel: RelayAnswered is called with the key of
// an answer recorded by any replica (this one included). Like Changed it
// must return quickly.
type AnswerHandler interface {
	RelayAnswered(key string)
}

// ExpectRelayAnswer records that this replica waits, until until, for the
// client's answer to the relayed request key, from the session owner
// owner (migration 00013). A key already recorded is replaced. Errors are
// EUnavailable.
func (s *Store) ExpectRelayAnswer(ctx context.Context, key, owner string, until time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO mcp_relay_answers (answer_key, owner, expires_at) VALUES ($1, $2, $3)
ON CONFLICT (answer_key) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at, answer = NULL`, key, owner, until)
	return relayErr(err)
}

// DeliverRelayAnswer records answer for the relayed request key and
// announces it on RelayChannel, in one statement. It reports false, and
// records nothing, when no replica waits for key from owner: an unknown
// key, one past its expiry, one answered already, or another owner's.
func (s *Store) DeliverRelayAnswer(ctx context.Context, key, owner string, answer []byte) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `WITH u AS (
    UPDATE mcp_relay_answers SET answer = $3
    WHERE answer_key = $1 AND owner = $2 AND expires_at > now() AND answer IS NULL
    RETURNING answer_key)
SELECT count(pg_notify($4, json_build_object('s', current_schema(), 'k', answer_key)::text)) FROM u`,
		key, owner, answer, RelayChannel).Scan(&n)
	if err != nil {
		return false, relayErr(err)
	}
	return n == 1, nil
}

// RelayAnswer returns the answer recorded for key, and false while there
// is none (or the row is gone).
func (s *Store) RelayAnswer(ctx context.Context, key string) ([]byte, bool, error) {
	var answer []byte
	err := s.db.QueryRowContext(ctx, `SELECT answer FROM mcp_relay_answers WHERE answer_key = $1 AND answer IS NOT NULL`, key).Scan(&answer)
	if err != nil {
		if isNoRows(err) {
			return nil, false, nil
		}
		return nil, false, relayErr(err)
	}
	return answer, true, nil
}

// ForgetRelayAnswer deletes the record of key once its request is
// answered or given up.
func (s *Store) ForgetRelayAnswer(ctx context.Context, key string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM mcp_relay_answers WHERE answer_key = $1`, key)
	return relayErr(err)
}

// DeleteExpiredRelayAnswers deletes the records that expired at or before
// before (of calls whose replica stopped without cleaning up).
func (s *Store) DeleteExpiredRelayAnswers(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM mcp_relay_answers WHERE expires_at <= $1`, before)
	if err != nil {
		return 0, relayErr(err)
	}
	return res.RowsAffected()
}

func relayErr(err error) error {
	if err == nil {
		return nil
	}
	return gateway.Wrap(gateway.EUnavailable, driverError(err), "the relayed answers of other replicas cannot be read or written; retry shortly")
}
