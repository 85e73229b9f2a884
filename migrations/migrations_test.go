package migrations

import (
	"io/fs"
	"regexp"
	"slices"
	"testing"
)

var (
	tableRe      = regexp.MustCompile(`(?m)^CREATE TABLE (\w+)`)
	indexRe      = regexp.MustCompile(`(?m)^CREATE (?:UNIQUE )?INDEX (\w+)`)
	constraintRe = regexp.MustCompile(`CONSTRAINT (\w+)\s+CHECK`)
	// renamedRe finds the tables a migration builds only to rename (SQLite
	// rebuilds a table to change its primary key); they are not part of
	// the schema.
	renamedRe = regexp.MustCompile(`(?m)^ALTER TABLE (\w+) RENAME TO`)
)

// postgresOnly are tables and indexes only replicas need: the embedded
// store serves one process (mcp_relay_answers: the answers to relayed
// requests POSTed to another replica than the call's).
var postgresOnly = []string{"mcp_relay_answers", "mcp_relay_answers_expires"}

// names returns the sorted, distinct first submatches of re in every .sql
// file of fsys.
func names(t *testing.T, fsys fs.FS, re *regexp.Regexp) []string {
	t.Helper()
	paths, err := fs.Glob(fsys, "*.sql")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no migrations found (err %v)", err)
	}
	var out []string
	for _, p := range paths {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestDialectsDefineTheSameSchema(t *testing.T) {
	for _, tc := range []struct {
		name string
		re   *regexp.Regexp
	}{
		{"tables", tableRe},
		{"indexes", indexRe},
		{"named CHECK constraints", constraintRe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg, lite := names(t, Postgres, tc.re), names(t, SQLite, tc.re)
			pg = slices.DeleteFunc(pg, func(n string) bool { return slices.Contains(postgresOnly, n) })
			if tc.re == tableRe {
				pg = slices.DeleteFunc(pg, func(n string) bool { return slices.Contains(names(t, Postgres, renamedRe), n) })
				lite = slices.DeleteFunc(lite, func(n string) bool { return slices.Contains(names(t, SQLite, renamedRe), n) })
			}
			if len(pg) == 0 {
				t.Fatal("found none in the postgres migrations")
			}
			if !slices.Equal(pg, lite) {
				t.Errorf("postgres and sqlite differ:\npostgres %v\nsqlite   %v", pg, lite)
			}
		})
	}
}

func TestEveryNamedConstraintHasAMessage(t *testing.T) {
	defined := names(t, Postgres, constraintRe)
	for _, name := range defined {
		if msg, ok := ConstraintMessage(name); !ok || msg == "" {
			t.Errorf("constraint %s has no message in constraintMessages", name)
		}
	}
	for name := range constraintMessages {
		if !slices.Contains(defined, name) {
			t.Errorf("constraintMessages names %s, which no migration defines", name)
		}
	}
}

func TestConstraintMessageUnknown(t *testing.T) {
	if msg, ok := ConstraintMessage("no_such_check"); ok || msg != "" {
		t.Errorf("ConstraintMessage(no_such_check) = %q, %v; want \"\", false", msg, ok)
	}
}
