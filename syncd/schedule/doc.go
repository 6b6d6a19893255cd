// Package schedule is the loop a daemon pass runs on its own schedule
// beside `syncd run`'s polls (the Slurm, the Kubernetes and the homes
// passes, started by package main for the daemon's life).
//
// Decisions:
//
//   - Own schedule, not the poll's: a slow or down identity source never
//     stalls a pass (blocked Slurm removals finish once jobs end, drift in
//     Kubernetes is undone, a failed pass is retried) and a hung pass never
//     stalls a poll: each loop is its own goroutine.
//   - Each turn re-reads the configuration file: a pass enabled, disabled
//     or given another interval takes effect without a restart; a broken
//     file is logged and the last good config kept.
//   - A pass that began less than an interval ago (after a commit: the
//     caller stores its start in last) is not run again: the loop and the
//     after-commit step share one clock.
//   - Watch (the homes pass): between its intervals the pass also runs as
//     soon as changed says its input changed, asked every 5 s, because on
//     a mirror node no commit step starts it. The config is re-read only
//     on the turns that may run the pass.
package schedule
