// Command scim-nssindex rebuilds the NSS index of hand-made snapshot files
// (test fixtures) from their tables: tests/lib.sh's derive and
// tests/c/gensnap.sh run it after derive.sql. syncd's writer builds the
// index itself.
//
//	scim-nssindex FILE...
package main

import (
	"fmt"
	"os"

	"github.com/scimbridge/scimbridge/syncd/snapshot"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: scim-nssindex FILE...")
		os.Exit(64)
	}
	for _, f := range os.Args[1:] {
		if err := snapshot.Reindex(f); err != nil {
			fmt.Fprintln(os.Stderr, "scim-nssindex:", err)
			os.Exit(1)
		}
	}
}
