// Package pipeline is syncd's one path from an identity source to a
// committed snapshot: read -> validate -> policy -> write -> verify
// (Syncer.Once), and the polling loop that drives it (Daemon). The
// push receiver (syncd receive) drives the same Syncer; package main
// only wires commands, the config and the publishing head to it.
//
// Decisions:
//
//   - One Syncer for poll and push: a directory from a SCIM server and
//     one from the receiver's store pass the same validation, policy,
//     writer and verification, so neither path can publish what the
//     other would refuse.
//   - Steps after a commit (the Slurm reconciler) register in
//     AfterCommit from package main, so this package does not import
//     what it does not need; publishing after a poll is the Daemon's
//     AfterPoll, set by main (cmd_cluster.go owns the publisher).
//   - A rollback's pin (pin.go) is honoured here: a pinned snapshot is
//     never replaced by a poll, and `syncd resume` removes the pin.
//   - Errors that ask for an exit status (a refused commit: 3) are
//     ExitError; main turns them into the process's exit status.
package pipeline
