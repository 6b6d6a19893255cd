package configcheck

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/scimbridge/scimbridge/syncd/config"
	"github.com/scimbridge/scimbridge/syncd/source/scim"
	"github.com/scimbridge/scimbridge/syncd/validate"
)

// checkFirstPage validates the first page of users (and of groups) the
// probe read with the site's rules, as the read will, and reports the
// most common rejection with the option that fixes it (issue 20: 1,908 of
// 1,999 users were rejected while check-config --online said ok). It
// returns how many errors it printed: a rejection of most of the sample
// is an error, of 10% or more a warning, fewer a note.
func checkFirstPage(w io.Writer, cfg *config.Config, rep *scim.ProbeReport) int {
	if rep == nil || rep.FirstPage == nil || len(rep.FirstPage.Users) == 0 {
		return 0
	}
	local, err := validate.ReadLocal(cfg.LocalPasswd, cfg.LocalGroup)
	if err != nil {
		fmt.Fprintf(w, "error: local_passwd/local_group: %v\n", err)
		return 1
	}
	res := validate.Directory(rep.FirstPage, firstPageOptions(cfg, local))
	n := len(rep.FirstPage.Users)
	rejected := map[string]int{}
	example := map[string]validate.Rejection{}
	for _, r := range res.Rejections {
		if r.Kind != validate.KindUser && r.Kind != validate.KindGroup {
			continue
		}
		rejected[r.Reason]++
		if _, ok := example[r.Reason]; !ok {
			example[r.Reason] = r
		}
	}
	fmt.Fprintf(w, "first page: %d users, %d groups: %d users published, %d not in posix_groups, %d records rejected\n",
		n, len(rep.FirstPage.Groups), len(res.Contents.Users), res.Filtered, sum(rejected))
	if len(rejected) == 0 {
		return 0
	}
	reasons := make([]string, 0, len(rejected))
	for r := range rejected {
		reasons = append(reasons, r)
	}
	slices.SortFunc(reasons, func(a, b string) int { return cmp.Or(cmp.Compare(rejected[b], rejected[a]), cmp.Compare(a, b)) })
	top := reasons[0]
	ex := example[top]
	kind := "warning"
	if 10*rejected[top] < n {
		kind = "note" // a few users without POSIX attributes are normal
	}
	if 2*rejected[top] > n && !(top == validate.PrimaryGIDUnpublished && !rep.GroupsComplete) {
		kind = "error"
	}
	fmt.Fprintf(w, "%s: %s: most common rejection on the first page: %s (%d of %d users), for example %s\n",
		kind, cmp.Or(ex.Option, validate.OptionFor(top)), top, rejected[top], n, ex)
	if top == validate.PrimaryGIDUnpublished && !rep.GroupsComplete {
		fmt.Fprintf(w, "  (only the first page of groups was read: a later page may publish these gids)\n")
	}
	if kind == "error" {
		return 1
	}
	return 0
}

func sum(m map[string]int) int {
	t := 0
	for _, v := range m {
		t += v
	}
	return t
}

// firstPageOptions are the validation rules of cfg, as a read applies
// them, without a live snapshot.
func firstPageOptions(cfg *config.Config, local *validate.Local) validate.Options {
	return validate.Options{
		UIDMin: cfg.UIDMin, UIDMax: cfg.UIDMax, GIDMin: cfg.GIDMin, GIDMax: cfg.GIDMax,
		HomeTemplate: cfg.HomeTemplate, DefaultShell: cfg.DefaultShell,
		AllowedShells: cfg.AllowedShells, PosixGroups: cfg.PosixGroups,
		UserNameDomains: cfg.UserNameDomains, UserNames: cfg.UserNames.Users(), PrivateGroups: cfg.PrivateGroups, Local: local,
		MinID: cfg.MinID, SharedPrimaryGIDs: cfg.SharedPrimaryGIDs,
		ReservedNames: cfg.ReservedNames, HomeRoots: cfg.HomeRoots,
		Protected: cfg.ProtectedPaths(), GroupNames: cfg.GroupNames.Policy(),
	}
}
