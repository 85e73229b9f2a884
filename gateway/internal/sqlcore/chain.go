package sqlcore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auditchain"
)

// DefaultSealOpenAfter is how long the sealer leaves a row open (its call
// not finished) before it seals it as it is: longer than any call runs
// between its reservation and its finish, so that in practice only the
// rows of a gateway that died mid-call (which nobody will finish) are
// sealed open. A finish that comes later is refused (ENotFound) and
// logged by the pipeline; the row keeps the reservation's status.
const DefaultSealOpenAfter = time.Hour

// Sealing bounds: a round seals at most sealBatch rows in one transaction
// (a short hold of SQLite's one writer), and remembers at most sealLook
// open rows (calls under way; a dead gateway's rows are sealed a
// sealLook at a time). sealLook also keeps PostgreSQL's cost estimate of
// the open rows' query under jit_above_cost: compiling it would cost
// more than running it.
const (
	sealBatch = 500
	sealLook  = 1000
)

// unsealedOpen is the open column of audit_unsealed u's row, as a
// correlated subquery: the sealer's queries then walk audit_unsealed (a
// few seconds' worth of rows) in id order and look each row up by its
// primary key; written as a join, PostgreSQL planned a scan of the whole
// of audit_events each round.
const unsealedOpen = `(SELECT e.open FROM audit_events e WHERE e.id = u.id)`

// sealState is what the sealer remembers between rounds: when it first
// saw each open row (seen), when it last looked at the open rows
// (looked) and vacuumed the queue (vacuumed), whether it may vacuum it
// (vacuum), and how long it leaves a row open (openAfter, 0 for
// DefaultSealOpenAfter). A look reads and replaces seen.
type sealState struct {
	mu        sync.Mutex
	seen      map[int64]time.Time
	looked    time.Time
	vacuumed  time.Time
	vacuum    vacuumRight
	openAfter time.Duration
}

// vacuumRight is what the sealer knows of its right to vacuum its queue.
type vacuumRight int

const (
	vacuumUnknown vacuumRight = iota
	vacuumAllowed
	vacuumRefused
)

// SealVacuumEvery is how often at most a sealer vacuums its queue,
// audit_unsealed (Dialect.SealVacuum). Every round reads the queue from
// its lowest id, and on PostgreSQL a deleted entry stays in the table and
// its index, to be stepped over by each read, until a vacuum removes it.
// Autovacuum visits a database about once a minute, by when a gateway at
// 1,500 calls/s has left 90,000 of them: each round's claim then costs
// several times what it costs on a queue of a few seconds' entries
// (docs/benchmarks.md, "Audit sealer cost on PostgreSQL").
const SealVacuumEvery = 5 * time.Second

// sealVacuumTimeout bounds one vacuum of the queue: longer than a
// statement's (a queue left to grow through an outage takes a while),
// short enough that a vacuum that hangs does not hold the sealing loop.
const sealVacuumTimeout = time.Minute

// vacuumDue reports whether a round at now vacuums the queue, and if so
// records that it does.
func (st *sealState) vacuumDue(now time.Time) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.vacuum == vacuumRefused || now.Sub(st.vacuumed) < SealVacuumEvery {
		return false
	}
	st.vacuumed = now
	return true
}

// vacuumRight returns what the sealer knows of its right to vacuum and,
// when it is not known yet, sets it to r (unless r is vacuumUnknown).
func (st *sealState) vacuumRight(r vacuumRight) vacuumRight {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.vacuum == vacuumUnknown {
		st.vacuum = r
	}
	return st.vacuum
}

// openLooks is how many times per open bound the sealer looks at the
// open rows: a row is sealed open between the bound and 1/openLooks of
// it later. The look reads every row waiting to be sealed and the open
// column of each (a few seconds' worth of calls); made every round (four
// a second) it cost PostgreSQL a lookup per call for rows that, with the
// hour's bound, are sealed open only when a gateway died.
const openLooks = 4

// bound is how long a row is left open.
func (st *sealState) bound() time.Duration {
	if st.openAfter <= 0 {
		return DefaultSealOpenAfter
	}
	return st.openAfter
}

