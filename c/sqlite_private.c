/*
 * sqlite_private.c - the SQLite that the C modules carry inside them.
 *
 * pam_scim.so, spank_scim.so (and the test tools that stand for them)
 * link this one object instead of the system libsqlite3; libnss_scim.so.2
 * loads it on its first SQL call, as libscimbridge-sqlite.so (this object
 * and c/sqlite_table.c; c/sqlite_api.h says why).
 * Why (issue 10): NSS/PAM/SPANK modules run inside other programs. With a
 * shared libsqlite3, a host program that uses SQLite itself in another
 * thread can hold one of libsqlite3's global mutexes at the moment it
 * forks; the child then deadlocked on its first user lookup (20 of 20
 * children in sqlite3_free <- sqlite3_finalize <- close_db). The reader's
 * pthread_atfork handlers cover its own lock, not the host's SQLite. And a
 * shared library is configured by whoever uses it first (sqlite3_config,
 * custom allocators, another version loaded earlier).
 *
 * So this copy:
 *  - is compiled with -fvisibility=hidden and linked under a version
 *    script that exports only the module's entry points: nothing in the
 *    host can bind to it, and it binds to nothing of the host's SQLite;
 *  - is single-threaded (SQLITE_THREADSAFE=0: it has no mutexes at all).
 *    The reader (c/, see c/reader.h) makes every SQLite call of a process while
 *    holding its one process-wide lock, which its atfork handlers take
 *    before fork and re-initialise in the child: no SQLite state is ever
 *    mid-change in a child, and there is no SQLite lock to inherit;
 *  - leaves out what a read-only reader of an immutable file never uses.
 *    Only options that SQLite documents as safe for the amalgamation are
 *    used (no parser-changing OMITs). Limits that protect against a hostile
 *    file (expression depth, lengths, column count) keep their defaults.
 *
 * The amalgamation is the one that go-sqlite3 (already in go.mod) ships
 * as sqlite3-binding.c/.h; the Makefile copies it to $(BUILD)/sqlite as
 * sqlite3.c/sqlite3.h (or takes SQLITE_AMALGAMATION=DIR holding either
 * pair, e.g. unpacked from Debian's sqlite3 source package). The Go side
 * (syncd, through syncd/cache) keeps the system libsqlite3 and compiles
 * the same reader against it.
 */

/* No mutexes: the reader serialises every SQLite call (see above). */
#define SQLITE_THREADSAFE 0
/* No sqlite3_initialize() check on each API call; the reader calls it. */
#define SQLITE_OMIT_AUTOINIT 1
/* No memory statistics: malloc without a global counter. */
#define SQLITE_DEFAULT_MEMSTATUS 0
/* Temporary tables and sorts in memory, never a temp file (the reader's
 * queries read indexes in order; nothing may touch the disk). */
#define SQLITE_TEMP_STORE 3
/* No page-cache slab allocated up front: pages come from the mmap. */
#define SQLITE_DEFAULT_PCACHE_INITSZ 0
/* Features a reader of a file it never writes does not need. */
#define SQLITE_OMIT_LOAD_EXTENSION 1
#define SQLITE_OMIT_SHARED_CACHE 1
#define SQLITE_OMIT_DEPRECATED 1
#define SQLITE_OMIT_DECLTYPE 1
#define SQLITE_OMIT_JSON 1
#define SQLITE_DQS 0
#define SQLITE_LIKE_DOESNT_MATCH_BLOBS 1
#define SQLITE_USE_ALLOCA 1

#include "sqlite3.c"
