// Package cli holds what every scimbridge command line shares: --help on
// standard output with exit status 0, --version, and flags shown in the
// GNU long form the man pages use (--json, not -json; Go's flag package
// accepts both).
package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// HelpRequested reports whether args ask for help before any "--".
func HelpRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// PrintFlags writes fs's flags as "  --name VALUE" lines with their usage
// and defaults.
func PrintFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintf(w, "%-28s %s", line, usage)
		if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "0s" {
			fmt.Fprintf(w, " (default %s)", d)
		}
		fmt.Fprintln(w)
	})
}

// Usage prints "usage: LINE" and the flags.
func Usage(w io.Writer, fs *flag.FlagSet, line string) {
	fmt.Fprintf(w, "usage: %s\n", strings.TrimSpace(line))
	PrintFlags(w, fs)
}