// lookDue reports whether a round at now looks at the open rows.
func (st *sealState) lookDue(now time.Time) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.looked.IsZero() || now.Sub(st.looked) >= st.bound()/openLooks
}

// saw records the open rows a look at now found and returns those open
// for longer than the bound (stale).
func (st *sealState) saw(open []int64, now time.Time) (stale []int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	after := st.bound()
	seen := make(map[int64]time.Time, len(open))
	for _, id := range open {
		first, ok := st.seen[id]
		if !ok {
			first = now
		}
		seen[id] = first
		if now.Sub(first) >= after {
			stale = append(stale, id)
		}
	}
	st.seen, st.looked = seen, now
	return stale
}

// SetSealOpenAfter sets how long SealAudit leaves a row open before it
// seals it as it is (DefaultSealOpenAfter when d <= 0).
func (c *Core) SetSealOpenAfter(d time.Duration) {
	c.seal.mu.Lock()
	c.seal.openAfter = d
	c.seal.mu.Unlock()
}

// SealAudit is one sealing round (store.AuditChain): it gives the rows
// not sealed yet, finished ones and those open for longer than
// SetSealOpenAfter, in id order (the order of their inserts), the next
// seq after the chain head and hash = auditchain.RowHash(previous hash,
// row), and moves the head, in transactions of at most sealBatch rows,
// until none is left. Only the holder of the sealing lease seals
// (Dialect.SealLease): on PostgreSQL a round of another replica that
// holds it returns 0 at once. Calls take no lock of the sealer's: it
// claims (deletes) the audit_unsealed entries of the rows it seals,
// which waits only for a finish under way on one of them, inserts their
// audit_seals rows and moves the head row, which only sealers touch; it
// never writes audit_events (migration 00021 says why). It returns how
// many rows it sealed; on error the round's transaction wrote nothing,
// except for an error wrapping auditchain.ErrQueueUpkeep, which comes
// after the rows were sealed (vacuumQueue).
func (c *Core) SealAudit(ctx context.Context) (int, error) {
	// One look at the unsealed rows per call, not per batch: a backlog
	// (the rows a migration found, a long outage) is then sealed in
	// batches without reading the whole unsealed set again each time.
	stale, ready, err := c.lookUnsealed(ctx)
	if err != nil || !ready {
		return 0, err
	}
	total := 0
	for {
		n, err := c.sealRound(ctx, stale)
		total += n
		if err != nil || n < sealBatch {
			if err == nil && total > 0 {
				err = c.vacuumQueue(ctx)
			}
			return total, err
		}
	}
}

// vacuumQueue runs Dialect.SealVacuum when it is due (sealState.vacuumDue),
// after SealAudit's rounds sealed rows; only a replica that held the
// sealing lease for them does. Before the first it asks whether the
// role may vacuum the table (Dialect.SealVacuumAllowed): PostgreSQL
// answers a vacuum it refuses with a warning the driver drops, so a
// refusal would go unseen. A refusal is reported once and the sealer
// leaves the queue to autovacuum from then on. Errors wrap
// auditchain.ErrQueueUpkeep.
func (c *Core) vacuumQueue(ctx context.Context) error {
	if c.D.SealVacuum == "" || !c.seal.vacuumDue(time.Now()) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, sealVacuumTimeout)
	defer cancel()
	if c.seal.vacuumRight(vacuumUnknown) == vacuumUnknown {
		var ok bool
		if err := c.W.QueryRowxContext(ctx, c.D.SealVacuumAllowed).Scan(&ok); err != nil {
			return upkeepError(c.DriverError(err), "could not tell whether the gateway's role may vacuum audit_unsealed; the sealer asks again in a few seconds")
		}
		r := vacuumRefused
		if ok {
			r = vacuumAllowed
		}
		if c.seal.vacuumRight(r) == vacuumRefused {
			return upkeepError(nil, "the gateway's role does not own audit_unsealed, so the sealer leaves its vacuum to autovacuum, which costs the sealing rounds more at high call rates; run the gateway as the role that ran the migrations (docs/operations.md, \"PostgreSQL\")")
		}
	}
	if _, err := c.W.ExecContext(ctx, c.D.SealVacuum); err != nil {
		return upkeepError(c.DriverError(err), "the audit rows were sealed, but vacuuming their queue (audit_unsealed) failed; the sealer tries again in a few seconds")
	}
	return nil
}

