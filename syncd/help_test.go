package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// Every command answers --help (and `help COMMAND`) on standard output
// with exit 0, without reading a config: `users add --help` with a
// config that does not exist adds nobody and fails nothing.
func TestHelpNeedsNoConfig(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.toml")
	for name := range commands {
		if name == "help" {
			continue // writes to os.Stdout itself
		}
		for _, args := range [][]string{{"--config", missing, name, "--help"}, {name, "-h"}, {name, "--dry-run", "--help"}} {
			var out, errOut bytes.Buffer
			if rc := runMain(args, &out, &errOut); rc != 0 || out.Len() == 0 || errOut.Len() != 0 {
				t.Errorf("%v: exit %d, stdout %d bytes, stderr %q", args, rc, out.Len(), errOut.String())
			}
		}
	}
	var out, errOut bytes.Buffer
	if rc := runMain([]string{"--config", missing, "users", "add", "--help"}, &out, &errOut); rc != 0 ||
		!strings.Contains(out.String(), "usage: syncd users add") || errOut.Len() != 0 {
		t.Errorf("users add --help: exit %d, stdout %q, stderr %q", rc, out.String(), errOut.String())
	}
}
