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
//   - A poll that finds the manifest naming the live snapshot costs no
//     pass over the live file (issue 18): its SHA-256, serial and counts
//     are kept with its identity (device, inode, size, ctime), in memory
//     for the daemon and in <cache_path>.mirror.json for the next process
//     (`syncd mirror --once` from a timer, a restart). The ctime moves
//     with any write, link or chmod of the inode and cannot be set back
//     from user space, so the same identity is the same bytes; on a file
//     system with whole-second ctimes, or under another syncd version,
//     the file is hashed and opened through the C reader as before. At
//     100,000 users that pass was an 80 MB SHA-256 plus the C reader's
//     walk of the NSS index on every poll of a new process, and the index
//     walk on every poll of the daemon.
