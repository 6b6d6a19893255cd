package mirror

// Decisions about where the node's daemon lives (the package comment is
// in mirror.go):
//
//   - A node's `syncd run` is Daemon (daemon.go), not package main's
//     (issue 18, item 6): the loop (poll, jitter, SIGHUP reload), its
//     metrics (the signature's age is computed at each scrape, so a node
//     whose polls hang or whose loop stopped ages all the same) and
//     `check-config --online` (CheckOnline) sit beside the Node they
//     drive. Package main keeps flags, the logger and the exit codes
//     (mirror --once exits 3 on a Refusal).
//   - What else runs on a node (a storage node's homes pass) is handed in
//     as Daemon.Beside (schedule.Task), so this package does not import
//     syncd/homes.
//   - A SIGHUP builds a new Node from the new file before it replaces the
//     old one: a broken config is logged and the old Node keeps polling.
