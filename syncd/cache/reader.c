/*
 * reader.c - the C reader (c/, behind include/scimcache.h) for cgo: cgo
 * compiles only the .c files of this directory, so this one includes
 * every part of the reader as one translation unit. syncd verifies each
 * snapshot through exactly the code the modules compile (Makefile's
 * READER_SRC lists the same parts).
 *
 * Go's build cache hashes this file, not the ones it includes: a change
 * under c/ alone is not rebuilt by a plain `go build`/`go test` (make adds
 * a digest of c/ to CGO_CFLAGS for that). Reads snapshot schema 2 and 3.
 */
#include "../../c/common.c"
#include "../../c/config.c"
#include "../../c/sql.c"
#include "../../c/nssindex.c"
#include "../../c/answer.c"
#include "../../c/passwd.c"
#include "../../c/group.c"
#include "../../c/initgroups.c"
#include "../../c/records.c"
#include "../../c/localgroup.c"
