package receiver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestFastWritesAnswerAsTheLibrary sends the same POSTs and PUTs, valid
// and not, to two stores: through the gate (which answers valid POSTs and
// PUTs itself, post.go) and straight to the library. Every answer must
// be the same bytes (status, Content-Type, Location, Etag, body), once
// the ids and timestamps each store made are masked.
func TestFastWritesAnswerAsTheLibrary(t *testing.T) {
	gate := newEnv(t, Options{}, "")
	lib := newEnv(t, Options{}, "")
	libSrv := httptest.NewServer(http.StripPrefix("/scim/v2", lib.h.next))
	t.Cleanup(libSrv.Close)

	ids := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	stamps := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	mask := func(s string) string { return stamps.ReplaceAllString(ids.ReplaceAllString(s, "ID"), "TIME") }
	type answer struct{ status, contentType, location, etag, body, id string }
	send := func(base, token, method, path, body string) answer {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/scim+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var doc struct{ ID string }
		json.Unmarshal(raw, &doc)
		return answer{resp.Status, resp.Header.Get("Content-Type"), mask(resp.Header.Get("Location")), resp.Header.Get("Etag"),
			mask(string(raw)), doc.ID}
	}
	// The gate's requests that reach the library.
	var toLibrary int
	inner := gate.h.next
	gate.h.next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { toLibrary++; inner.ServeHTTP(w, r) })
	// label -> id, in each store
	gateIDs, libIDs := map[string]string{}, map[string]string{}
	user := func(rest string) string { return `{"schemas":["` + CoreUserURN + `"],` + rest + `}` }
	group := func(rest string) string { return `{"schemas":["` + CoreGroupURN + `"],` + rest + `}` }
	steps := []struct {
		label, method, path, body string
		wantStatus                int
	}{
		{"alice", "POST", "/Users", user(`"userName":"alice"`), 201},
		{"bob", "POST", "/Users", user(`"userName":"bob@example.com","externalId":"x-bob","active":true,"displayName":"Bob B",
			"name":{"givenName":"Bob","familyName":"B"},"emails":[{"value":"bob@example.com","type":"work","primary":true}],
			"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"employeeNumber":"42","department":"HPC","manager":{"value":"boss"}}`), 201},
		{"carl", "POST", "/Users", user(`"userName":"carl","urn:ietf:params:scim:schemas:extension:posix:2.0:User":{"uidNumber":25001,"loginShell":"/bin/bash"}`), 201},
		{"dora", "POST", "/Users", user(`"userName":"dora","active":"False"`), 201},
		{"", "POST", "/Users", user(`"displayName":"no userName"`), 400},
		{"", "POST", "/Users", `{"schemas":["` + CoreUserURN + `"],"userName":`, 400},
		{"", "POST", "/Users", user(`"userName":"ALICE"`), 409},
		{"", "POST", "/Users", user(`"userName":"erin","active":5`), 400},
		{"", "POST", "/Users", user(`"userName":"root"`), 400},
		{"", "POST", "/Users", user(`"userName":"fred","nickName":["not","a","string"]`), 400},
		{"team", "POST", "/Groups", group(`"displayName":"team","members":[{"value":"@alice"},{"value":"@bob"}]`), 201},
		{"", "POST", "/Groups", group(`"displayName":"Team"`), 409},
		{"", "POST", "/Groups", group(`"displayName":"lost","members":[{"value":"no-such-user"}]`), 400},
		{"alice", "PUT", "/Users/@alice", user(`"userName":"alice","displayName":"Alice A","externalId":"x-alice"`), 200},
		{"", "PUT", "/Users/@alice", user(`"userName":"bob@example.com"`), 409},
		{"", "PUT", "/Users/no-such-id", user(`"userName":"ghost"`), 404},
		{"", "PUT", "/Users/@alice", user(`"userName":7`), 400},
		{"team", "PUT", "/Groups/@team", group(`"displayName":"team2","members":[{"value":"@carl"}]`), 200},
		{"", "PUT", "/Users/.search", user(`"userName":"x"`), 405},
		{"", "POST", "/v2/Users", user(`"userName":"gina"`), 201},
	}
	resolve := func(s string, m map[string]string) string {
		for label, id := range m {
			s = strings.ReplaceAll(s, "@"+label, id)
		}
		return s
	}
	for _, st := range steps {
		before := toLibrary
		g := send(gate.url, gate.token, st.method, resolve(st.path, gateIDs), resolve(st.body, gateIDs))
		l := send(libSrv.URL+"/scim/v2", lib.token, st.method, resolve(st.path, libIDs), resolve(st.body, libIDs))
		if g != l && (g.status != l.status || g.contentType != l.contentType || g.location != l.location || g.etag != l.etag || g.body != l.body) {
			t.Errorf("%s %s %s:\n gate    %+v\n library %+v", st.method, st.path, st.body, g, l)
		}
		if code := strings.SplitN(g.status, " ", 2)[0]; code != strconv.Itoa(st.wantStatus) {
			t.Errorf("%s %s %s: status %s, want %d: %s", st.method, st.path, st.body, g.status, st.wantStatus, g.body)
		}
		// A write the store took (or refused: 409, 404) was answered by
		// the gate, not the library.
		if (st.wantStatus < 300 || st.wantStatus == 409 || st.wantStatus == 404) && toLibrary != before {
			t.Errorf("%s %s: answered by the library, not the gate", st.method, st.path)
		}
		if st.label != "" && st.method == "POST" {
			gateIDs[st.label], libIDs[st.label] = g.id, l.id
		}
	}
}
