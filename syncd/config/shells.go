package config

import (
	"bufio"
	"os"
	"strings"
)

// ShellsFile is the list of login shells the default allowed_shells is
// read from (shells(5)). A variable for tests.
var ShellsFile = "/etc/shells"

// NologinShells are allowed by default besides ShellsFile: a user whose
// shell refuses logins is still a user (files, jobs, groups); they must
// resolve, with their shell, and login is refused by that shell as usual.
// Dropping them would take their files' owner names away and make their
// uid look free.
var NologinShells = []string{"/usr/sbin/nologin", "/sbin/nologin", "/usr/bin/nologin", "/bin/false", "/usr/bin/false"}

// CommonShells are allowed by default whether or not this host lists
// them: syncd often runs on a head node whose /etc/shells is not the
// compute nodes', and a user whose shell is not installed here must not
// vanish from every node (the first release's list dropped 39% of a
// real directory's users: fish, nologin). A user whose shell is missing
// on a node resolves there and cannot log in, as with nologin.
var CommonShells = []string{
	"/bin/sh", "/usr/bin/sh", "/bin/bash", "/usr/bin/bash", "/bin/dash", "/usr/bin/dash",
	"/bin/zsh", "/usr/bin/zsh", "/usr/bin/fish", "/bin/fish", "/usr/local/bin/fish",
	"/bin/ksh", "/usr/bin/ksh", "/bin/tcsh", "/usr/bin/tcsh", "/bin/csh", "/usr/bin/csh",
}

// DefaultAllowedShells is the default allowed_shells: every shell in
// ShellsFile, the CommonShells and the nologin variants, without
// duplicates.
func DefaultAllowedShells() []string {
	var list []string
	if f, err := os.Open(ShellsFile); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") || !strings.HasPrefix(line, "/") || strings.ContainsAny(line, " \t") {
				continue
			}
			list = append(list, line)
		}
		f.Close()
	}
	list = append(list, CommonShells...)
	list = append(list, NologinShells...)
	seen := map[string]bool{}
	out := list[:0]
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
