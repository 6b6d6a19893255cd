package main

import (
	"context"
	"database/sql"
	"runtime/debug"
	"testing"

	"github.com/scimbridge/scimbridge/syncd/commit"
	"github.com/scimbridge/scimbridge/syncd/pipeline"
	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

// sync --once that finds nothing changed in a live cache (the hourly
// reconcile's full read) runs under the write's lower memory limit and
// does not load the live snapshot whole: it compares the file's rows
// with the validated directory (pipeline/doc.go, recmem12). The outcome
// is what loading the file gave: unchanged, with the file's meta. A file
// whose rows differ (edited behind syncd's back, its stored digest not
// updated) is still found different, reported and rewritten, with the
// live contents loaded whole under the usual limit; --force still writes.
func TestUnchangedFullSyncComparesTheRows(t *testing.T) {
	e := newEnv(t, 300, 20, "")
	ctx := context.Background()
	if out, err := e.syncer(t).Once(ctx, pipeline.Opts{}); err != nil || out.Result != commit.Committed {
		t.Fatalf("first sync: %v %v", out, err)
	}

	const usual, lower = int64(1 << 30), int64(150 << 20)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(usual))
	defer func(w int64) { pipeline.WriteMemoryLimit = w }(pipeline.WriteMemoryLimit)
	pipeline.WriteMemoryLimit = lower
	limits := map[string]int64{}
	defer func() { snapshot.Stage = nil }()
	snapshot.Stage = func(name string) { limits[name] = debug.SetMemoryLimit(-1) }

	out, err := e.syncer(t).Once(ctx, pipeline.Opts{})
	if err != nil || out.Result != commit.Unchanged || out.Wrote {
		t.Fatalf("nothing changed: result %v, wrote %v, err %v", out.Result, out.Wrote, err)
	}
	if m := e.meta(t); out.Meta != m {
		t.Errorf("nothing changed: meta %+v, want the file's %+v", out.Meta, m)
	}
	if !out.Diff.Empty() {
		t.Errorf("nothing changed: diff %s", out.Diff.Summary())
	}
	if limits["validated"] != lower || limits["compared"] != lower {
		t.Errorf("nothing changed: memory limit %d after validation, %d after the comparison; want the write's %d",
			limits["validated"], limits["compared"], lower)
	}
	if l := debug.SetMemoryLimit(-1); l != usual {
		t.Errorf("after the sync the memory limit is %d, want %d put back", l, usual)
	}

	// A row changed in the file, its stored digest not.
	digest, _ := snapshot.StoredDigest(e.cache)
	db, err := sql.Open("sqlite3", "file:"+e.cache)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	if err := db.QueryRow(`SELECT name FROM users ORDER BY uid LIMIT 1`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE users SET gecos = 'planted' WHERE name = ?`, name); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if d, _ := snapshot.StoredDigest(e.cache); d != digest {
		t.Fatal("the edit changed the stored digest")
	}
	clear(limits)
	out, err = e.syncer(t).Once(ctx, pipeline.Opts{})
	if err != nil || out.Result != commit.Committed || len(out.Diff.ChangedUsers) != 1 || out.Diff.ChangedUsers[0].Name != name {
		t.Fatalf("a row edited in the file: result %v, diff %+v, err %v; want %s changed back", out.Result, out.Diff, err, name)
	}
	c, _, err := snapshot.Load(e.cache)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range c.Users {
		if u.Name == name && u.GECOS == "planted" {
			t.Errorf("the edited row was not rewritten: %+v", u)
		}
	}
	if limits["validated"] != lower || limits["compared"] != usual {
		t.Errorf("a difference: memory limit %d after validation, %d after the whole load; want %d, then %d put back",
			limits["validated"], limits["compared"], lower, usual)
	}

	// --force writes an unchanged directory, as before.
	serial := out.Meta.Serial
	out, err = e.syncer(t).Once(ctx, pipeline.Opts{Force: true})
	if err != nil || !out.Wrote || out.Meta.Serial != serial+1 {
		t.Fatalf("--force: wrote %v serial %d (was %d), err %v", out.Wrote, out.Meta.Serial, serial, err)
	}
}
