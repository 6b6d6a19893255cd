package snapshot

import (
	"database/sql"
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
// A batch that fails (a constraint the validated contents should never
// break) is run again row by row, so that the error names the row, as
// it did with a statement per row.
type rowBatch struct {
	tx   *sql.Tx
	head string // INSERT INTO t (a, b) VALUES
	cols int
	full *sql.Stmt
	args []any
	name func(row []any) string // "user \"x\" (uid 1)", for errors
}

// batchRows is how many rows one INSERT carries (at most 8 columns: 2,048
// parameters, under SQLite's default limit of 32,766).
const batchRows = 256

func newRowBatch(tx *sql.Tx, table string, cols []string, name func(row []any) string) *rowBatch {
	return &rowBatch{tx: tx, head: "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES ",
		cols: len(cols), args: make([]any, 0, batchRows*len(cols)), name: name}
}

// query is the INSERT of n rows.
func (b *rowBatch) query(n int) string {
	row := "(" + strings.Repeat("?,", b.cols-1) + "?)"
	return b.head + strings.Repeat(row+",", n-1) + row
}

// add queues one row (len(row) == the columns); a full batch is run.
func (b *rowBatch) add(row ...any) error {
	b.args = append(b.args, row...)
	if len(b.args) < batchRows*b.cols {
		return nil
	}
	if b.full == nil {
		q := b.query(batchRows)
		st, err := b.tx.Prepare(q)
		if err != nil {
			return fmt.Errorf("prepare %.80q: %w", q, err)
		}
		b.full = st
	}
	return b.run(b.full)
}

// run executes st over the queued rows, or row by row to name the one
// that fails.
func (b *rowBatch) run(st *sql.Stmt) error {
	defer func() { b.args = b.args[:0] }()
	if _, err := st.Exec(b.args...); err == nil {
		return nil
	}
	one, err := b.tx.Prepare(b.query(1))
	if err != nil {
		return fmt.Errorf("prepare %.80q: %w", b.query(1), err)
	}
	defer one.Close()
	for i := 0; i < len(b.args); i += b.cols {
		row := b.args[i : i+b.cols]
		if _, err := one.Exec(row...); err != nil {
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
	st, err := b.tx.Prepare(q)
	if err != nil {
		return fmt.Errorf("prepare %.80q: %w", q, err)
	}
	defer st.Close()
	return b.run(st)
}
