package snapshot

// Stage, when set, is called at the points of a whole write where its
// memory peaks (issue 18: the peak RSS of a full sync is the write's):
// "read", "validated" and "recorded" (a full read's directory, its
// validation, then sync --once's explain record built and encoded, before
// the write; called by the pipeline; "compared": sync --once into a live
// cache, after its row-by-row comparison with the live snapshot or the
// whole load that follows a difference), "rows" (the tables' rows committed), "index-planned" (the NSS index
// laid out, its records live, before its bytes go to the file),
// "verify-users", "verify-groups" and "verify-index" (the C reader's
// mapping after each pass of the verification); for the wall time's
// split (Dec 3) also "diffed" (the diff and policy, before the write),
// "encoded" (sync --once's explain record, on its own goroutine),
// "built" (the file's rows and index), "fsynced", "verified",
// "installed" and "record-stored". syncd sets it
// under SYNCD_PPROF to write a heap profile and the process's memory at
// each (syncd/pprof.go), and under SYNCD_STAGES to note the wall and CPU
// time at each; nil otherwise, and then it costs one test.
var Stage func(name string)

// MarkStage calls Stage with name when it is set.
func MarkStage(name string) {
	if Stage != nil {
		Stage(name)
	}
}