// upkeepError is an error of the queue's upkeep (auditchain.ErrQueueUpkeep)
// with message, caused by err (nil for none).
func upkeepError(err error, message string) error {
	if err == nil {
		err = auditchain.ErrQueueUpkeep
	} else {
		err = fmt.Errorf("%w: %w", auditchain.ErrQueueUpkeep, err)
	}
	return gateway.Wrap(gateway.EUnavailable, err, message)
}

// sealRound seals at most sealBatch rows in one transaction.
func (c *Core) sealRound(ctx context.Context, stale []int64) (int, error) {
	tx, err := c.W.BeginTxx(ctx, nil)
	if err != nil {
		return 0, c.DriverError(err)
	}
	n, err := c.sealIn(ctx, tx, stale)
	if err != nil || n == 0 {
		_ = tx.Rollback()
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, c.DriverError(err)
	}
	return n, nil
}

// lookUnsealed reads, without a transaction, whether a finished row
// waits to be sealed, and, when a look is due (sealState.lookDue), the
// open rows: it remembers when each was first seen open and returns
// those open for longer than the sealer's bound (stale). ready is true
// when there is something to seal.
func (c *Core) lookUnsealed(ctx context.Context) (stale []int64, ready bool, err error) {
	var finished []int64
	if err := c.R.SelectContext(ctx, &finished, c.sql(`SELECT u.id FROM audit_unsealed u WHERE `+unsealedOpen+` = {false} LIMIT 1`)); err != nil {
		return nil, false, c.DriverError(err)
	}
	now := time.Now()
	if !c.seal.lookDue(now) {
		return nil, len(finished) > 0, nil
	}
	var open []int64
	if err := c.R.SelectContext(ctx, &open, c.sql(`SELECT u.id FROM audit_unsealed u WHERE `+unsealedOpen+` = {true} ORDER BY u.id LIMIT ?`), sealLook); err != nil {
		return nil, false, c.DriverError(err)
	}
	stale = c.seal.saw(open, now)
	return stale, len(finished) > 0 || len(stale) > 0, nil
}

// sealIn is a sealing round's work in tx: the lease, the head, the rows
// in id order, their seq and hash, the new head. 0 when this process
// does not hold the lease or nothing is left to seal.
func (c *Core) sealIn(ctx context.Context, tx *sqlx.Tx, stale []int64) (int, error) {
	if c.D.SealLease != "" {
		var held bool
		if err := tx.QueryRowxContext(ctx, c.D.SealLease).Scan(&held); err != nil || !held {
			return 0, c.DriverError(err)
		}
	}
	var headSeq int64
	var headHash string
	if err := tx.QueryRowxContext(ctx, c.sql(`SELECT seq, hash FROM audit_chain WHERE id = 1{lock}`)).Scan(&headSeq, &headHash); err != nil {
		return 0, c.DriverError(err)
	}
	prev, err := auditchain.ParseHash(headHash)
	if err != nil {
		return 0, gateway.Wrap(gateway.EInternal, err, "the audit chain head is unreadable, so no row is sealed; run mcpgate audit verify")
	}
	where := unsealedOpen + ` = {false}`
	args := []any{}
	if len(stale) > 0 {
		where = `(` + unsealedOpen + ` = {false} OR u.id IN (?` + strings.Repeat(`, ?`, len(stale)-1) + `))`
		for _, id := range stale {
			args = append(args, id)
		}
	}
	round := `SELECT u.id FROM audit_unsealed u WHERE ` + where + ` ORDER BY u.id LIMIT ?`
	args = append(args, sealBatch)
	var evs []gateway.AuditEvent
	if c.D.OneWriter {
		evs, err = c.readRound(ctx, tx, round, args)
	} else {
		evs, err = c.claimRound(ctx, tx, round, args)
	}
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	for i := range evs {
		ev := &evs[i]
		ev.Seq = headSeq + int64(i) + 1
		h, err := auditchain.RowHash(prev, ev)
		if err != nil {
			return 0, gateway.Wrap(gateway.EInternal, err, "cannot seal the audit trail")
		}
		prev = h
		ev.Hash = h.String()
	}
	for _, w := range c.sealWrites(evs) {
		res, err := tx.ExecContext(ctx, w.q, w.args...)
		if err != nil {
			return 0, c.DriverError(err)
		}
		if n, err := res.RowsAffected(); err != nil || n != int64(len(evs)) {
			return 0, gateway.Errorf(gateway.EInternal, "sealing the audit trail wrote or claimed %d of %d rows; nothing was sealed", n, len(evs))
		}
	}
	_, err = tx.ExecContext(ctx, c.Q(`UPDATE audit_chain SET seq = ?, hash = ?, sealed_at = ? WHERE id = 1`),
		evs[len(evs)-1].Seq, prev.String(), c.Time(Now()))
	if err != nil {
		return 0, c.DriverError(err)
	}
	return len(evs), nil
}

