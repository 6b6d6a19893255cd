package receiver

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGroupCommit drives several requests into one transaction (the
// write lock is held while they queue, so they form one batch) and checks
// that each is answered as if it had been written alone: a write that
// fails after changing rows (a rename moves the ledger entry, then the
// externalId conflict refuses it) leaves nothing behind, the writes
// before and after it in the batch are on disk, and the store read back
// after reopening holds exactly the successful writes.
func TestGroupCommit(t *testing.T) {
	path := t.TempDir() + "/receiver.db"
	e := newEnv(t, Options{}, path)
	x := e.must(201, "POST", "/Users", `{"schemas":["`+CoreUserURN+`"],"userName":"xavier","externalId":"e-x"}`)
	y := e.must(201, "POST", "/Users", `{"schemas":["`+CoreUserURN+`"],"userName":"yvonne","externalId":"e-y"}`)
	gen0, _ := e.s.Generation(context.Background())
	c0, b0 := e.s.commits.Load(), e.s.batched.Load()

	reqs := []batchReq{
		{"POST", "/Users", `{"schemas":["` + CoreUserURN + `"],"userName":"anna"}`},
		// Renames yvonne (the ledger entry moves to the new name), then
		// fails: externalId e-x is xavier's.
		{"PUT", "/Users/" + y["id"].(string), `{"schemas":["` + CoreUserURN + `"],"userName":"yves","externalId":"e-x"}`},
		{"POST", "/Users", `{"schemas":["` + CoreUserURN + `"],"userName":"anna"}`}, // 409: anna is taken by the first
		{"PATCH", "/Users/" + x["id"].(string), `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","path":"active","value":false}]}`},
		{"POST", "/Users", `{"schemas":["` + CoreUserURN + `"],"userName":"bruno"}`},
	}
	want := []int{201, 409, 409, 200, 201}
	status := e.batch(reqs)
	for i := range reqs {
		if status[i] != want[i] {
			t.Errorf("%s %s: %d, want %d", reqs[i].method, reqs[i].path, status[i], want[i])
		}
	}
	if c, b := e.s.commits.Load()-c0, e.s.batched.Load()-b0; c != 1 || b != 3 {
		t.Errorf("%d commits carrying %d writes, want the 3 successful writes in 1 commit", c, b)
	}
	if g, _ := e.s.Generation(context.Background()); g != gen0+3 {
		t.Errorf("generation %d, want %d (one per successful write)", g, gen0+3)
	}

	// Reopened: exactly what was answered as written.
	e.s.Close()
	s, err := Open(path, Options{UIDMin: 20000, UIDMax: 29999, GIDMin: 20000, GIDMax: 29999})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := NewSource(s, "test").Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range d.Users {
		got = append(got, fmt.Sprintf("%s:%v", u.UserName, *u.Active))
	}
	if w := "xavier:false yvonne:true anna:true bruno:true"; strings.Join(got, " ") != w {
		t.Errorf("users after reopening: %s, want %s", strings.Join(got, " "), w)
	}
	// The failed rename's ledger move was undone with it.
	var name string
	if err := s.db.QueryRow("SELECT name FROM ids WHERE kind='uid' AND num=(SELECT num FROM ids WHERE kind='uid' AND name='yvonne')").Scan(&name); err != nil || name != "yvonne" {
		t.Errorf("yvonne's uid in the ledger: %q, %v (want it still under yvonne)", name, err)
	}
	if err := s.db.QueryRow("SELECT name FROM ids WHERE name='yves'").Scan(&name); err != sql.ErrNoRows {
		t.Errorf("the refused rename left a ledger entry for yves: %v", err)
	}
}

// batchReq is one request of env.batch.
type batchReq struct{ method, path, body string }

// batch sends reqs so that they form one batch, in order (the write
// lock is held while they queue), and returns their statuses.
func (e *env) batch(reqs []batchReq) []int {
	t := e.t
	status := make([]int, len(reqs))
	done := make(chan struct{})
	e.s.wmu.Lock()
	for i, r := range reqs {
		go func() {
			defer func() { done <- struct{}{} }()
			hr, _ := http.NewRequest(r.method, e.url+r.path, strings.NewReader(r.body))
			hr.Header.Set("Authorization", "Bearer "+e.token)
			hr.Header.Set("Content-Type", "application/scim+json")
			resp, err := http.DefaultClient.Do(hr)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			status[i] = resp.StatusCode
		}()
		// In order: the batch runs them in the order they queued.
		for n := 0; ; n++ {
			e.s.qmu.Lock()
			q := len(e.s.queue)
			e.s.qmu.Unlock()
			if q == i+1 {
				break
			}
			if n > 5000 {
				e.s.wmu.Unlock()
				t.Fatalf("request %d never reached the write queue", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	e.s.wmu.Unlock()
	for range reqs {
		<-done
	}
	return status
}

// TestGroupCommitNumbers: the counter new uids come from is read once
// per batch and written before its commit (nextCache). A write refused
// after it took a number (a gidNumber that is another user's private
// group, checked after the uid) gives that number back with its
// savepoint: the next write of the same batch gets it, no number is
// skipped, and the counter on disk is past the last one given.
func TestGroupCommitNumbers(t *testing.T) {
	path := t.TempDir() + "/receiver.db"
	e := newEnv(t, Options{}, path)
	x := e.must(201, "POST", "/Users", `{"schemas":["`+CoreUserURN+`"],"userName":"xavier"}`)
	xgid := x[PosixUserURN].(map[string]any)["gidNumber"]
	status := e.batch([]batchReq{
		{"POST", "/Users", `{"schemas":["` + CoreUserURN + `"],"userName":"anna"}`},
		{"POST", "/Users", fmt.Sprintf(`{"schemas":["%s","%s"],"userName":"carl","%s":{"gidNumber":%v}}`, CoreUserURN, PosixUserURN, PosixUserURN, xgid)},
		{"POST", "/Users", `{"schemas":["` + CoreUserURN + `"],"userName":"bruno"}`},
	})
	if w := []int{201, 409, 201}; fmt.Sprint(status) != fmt.Sprint(w) {
		t.Fatalf("statuses %v, want %v", status, w)
	}
	uid := func(name string) int64 {
		var n int64
		if err := e.s.db.QueryRow("SELECT num FROM ids WHERE kind='uid' AND name=?", name).Scan(&n); err != nil {
			t.Fatalf("uid of %s: %v", name, err)
		}
		return n
	}
	xu, a, b := uid("xavier"), uid("anna"), uid("bruno")
	if a != xu+1 || b != xu+2 {
		t.Errorf("uids xavier %d, anna %d, bruno %d: want consecutive (the refused write's number given back)", xu, a, b)
	}
	var next int64
	if err := e.s.db.QueryRow("SELECT value FROM meta WHERE key='next_uid'").Scan(&next); err != nil || next != b+1 {
		t.Errorf("next_uid on disk %d (%v), want %d", next, err, b+1)
	}
	var n int
	if e.s.db.QueryRow("SELECT count(*) FROM ids WHERE name='carl'").Scan(&n); n != 0 {
		t.Errorf("the refused write left %d ledger rows for carl", n)
	}
	d := e.must(201, "POST", "/Users", `{"schemas":["`+CoreUserURN+`"],"userName":"dora"}`)
	if got := d[PosixUserURN].(map[string]any)["uidNumber"]; fmt.Sprint(got) != fmt.Sprint(b+1) {
		t.Errorf("dora's uid %v, want %d (the next batch reads the counter the last one wrote)", got, b+1)
	}
}
