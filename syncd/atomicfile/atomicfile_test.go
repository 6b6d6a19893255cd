package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplacesWithModeAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "status.json")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "new" {
		t.Fatalf("contents %q, %v; want new", b, err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want only the target", len(ents))
	}
}

func TestWriteIntoMissingDirectorySaysWhich(t *testing.T) {
	p := filepath.Join(t.TempDir(), "no", "such", "file")
	err := Write(p, []byte("x"), 0o644)
	if err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	if got := err.Error(); !strings.Contains(got, p) {
		t.Fatalf("error %q does not name %s", got, p)
	}
}

func TestJSONRoundTripAndErrorsNameTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	type rec struct {
		A int    `json:"a"`
		B string `json:"b"`
	}
	if err := WriteJSON(p, rec{7, "x"}, 0o640); err != nil {
		t.Fatal(err)
	}
	var got rec
	if err := ReadJSON(p, &got); err != nil || got != (rec{7, "x"}) {
		t.Fatalf("%+v %v", got, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
	os.WriteFile(p, []byte("{"), 0o600)
	if err := ReadJSON(p, &got); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("bad JSON: %v", err)
	}
	if err := ReadJSON(p+".none", &got); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}
