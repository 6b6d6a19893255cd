// Package configcheck is what `syncd check-config` checks beyond the
// config file's own decoding (config.Load): the tables other packages
// decode ([slurm], [kubernetes], [homes]), the host's role, and with
// --online what the SCIM server answers (its discovery, timing, and the
// first page validated with the site's rules).
//
// Decisions:
//
//   - One run reports every problem it can: each table is checked with
//     its own package's rules, each error printed line by line with the
//     table named, before the run fails.
//   - Roles (roles.go): a host whose plugstack.conf loads spank_scim.so
//     with neither [slurm] nor [mirror] is an error (its snapshot can
//     never hold associations: every job would be refused), and the
//     example's placeholder base_url a warning; both say the lines to use.
//     What this host loads decides, so the example passes as shipped.
//   - The first page of users is validated as the read will (firstpage.go,
//     issue 20): a rejection of most of the sample is an error, of 10% or
//     more a warning, fewer a note, each with the option that fixes it.
//   - Package main keeps the flags, loading the config (its errors are
//     printed there, one per line), the receiver's and the mirror's
//     online checks (syncd/mirror.CheckOnline) and the client's
//     construction (issue 18, item 6).
package configcheck
