package main

import (
	"strings"
)

// parseQuota reads `quota -w -s -u NAME` (linuxquota). none is true when
// quota says the user has no quota anywhere. The layout is
//
//	Disk quotas for user alice (uid 10001):
//	     Filesystem   space   quota   limit   grace   files   quota   limit   grace
//	      /dev/sda1   1024M*  1000M   2000M   6days     120       0       0
//
// where a grace column is present only after a usage over its soft
// limit, which quota marks with '*'.
func parseQuota(out string) (qs []Quota, none bool, skipped int) {
	for _, line := range lines(out) {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "Disk quotas for"):
			if strings.HasSuffix(t, "none") {
				none = true
			}
			continue
		case strings.HasPrefix(t, "Filesystem"):
			continue
		}
		f := strings.Fields(t)
		if len(f) < 7 {
			skipped++
			continue
		}
		q := Quota{Filesystem: f[0]}
		i := 1
		q.Used, q.OverSoft = strings.CutSuffix(f[i], "*")
		if len(f) < i+3 {
			skipped++
			continue
		}
		q.Soft, q.Hard = f[i+1], f[i+2]
		i += 3
		if q.OverSoft && len(f) > i && !isNumberish(f[i]) {
			q.Grace = f[i]
			i++
		}
		if len(f) < i+3 {
			skipped++
			continue
		}
		q.Files, q.FilesOver = strings.CutSuffix(f[i], "*")
		q.FilesSoft, q.FilesHard = f[i+1], f[i+2]
		i += 3
		if q.FilesOver && len(f) > i {
			q.FilesGrace = f[i]
		}
		qs = append(qs, q)
	}
	return qs, none, skipped
}

// isNumberish is true for a size or count ("1024", "1000M", "2T"), false
// for a grace time ("6days", "none", "13:45").
func isNumberish(s string) bool {
	if s == "" {
		return false
	}
	s = strings.TrimRight(s, "KMGTPkmgtp")
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
