package source

import (
	"testing"

	"github.com/scimbridge/scimbridge/syncd/internal/fieldcheck"
)

// Every field of User and Group counts: a record changed in any one of
// them is not the same (a field added later without SameUser/SameGroup
// learning it fails here).
func TestSameCoversEveryField(t *testing.T) {
	fieldcheck.EveryField(t, SameUser)
	fieldcheck.EveryField(t, SameGroup)
	// nil and empty are told apart (the explain record encodes null and []).
	if SameUser(&User{SSHKeys: nil}, &User{SSHKeys: []string{}}) {
		t.Error("SameUser calls nil and empty key lists the same")
	}
}
