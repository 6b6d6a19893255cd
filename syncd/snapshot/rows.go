package snapshot

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
)

// rowBatch inserts the rows of one table many at a time: one prepared
// INSERT of batchRows rows, run once per batchRows rows added, and one
// of the rest's count at the end. A statement per row spent most of a
// whole write's CPU in database/sql's and cgo's per-call costs (issue 18:
// 4.4 s of a 100,000-user write, and 140 MB of garbage). The rows go in
// in the order added, as before: the same contents give the same pages.
//
// It runs on the driver's connection (build: sql.Conn.Raw), not through
// database/sql: each Exec there made a new list of its 2,048 arguments
// and converted each (96 MB of garbage for a 100,000-user write, the
// collector marking the held directory again for it; Dec 2). Here one
// list of arguments is reused; the values are what database/sql's
// conversion made of them (int64, string, nil: driverValue).
//
// A batch that fails (a constraint the validated contents should never
// break) is run again row by row, so that the error names the row, as
// it did with a statement per row.
type rowBatch struct {
	conn driver.Conn
	head string // INSERT INTO t (a, b) VALUES
	cols int
	full driver.Stmt
	args []driver.NamedValue
	name func(row []any) string // "user \"x\" (uid 1)", for errors
}

// batchRows is how many rows one INSERT carries (at most 8 columns: 2,048
// parameters, under SQLite's default limit of 32,766).
const batchRows = 256

func newRowBatch(conn driver.Conn, table string, cols []string, name func(row []any) string) *rowBatch {
	return &rowBatch{conn: conn, head: "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES ",
		cols: len(cols), args: make([]driver.NamedValue, 0, batchRows*len(cols)), name: name}
}

// query is the INSERT of n rows.
func (b *rowBatch) query(n int) string {
	row := "(" + strings.Repeat("?,", b.cols-1) + "?)"
	return b.head + strings.Repeat(row+",", n-1) + row
}

// driverValue is v as database/sql's default conversion hands it to the
// driver: integers as int64; strings and NULL as they are.
func driverValue(v any) (driver.Value, error) {
	switch x := v.(type) {
	case nil, string, int64:
		return x, nil
	case int:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	}
	return nil, fmt.Errorf("snapshot: unsupported column value %T", v)
}

// add queues one row (len(row) == the columns); a full batch is run.
func (b *rowBatch) add(row ...any) error {
	for _, v := range row {
		dv, err := driverValue(v)
		if err != nil {
			return err
		}
		n := len(b.args)
		b.args = append(b.args, driver.NamedValue{Ordinal: n + 1, Value: dv})
	}
	if len(b.args) < batchRows*b.cols {
		return nil
	}
	if b.full == nil {
		q := b.query(batchRows)
		st, err := b.conn.Prepare(q)
		if err != nil {
			return fmt.Errorf("prepare %.80q: %w", q, err)
		}
		b.full = st
	}
	return b.run(b.full)
}

// execStmt runs st over args (their Ordinals 1..len(args)).
func execStmt(st driver.Stmt, args []driver.NamedValue) error {
	x, ok := st.(driver.StmtExecContext)
	if !ok {
		return fmt.Errorf("snapshot: the SQLite driver's statements lack ExecContext")
	}
	_, err := x.ExecContext(context.Background(), args)
	return err
}

// run executes st over the queued rows, or row by row to name the one
// that fails.
func (b *rowBatch) run(st driver.Stmt) error {
	defer func() { b.args = b.args[:0] }()
	if err := execStmt(st, b.args); err == nil {
		return nil
	}
	one, err := b.conn.Prepare(b.query(1))
	if err != nil {
		return fmt.Errorf("prepare %.80q: %w", b.query(1), err)
	}
	defer one.Close()
	arg := make([]driver.NamedValue, b.cols)
	row := make([]any, b.cols)
	for i := 0; i < len(b.args); i += b.cols {
		for j := range arg {
			arg[j] = driver.NamedValue{Ordinal: j + 1, Value: b.args[i+j].Value}
			row[j] = b.args[i+j].Value
		}
		if err := execStmt(one, arg); err != nil {
			return fmt.Errorf("%s: %w", b.name(row), err)
		}
	}
	return fmt.Errorf("%sfailed for %d rows that each insert alone", b.head, len(b.args)/b.cols)
}

// close runs the rows still queued and releases the statements.
func (b *rowBatch) close() error {
	if b.full != nil {
		defer b.full.Close()
	}
	if len(b.args) == 0 {
		return nil
	}
	q := b.query(len(b.args) / b.cols)
	st, err := b.conn.Prepare(q)
	if err != nil {
		return fmt.Errorf("prepare %.80q: %w", q, err)
	}
	defer st.Close()
	return b.run(st)
}