// sealWrite is one statement of a sealing round that writes a row per
// sealed row.
type sealWrite struct {
	q    string
	args []any
}

// sealWrites are the statements that store the seals of evs (ID, Seq and
// Hash set) and, where the dialect claims after reading
// (Dialect.OneWriter), delete their audit_unsealed entries: with bound
// values on SQLite (its JSON functions cost a round more than binding
// three values a row), else Dialect.SealRows over three array literals.
func (c *Core) sealWrites(evs []gateway.AuditEvent) []sealWrite {
	if !c.D.OneWriter {
		seqs := arrayLiteral(len(evs), func(i int, b []byte) []byte { return strconv.AppendInt(b, evs[i].Seq, 10) })
		ids := arrayLiteral(len(evs), func(i int, b []byte) []byte { return strconv.AppendInt(b, evs[i].ID, 10) })
		hashes := arrayLiteral(len(evs), func(i int, b []byte) []byte { return append(b, evs[i].Hash...) })
		return []sealWrite{{c.Q(c.D.SealRows), []any{seqs, ids, hashes}}}
	}
	seals := make([]any, 0, 3*len(evs))
	ids := make([]any, 0, len(evs))
	for i := range evs {
		seals = append(seals, evs[i].Seq, evs[i].ID, evs[i].Hash)
		ids = append(ids, evs[i].ID)
	}
	return []sealWrite{
		{c.Q(`INSERT INTO audit_seals (seq, id, hash) VALUES (?, ?, ?)` + strings.Repeat(`, (?, ?, ?)`, len(evs)-1)), seals},
		{c.Q(`DELETE FROM audit_unsealed WHERE id IN (?` + strings.Repeat(`, ?`, len(evs)-1) + `)`), ids},
	}
}

// arrayLiteral is the PostgreSQL array literal {e0,e1,…} of n elements,
// each appended by elem; the elements need no quoting (numbers, hex).
func arrayLiteral(n int, elem func(i int, b []byte) []byte) string {
	b := make([]byte, 0, n*20)
	b = append(b, '{')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = elem(i, b)
	}
	return string(append(b, '}'))
}

