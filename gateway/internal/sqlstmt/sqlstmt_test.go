package sqlstmt

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/jmoiron/sqlx"
)

// stalledDriver's connections prepare nothing: Prepare tells entered and
// then waits for release, as a database that keeps the connection open
// but never answers.
type stalledDriver struct{ entered, release chan struct{} }

func (d stalledDriver) Open(string) (driver.Conn, error) { return stalledConn(d), nil }

type stalledConn stalledDriver

func (c stalledConn) Prepare(string) (driver.Stmt, error) {
	c.entered <- struct{}{}
	<-c.release
	return nil, errors.New("the database went away")
}
func (c stalledConn) Close() error              { return nil }
func (c stalledConn) Begin() (driver.Tx, error) { return nil, errors.New("no transactions") }

// TestGetGivesUpAtItsDeadline: while one caller prepares the statement on
// a database that does not answer, another whose context ends gets its
// context's error then, instead of waiting behind the prepare (a call's
// store deadline held while the audit log's writer prepared the same
// statement on a stalled PostgreSQL).
func TestGetGivesUpAtItsDeadline(t *testing.T) {
	d := stalledDriver{entered: make(chan struct{}), release: make(chan struct{})}
	sql.Register("sqlstmt-stalled", d)
	db := sqlx.NewDb(sql.OpenDB(connector{d}), "sqlstmt-stalled")
	defer db.Close()
	p := &Prepared{Query: "SELECT 1"}
	first := make(chan error, 1)
	go func() {
		_, err := p.Get(context.Background(), db, func(err error) error { return err })
		first <- err
	}()
	<-d.entered // the first Get holds the statement's lock, in Prepare
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	translated := errors.New("translated")
	_, err := p.Get(ctx, db, func(err error) error { return errors.Join(translated, err) })
	if !errors.Is(err, context.Canceled) || !errors.Is(err, translated) {
		t.Fatalf("Get with an ended context while another prepares: %v; want its context's error, translated", err)
	}
	close(d.release)
	if err := <-first; err == nil {
		t.Fatal("the stalled prepare succeeded")
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close after a failed prepare: %v", err)
	}
}

// connector opens stalledDriver connections for sql.OpenDB.
type connector struct{ d stalledDriver }

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.d.Open("") }
func (c connector) Driver() driver.Driver                        { return c.d }
