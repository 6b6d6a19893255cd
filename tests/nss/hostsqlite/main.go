// Command hostsqlite is a host program with its own SQLite: a Go program
// whose goroutine uses go-sqlite3 built WITHOUT the libsqlite3 tag (the
// SQLite amalgamation compiled into the binary, a different version from
// the system's and from the modules' private one), while C code in the
// same process forks children that look users up through glibc, and so
// through libnss_scim.so.2 (issue 10). The modules must share nothing with
// it: no hung child, no wrong answer.
//
//	go build -o hostsqlite ./tests/nss/hostsqlite   # no -tags libsqlite3
//	hostsqlite -f CACHE [-c FORKS] [-j PARALLEL] [-T TIMEOUT_S]
//
// Run it inside tests/lib.sh's scim_ns (nsswitch.conf "files scim",
// reader.conf -> CACHE). The expected answers are read from CACHE with
// SQL through go-sqlite3; the parent looks one user up through glibc before
// forking, so every child inherits an open module connection. Prints one
// PASS:/FAIL: line; exits 1 on failure.
package main

/*
#include <stdlib.h>
#include <sys/types.h>
int hs_add_ref(const char *name, const char *line, unsigned uid, unsigned gid,
               const unsigned *gids, int ngids);
int hs_check(int i);
int hs_run(int forks, int par, int timeout, int *hung, int *wrong,
           int *unavail, int *crashed);
*/
import "C"

import (
	"database/sql"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	_ "github.com/mattn/go-sqlite3"
)

func main() {
	path := flag.String("f", "", "snapshot (expected answers)")
	forks := flag.Int("c", 1000, "children to fork")
	par := flag.Int("j", 4, "children at a time")
	timeout := flag.Int("T", 10, "seconds before a child counts as hung")
	flag.Parse()
	const label = "host goroutine on go-sqlite3's own SQLite"
	fail := func(f string, a ...any) {
		fmt.Printf("FAIL: %s: %s\n", label, fmt.Sprintf(f, a...))
		os.Exit(1)
	}
	if *path == "" {
		fail("-f CACHE missing")
	}
	db, err := sql.Open("sqlite3", "file:"+*path+"?mode=ro&immutable=1")
	if err != nil {
		fail("open: %v", err)
	}
	var version string
	if err := db.QueryRow("SELECT sqlite_version()").Scan(&version); err != nil {
		fail("sqlite_version: %v", err)
	}
	rows, err := db.Query(`SELECT name, uid, gid, gecos, home, shell FROM users
		WHERE uid % ((SELECT count(*) FROM users) / 60 + 1) = 1 ORDER BY uid LIMIT 64`)
	if err != nil {
		fail("query: %v", err)
	}
	type ref struct {
		name, line string
		uid, gid   uint32
	}
	var refs []ref
	for rows.Next() {
		var r ref
		var gecos, home, shell string
		if err := rows.Scan(&r.name, &r.uid, &r.gid, &gecos, &home, &shell); err != nil {
			fail("scan: %v", err)
		}
		r.line = fmt.Sprintf("%s:*:%d:%d:%s:%s:%s", r.name, r.uid, r.gid, gecos, home, shell)
		refs = append(refs, r)
	}
	rows.Close()
	if len(refs) == 0 {
		fail("no users in the snapshot")
	}
	for _, r := range refs {
		gids := []C.uint{C.uint(r.gid)}
		grows, err := db.Query("SELECT gid FROM memberships WHERE user_name = ? ORDER BY gid", r.name)
		if err != nil {
			fail("groups: %v", err)
		}
		for grows.Next() {
			var g uint32
			grows.Scan(&g)
			if g != r.gid {
				gids = append(gids, C.uint(g))
			}
		}
		grows.Close()
		cn, cl := C.CString(r.name), C.CString(r.line)
		C.hs_add_ref(cn, cl, C.uint(r.uid), C.uint(r.gid), &gids[0], C.int(len(gids)))
		C.free(unsafe.Pointer(cn))
		C.free(unsafe.Pointer(cl))
	}
	db.Close()
	if C.hs_check(0) != 0 {
		fail("the parent's own lookup of %s is wrong or unavailable (under scim_ns?)", refs[0].name)
	}

	// The host's SQLite, busy on its own OS thread for the whole run.
	var loops atomic.Int64
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		for !stop.Load() {
			h, err := sql.Open("sqlite3", ":memory:")
			if err == nil {
				h.Exec(`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT);
					INSERT INTO t (v) VALUES (hex(randomblob(64)));
					INSERT INTO t (v) SELECT v FROM t`)
				h.Close()
			}
			loops.Add(1)
		}
	}()
	for loops.Load() < 10 {
		time.Sleep(time.Millisecond)
	}
	l0 := loops.Load()
	t0 := time.Now()
	var hung, wrong, unavail, crashed C.int
	n := C.hs_run(C.int(*forks), C.int(*par), C.int(*timeout), &hung, &wrong, &unavail, &crashed)
	l := loops.Load() - l0
	stop.Store(true)
	<-done
	ok := hung == 0 && wrong == 0 && unavail == 0 && crashed == 0 && int(n) == *forks && l > 0
	verdict := "FAIL"
	if ok {
		verdict = "PASS"
	}
	fmt.Printf("%s: %s (SQLite %s): %d children (%d at a time) each checked getpwnam_r, getpwuid_r, "+
		"getgrouplist of one of %d users: %d hung, %d wrong, %d unavailable, %d crashed; "+
		"the host goroutine ran %d open/exec/close loops meanwhile (%.1f s)\n",
		verdict, label, version, n, *par, len(refs), hung, wrong, unavail, crashed, l,
		time.Since(t0).Seconds())
	if !ok {
		os.Exit(1)
	}
}