// claimRound claims the round's rows (round selects their ids, with
// args) before it reads them: deleting their audit_unsealed entries waits
// for a finish under way on one of them (it holds a KEY SHARE lock on the
// entry), and keeps any later finish off them; the rows are then read as
// they finally are, in id order.
func (c *Core) claimRound(ctx context.Context, tx *sqlx.Tx, round string, args []any) ([]gateway.AuditEvent, error) {
	var ids []int64
	// ARRAY(…), not IN (…): the candidates are read once, as an
	// uncorrelated subquery, and deleted by their ids. Planned as a join
	// on statistics that say the queue is empty (as a vacuum of the
	// empty queue leaves them), IN ran the candidate scan again for
	// each queued row.
	err := tx.SelectContext(ctx, &ids, c.sql(`DELETE FROM audit_unsealed WHERE id = ANY(ARRAY(`+round+`)) RETURNING id`), args...)
	if err != nil || len(ids) == 0 {
		return nil, c.DriverError(err)
	}
	slices.Sort(ids)
	// A claimed row has no seal yet (a row is claimed once): its own
	// columns are all the hash needs, without the join. The ids go as one
	// array (claimRound runs on PostgreSQL only): one statement text for
	// every round, and one parameter to send and parse, not hundreds.
	set := arrayLiteral(len(ids), func(i int, b []byte) []byte { return strconv.AppendInt(b, ids[i], 10) })
	rows, err := tx.QueryxContext(ctx, c.Q(`SELECT `+auditRowColumns+` FROM audit_events WHERE id = ANY(?::bigint[]) ORDER BY id`), set)
	if err != nil {
		return nil, c.DriverError(err)
	}
	evs, err := scanEvents(rows, len(ids), false)
	return evs, c.DriverError(err)
}

// readRound reads the round's rows (round selects their ids, with args)
// in id order in one statement; sealIn claims them after it has hashed
// them (sealWrites), in the same transaction. Only where that
// transaction holds the database's one writer (SQLite): no finish can
// change a row between the read and the claim.
func (c *Core) readRound(ctx context.Context, tx *sqlx.Tx, round string, args []any) ([]gateway.AuditEvent, error) {
	rows, err := tx.QueryxContext(ctx, c.sql(`SELECT `+auditRowColumns+` FROM audit_events WHERE id IN (`+round+`) ORDER BY id`), args...)
	if err != nil {
		return nil, c.DriverError(err)
	}
	evs, err := scanEvents(rows, sealBatch, false)
	return evs, c.DriverError(err)
}

// scanEvents reads rows of auditRowColumns (auditColumns when sealed)
// into events (at most n expected) and closes rows.
func scanEvents(rows *sqlx.Rows, n int, sealed bool) ([]gateway.AuditEvent, error) {
	defer func() { _ = rows.Close() }()
	evs := make([]gateway.AuditEvent, 0, n)
	var r auditRow
	dest := r.dest(sealed)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		ev, err := r.event()
		if err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
	return evs, rows.Err()
}

// verifyPage is how many rows one statement of VerifyAuditChain reads:
// each statement ends well within a store's operation timeout, however
// long the chain.
const verifyPage = 20_000

// VerifyAuditChain recomputes the chain (store.AuditChain): every sealed
// row in seq order, a page at a time, through an auditchain.Verifier,
// then the chain head, read after the rows (rows sealed meanwhile are
// read next, until the head is not past the last row read), then the
// rows that carry a hash but no seq (forged: the sealer gives both at
// once), the checkpoints against the chain (checkCheckpoints) and the
// count of rows not sealed yet. Reading stops at the first
// problem. The rows are read on R, outside any transaction: a sealer may
// run at the same time.
func (c *Core) VerifyAuditChain(ctx context.Context) (auditchain.Report, error) {
	var rep auditchain.Report
	v, from, err := c.verifyFrom(ctx)
	if err != nil {
		return rep, err
	}
	q := c.Q(sealedRows)
	for {
		more, read, err := c.verifyRows(ctx, v, q, v.Next()-1)
		if err != nil {
			return rep, err
		}
		if more && read == verifyPage {
			continue
		}
		var headHash string
		if err := c.R.QueryRowxContext(ctx, `SELECT seq, hash FROM audit_chain WHERE id = 1`).Scan(&rep.Head.Seq, &headHash); err != nil {
			return rep, c.DriverError(err)
		}
		if rep.Head.Hash, err = auditchain.ParseHash(headHash); err != nil {
			rep.Problem = &auditchain.Problem{Seq: rep.Head.Seq, What: auditchain.Changed, Detail: "the chain head's hash is unreadable: " + err.Error()}
			return rep, nil
		}
		if !more || read == 0 || rep.Head.Seq <= v.Next()-1 {
			break
		}
	}
	rep.Verified, rep.Problem = v.Verified(), v.End(rep.Head)
	if rep.Problem != nil {
		return rep, nil
	}
	p, err := c.checkCheckpoints(ctx, from, rep.Head)
	if p != nil || err != nil {
		rep.Problem = p
		return rep, err
	}
	var forged []int64
	if err := c.R.SelectContext(ctx, &forged, `SELECT e.id FROM audit_events e WHERE NOT EXISTS (SELECT 1 FROM audit_seals s WHERE s.id = e.id)
    AND NOT EXISTS (SELECT 1 FROM audit_unsealed u WHERE u.id = e.id) ORDER BY e.id LIMIT 1`); err != nil {
		return rep, c.DriverError(err)
	}
	if len(forged) > 0 {
		rep.Problem = &auditchain.Problem{What: auditchain.Inserted,
			Detail: "row id " + strconv.FormatInt(forged[0], 10) + " is neither sealed nor waiting to be sealed; every row the gateway writes is one or the other"}
		return rep, nil
	}
	err = c.R.QueryRowxContext(ctx, `SELECT count(*) FROM audit_unsealed`).Scan(&rep.Unsealed)
	return rep, c.DriverError(err)
}

// verifyRows feeds v the sealed rows after seq after; more is false once
// v needs no more rows, read is how many rows it read.
func (c *Core) verifyRows(ctx context.Context, v *auditchain.Verifier, q string, after int64) (more bool, read int, err error) {
	rows, err := c.R.QueryxContext(ctx, q, after, verifyPage)
	if err != nil {
		return false, 0, c.DriverError(err)
	}
	defer func() { _ = rows.Close() }()
	var r auditRow
	dest := r.dest(true)
	more = true
	for more && rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return false, read, c.DriverError(err)
		}
		ev, err := r.event()
		if err != nil {
			return false, read, err
		}
		read++
		more = v.Add(&ev)
	}
	return more, read, c.DriverError(rows.Err())
}

// checkCheckpoints compares the checkpoints with the verified chain: the
// first whose seq is past the head (the tail after the head was deleted
// and the head moved back) or whose hash is not its row's (the chain was
// rewritten with recomputed hashes), after the anchor from (a pruned
// trail's first checkpoint, whose row is gone). Signatures are checked
// where the public key is: auditchain.CheckSignatures (mcpgate audit
// verify --public-key) and VerifyExport.
func (c *Core) checkCheckpoints(ctx context.Context, from int64, head auditchain.Head) (*auditchain.Problem, error) {
	var bad []struct {
		Seq  int64          `db:"seq"`
		Hash string         `db:"hash"`
		Row  sql.NullString `db:"row_hash"`
	}
	err := c.R.SelectContext(ctx, &bad, c.Q(`SELECT c.seq, c.hash, s.hash AS row_hash FROM audit_checkpoints c LEFT JOIN audit_seals s ON s.seq = c.seq
    WHERE c.seq > ? AND (s.hash IS NULL OR s.hash <> c.hash) ORDER BY c.seq LIMIT 1`), from)
	if err != nil || len(bad) == 0 {
		return nil, c.DriverError(err)
	}
	b := bad[0]
	if !b.Row.Valid || b.Seq > head.Seq {
		return &auditchain.Problem{Seq: head.Seq + 1, What: auditchain.Deleted, Detail: fmt.Sprintf(
			"checkpoint seq %d vouches for rows up to seq %d, but the chain ends at seq %d: the tail after seq %d is missing", b.Seq, b.Seq, head.Seq, head.Seq)}, nil
	}
	return &auditchain.Problem{Seq: b.Seq, What: auditchain.BadCheckpoint, Detail: fmt.Sprintf(
		"checkpoint seq %d vouches for hash %s, the chain has %s there: rows up to seq %d were rewritten and their hashes recomputed", b.Seq, b.Hash, b.Row.String, b.Seq)}, nil
}
