/*
 * reader.h - the inside of the one reader of the scimbridge cache snapshot
 * (every c/ file but sqlite_private.c and sqlite_table.c), shared by its
 * parts; never installed.
 *
 * See include/scimcache.h for the contract. The parts are compiled into
 * every C module (with -fvisibility=hidden) and into syncd through cgo
 * (syncd/cache/reader.c includes them all), so syncd verifies each
 * snapshot with exactly the code the nodes run. The parts, by concern (as
 * SSSD splits its memory-cache client):
 *   common.c      handles: open, trust, map, replaced files, lock, fork
 *   config.c      reader.conf
 *   sql.c         SQLite opened lazily (and, in the NSS module, loaded
 *                 lazily: sqlite_api.h), schema checks, statements
 *   nssindex.c    the NSS index (passwd, group, initgroups without SQL)
 *   answer.c      keyed answers, their memo, walks
 *   passwd.c, group.c, initgroups.c   the NSS calls
 *   records.c     ssh keys, Slurm associations, meta (SQL only)
 *
 * Why it looks the way it does (measurements in /work/shared/notes/nss.md):
 *  - The file is opened with immutable=1: the writer never changes a live
 *    file, it renames a new one over it. SQLite then takes no locks and
 *    never looks for a hot journal, which made lookups about 3x faster.
 *    Because SQLite no longer notices changes, the reader stat()s the path
 *    and reopens when dev/inode/size/ctime differ (see same_file), at
 *    most once per
 *    CHECK_INTERVAL_NS per handle (a stat per lookup was a third of a hot
 *    lookup's cost): a long-running process sees a replaced snapshot
 *    within that interval, a new process always opens the current file,
 *    and scim_cache_check() checks at once. Without a usable file, every
 *    call stat()s the path (a missing file costs that stat), but a file
 *    that failed to open is retried at most once per CHECK_INTERVAL_NS
 *    while it stays the same file.
 *  - The file is also read through mmap (MMAP_SIZE): an immutable file
 *    cannot change under the mapping, and page reads become memory reads.
 *    But a page's first touch is a page fault (8-12 us in a VM, where
 *    pread() of the page is 1.5-2 us): the NSS index reads a 64 KiB
 *    window with pread the first time and maps it the second
 *    (nssindex.c, win_cold), so new and short-lived processes pay few
 *    faults and long-lived ones read in place.
 *  - A new process's first lookup makes the fewest system calls that keep
 *    every trust check (issue 22): reader.conf open/fstat/read/close; the
 *    snapshot opened with O_NOFOLLOW and checked on its descriptor's
 *    fstat (no stat-then-open window), its directory stat'ed; header and
 *    page 2 in one pread; the record's page in another. No futex (no
 *    pthread_once), no getpid, and no mmap until a window is read in
 *    place (snap_base). strace of getent passwd: 15 such calls before,
 *    9 now; SSSD's client opens, fstats and maps its cache file.
 *  - The reader opens and maps the file itself (open_db) and opens SQLite
 *    on it only when a call first needs SQL (sql_open: through the path,
 *    kept only if it is the same inode, else both are reopened): SQLite's
 *    initialisation and open were about 100 us of a new process's first
 *    lookup, which the NSS index answers without them.
 *  - NSS modules live inside arbitrary programs that fork while other
 *    threads are mid-lookup. Every SQLite call of the process is made under
 *    one lock (reader_mu), which the pthread_atfork handlers take before
 *    fork and re-initialise in the child; a handle that had SQLite open
 *    is marked stale so that the child reopens the file rather than
 *    using the parent's SQLite connection, and one that only read the
 *    NSS index keeps the parent's mapping (same immutable file). passwd, group and initgroups answers from the NSS
 *    index take no lock at all (common.c, "Readers that do not
 *    serialise"): threads do not wait for each other. The modules link a private, single-threaded SQLite
 *    (c/sqlite_private.c): this lock is the only thing serialising it, and
 *    no SQLite mutex of the host program is ever ours to inherit.
 *  - passwd, group and initgroups by name and id come from the NSS index
 *    (syncd/snapshot/index.go): hash-bucketed records in one blob that the
 *    reader finds from the SQLite file format (page 2) and reads through
 *    its own mapping of the file (or pread: win_cold), with no SQL: a
 *    random key is one bucket chunk and one record (0.6-1 us against
 *    2-2.4 us for B-tree descents), and a new process's first lookup
 *    parses no schema.
 *  - The first lookup in a process is most of what short-lived processes
 *    (id, ls -l, sshd children, Slurm steps) pay: opening checks what
 *    costs O(1) (the SQLite header, read once, holds the page count,
 *    application_id and user_version; the index's place and header), and
 *    SQL is made ready (tables and meta.schema_version checked, the read
 *    transaction begun) only by the first call that needs it; each
 *    statement is prepared when a call first needs it.
 *    scim_cache_check() (syncd's verification) prepares them all. No getpid() per lookup (a syscall since glibc
 *    2.25): the pid is compared only at the periodic check, for children
 *    made without the atfork handlers (_Fork, raw clone).
 *  - Anything wrong with the file (missing, empty, not SQLite, truncated,
 *    corrupt, other schema) is SCIM_UNAVAIL, never a crash and never a
 *    wrong answer: NSS then falls through to the next source.
 */
#ifndef SCIM_READER_H
#define SCIM_READER_H

#include "scimcache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

/* libnss_scim.so.2 carries no SQLite: it calls the private one it loads
 * on its first SQL call (sql.c, sqlite_load) through a table
 * (sqlite_api.h says why). Every SQLite call of the reader is made under
 * reader_mu after sqlite_load() succeeded (the load itself, a dlopen,
 * is made with reader_mu let go: sql.c says why): a call needs a
 * connection or a statement, which only sql_open and prepare make, after
 * loading. The
 * calls that the reader makes on a statement that may be NULL (stmt()
 * failed, e.g. because SQLite could not be loaded) do what SQLite does
 * with NULL: nothing. */
#ifdef SCIM_SQLITE_DLOPEN
#include "sqlite_api.h"
extern const struct scim_sqlite_api *scim_sqlite;
#define sqlite3_initialize(...) scim_sqlite->initialize(__VA_ARGS__)
#define sqlite3_open_v2(...) scim_sqlite->open_v2(__VA_ARGS__)
#define sqlite3_close_v2(...) scim_sqlite->close_v2(__VA_ARGS__)
#define sqlite3_errmsg(...) scim_sqlite->errmsg(__VA_ARGS__)
#define sqlite3_errstr(...) scim_sqlite->errstr(__VA_ARGS__)
#define sqlite3_db_config(...) scim_sqlite->db_config(__VA_ARGS__)
#define sqlite3_file_control(...) scim_sqlite->file_control(__VA_ARGS__)
#define sqlite3_progress_handler(...) scim_sqlite->progress_handler(__VA_ARGS__)
#define sqlite3_exec(...) scim_sqlite->exec(__VA_ARGS__)
#define sqlite3_prepare_v2(...) scim_sqlite->prepare_v2(__VA_ARGS__)
#define sqlite3_prepare_v3(...) scim_sqlite->prepare_v3(__VA_ARGS__)
#define sqlite3_step(...) scim_sqlite->step(__VA_ARGS__)
#define sqlite3_reset(st) ((st) ? scim_sqlite->reset(st) : SQLITE_OK)
#define sqlite3_clear_bindings(st) ((st) ? scim_sqlite->clear_bindings(st) : SQLITE_OK)
#define sqlite3_finalize(st) ((st) ? scim_sqlite->finalize(st) : SQLITE_OK)
#define sqlite3_bind_text(st, ...) ((st) ? scim_sqlite->bind_text((st), __VA_ARGS__) : SQLITE_MISUSE)
#define sqlite3_bind_int64(st, ...) ((st) ? scim_sqlite->bind_int64((st), __VA_ARGS__) : SQLITE_MISUSE)
#define sqlite3_column_int(...) scim_sqlite->column_int(__VA_ARGS__)
#define sqlite3_column_int64(...) scim_sqlite->column_int64(__VA_ARGS__)
#define sqlite3_column_text(...) scim_sqlite->column_text(__VA_ARGS__)
#define sqlite3_column_type(...) scim_sqlite->column_type(__VA_ARGS__)
#endif

/* PRAGMA application_id of a snapshot, as syncd/snapshot/schema.sql sets
 * it: 0x5343494D, "SCIM" in ASCII. (Unreleased snapshots before this had
 * 1396919629 = 0x53434D4D by mistake; this reader refuses them.) */
#define SCIM_APPLICATION_ID 0x5343494D

/* pw_passwd and gr_passwd of every entry: "*", as sssd answers, not "x".
 * SCIM accounts have no password and no shadow/gshadow entry; "x" means
 * "see shadow", and pam_unix's account check then fails with
 * PAM_AUTHINFO_UNAVAIL for lack of one, which locked SCIM users out of
 * every stack including Debian's common-account (su, cron, sshd). "*"
 * matches no password (no password login, no newgrp by password) and
 * makes pam_unix's account check pass without a shadow lookup. */
#define PW_PASSWD "*"

/* How often a handle re-stat()s its path to notice a replaced snapshot:
 * 1 s of CLOCK_MONOTONIC_COARSE (a vDSO read, no syscall). syncd publishes
 * at most every few seconds, and NSS answers already lag the identity
 * provider by a sync interval; a second more for long-running processes
 * (sshd, slurmd, nscd-less daemons) buys lookups without a syscall. */
#define CHECK_INTERVAL_NS 1000000000LL

/* Upper bound of SQLite's memory map of the snapshot (PRAGMA mmap_size).
 * Address space, not memory: only the pages read become resident, and
 * they are the page cache's, shared by every process. A larger file is
 * read through SQLite's page cache beyond this size. */
#define MMAP_SIZE (256LL << 20)

/* The reader's own mapping of the whole file, for the NSS index (address
 * space, not memory): a larger file has no index path and is read
 * through SQL. */
#define IX_MAP_MAX (1LL << 31)
/* Bytes of a snapshot read at its open: the SQLite header and page 2
 * (the NSS index's start) of a file of 4 KiB pages, in one pread. */
#define HEAD_READ 8192
/* The alignment of a snapshot's mapping: the kernel's fault-around block
 * (64 KiB), one window of nssindex.c's. */
#define MAP_ALIGN 65536

/* Upper bound on SQLite VM instructions per call. Honest snapshots need a
 * few thousand per lookup; the bound only stops a hostile or corrupt file
 * from turning a lookup into a hang inside a login. */
#define PROGRESS_PERIOD 10000
#define PROGRESS_LIMIT 5000 /* x PROGRESS_PERIOD = 50M instructions */

enum stmt_id {
	ST_PW_NAM,
	ST_PW_UID,
	ST_PW_NEXT,
	ST_ACTIVE,
	ST_GR_NAM,
	ST_GR_GID,
	ST_GR_NEXT,
	ST_USER_EXISTS,
	ST_USER_GROUPS,
	ST_IN_GROUP,
	ST_KEYS,
	ST_ASSOC_COUNT,
	ST_ASSOC_NEXT,
	ST_META,
	ST_COUNT
};

_Static_assert(ST_COUNT <= 32, "end() tracks statements in an unsigned mask");

/* Names and ids the reader never answers for (see ID_OK). */
static inline int reserved_name(const char *name)
{
	return strcmp(name, "root") == 0;
}

/* The NSS index (schema.sql, table nss_index; layout in
 * syncd/snapshot/index.go): one blob in the row of the table whose root is
 * page 2, read straight from the file's mapping. Its first bytes sit in
 * page 2's cell (local), the rest in overflow pages that the writer lays
 * out one after another, each starting with the number of the next. */
struct nss_index {
	int ok;
	uint32_t len;        /* bytes of the blob */
	uint32_t local;      /* blob bytes stored in page 2 */
	unsigned char *local_copy; /* those bytes, read at open */
	uint32_t first;      /* first overflow page (1-based), 0: none */
	uint32_t npages;     /* overflow pages */
	uint32_t page;       /* page size */
	uint32_t chunk;      /* blob bytes per overflow page (usable - 4) */
	uint64_t cmul;       /* 2^48 / chunk + 1: q / chunk as a multiply */
	uint64_t seed;
	uint32_t version; /* meta.schema_version the writer recorded */
	uint32_t csize, cbase; /* bucket chunks: size, blob offset of chunk 0 */
	uint32_t nparts; /* 4; 5 from schema version 3 (member pieces) */
	uint32_t kfirst[5], kmask[5]; /* per ix_kind: first chunk, buckets - 1 */
	unsigned char *seen; /* overflow pages whose link was checked */
};

/* A memo (answer.c): the last keyed passwd/group answer, and the last
 * SCIM_ERANGE, of the snapshot gen (0: none). */
struct memo {
	uint64_t gen;
	size_t need;         /* ERANGE: certain below this size */
	int need_id;
	int64_t need_key;
	char need_name[256];
	int id;              /* statement of the answer, -1: none */
	int64_t key;
	char name[256];
	uint32_t xid, gid, off[5];
	size_t slen, n;
	char *blob;
	size_t cap;
	unsigned uses; /* lookups that wanted blob as their page (memo_page) */
};

struct scim_cache {
	char *path;
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
	pid_t pid;     /* process that opened db (0: not recorded yet) */
	int stale;     /* set in a forked child or after an SQLite error */
	struct stat id; /* stat() of the path taken just before the open */
	int64_t checked; /* coarse monotonic ns of the last identity check */
	struct stat bad; /* stat() of the file whose open failed last */
	int64_t bad_at;  /* coarse monotonic ns of that failure */
	int has_bad;     /* bad and bad_at are set */
	int64_t root_gid; /* gid of a group named root, -1 none, -2 not read yet */
	uint32_t min_id; /* floor of every uid and gid answered (reader.conf) */
	char conf_err[200]; /* why reader.conf is unusable; "" when it is fine */
	struct timespec mtime; /* mtime of the file at the path, last check */
	char logged[256]; /* the last refusal sent to syslog (once, not per call) */
	/* What the last fill under the lock reported (fill_*, finish_gr):
	 * the buffer size below which SCIM_ERANGE is certain (0: none). */
	size_t memo_need;
	/* The memo of the locked path (answer.c). */
	struct memo memo;
	size_t fill_len; /* bytes of strings the last fill wrote (fill_*) */
	unsigned used;  /* statements used by the current call (bit per id) */
	unsigned progress; /* progress-handler ticks in the current call */
	char err[256];
	struct scim_cache *next; /* every live handle, for the fork handlers */
	/* SQL state is made ready (mmap pragma, table and schema_version
	 * checks, the read transaction) on the first call that needs SQL;
	 * NSS lookups answered from the index never do (see ix). */
	int sql_ok;
	int fd;              /* the open snapshot, -1 when none */
	int64_t size;        /* bytes of the file */
	struct snap *snap;   /* its mapping and NSS index; NULL when none */
	/* Lock-free lookups (common.c, "Readers that do not serialise"):
	 * live is snap while its index may answer without the lock (NULL:
	 * take the lock); a reader holds it by counting itself in its CPU's
	 * stripe; close_db retires snap and unmaps retired ones once every
	 * stripe reads 0. checked (above) is read by them atomically. */
	struct snap *live;
	struct snap *retired;
	struct stripe *stripes; /* STRIPES of them, cache-line aligned */
};

/* One opened snapshot file: its mapping and NSS index, as the lookups
 * read it. Filled by open_db under the lock, then only read (but for
 * the index's seen bits and root_gid, both set atomically and
 * idempotently, and base, published once by compare-and-swap), and unmapped only when no reader can hold it. */
struct snap {
	/* The whole file, mapped when a lookup first reads it in place
	 * (snap_base, nssindex.c): NULL until then (atomic). */
	const unsigned char *base;
	void *map_res;       /* the reservation base lies in (munmap'd whole) */
	int mappable;        /* small enough to map (IX_MAP_MAX) */
	int64_t size;        /* bytes of the file */
	uint64_t gen;        /* unique per open in this process (keys memos) */
	int64_t root_gid;    /* index: gid of a group named root, -1 none,
	                        -2 not read yet (atomic) */
	struct nss_index ix; /* the NSS index, when ix.ok */
	struct snap *next;   /* retired list */
	int fd;              /* the file, open until the snapshot is freed */
	/* Per 64 KiB window of the file (nssindex.c, "first touches read,
	 * later ones map"; the mapping is 64 KiB-aligned, so a window of the
	 * file is one of the kernel's fault-around blocks): the times it was
	 * read, up to WIN_MAPPED, in the low WIN_BITS, tagged with the
	 * fork_gen it was counted in (win_cold). */
	unsigned char *win;
	uint32_t nwin;
	/* The open's buffer of the header and page 2 (HEAD_READ bytes,
	 * page-aligned, its pages written by that read): the page buffer of
	 * the first memo that wants one (answer.c, memo_page; taken
	 * atomically), else freed with the snapshot. */
	unsigned char *spare;
};

/* A window is read with pread by the first WIN_MAPPED - 1 calls that
 * need it and mapped by the next one. */
enum { WIN_NEW = 0, WIN_MAPPED = 4, WIN_BITS = 3 };

/* Pages of the file one index read may hold in memory of its own. */
#define IXQ_PAGES 4
/* Bytes of the page buffer a lookup may be lent (struct ixq, own). */
#define IX_OWN 4096

/* One read of the NSS index (nssindex.c): the snapshot, the floor, and
 * what the read reports back (the handle is not written by it, so reads
 * can run on many threads at once). */
struct ixq {
	struct snap *s;
	uint32_t min_id;
	size_t memo_need;    /* SCIM_ERANGE: certain below this size; 0 none */
	size_t fill_len;     /* bytes of strings the fill wrote */
	int damaged;         /* the index did not read back */
	int npb;             /* pages read into pb (ix_done frees them) */
	unsigned char *own;  /* NULL, or IX_OWN bytes lent for one page */
	int own_used;        /* a page was read into own */
	uint32_t pi[IXQ_PAGES]; /* their overflow page numbers */
	uint32_t pw[IXQ_PAGES]; /* and windows (win_cold) */
	unsigned char *pb[IXQ_PAGES];
};


/* A cache line, and n rounded up to whole lines (aligned_alloc's size
 * must be a multiple of the alignment). */
#define LINE 64
static inline size_t line_round(size_t n)
{
	return (n + LINE - 1) & ~(size_t)(LINE - 1);
}

/* Per CPU (modulo STRIPES), on its own cache line: the lookups in flight
 * that hold c->live, and the stripe's memo with its trylock. */
#define STRIPES 64
struct stripe {
	unsigned readers;
	int busy;
	struct memo *memo;
} __attribute__((aligned(64)));

static inline int reserved_floor(uint32_t min_id, uint32_t id)
{
	return id < min_id || id == UINT32_MAX;
}

static inline int reserved_id(const struct scim_cache *c, uint32_t id)
{
	return reserved_floor(c ? c->min_id : 1, id);
}

/* A user's supplementary gids as scim_user_groups answers them, from
 * user_groups' text (parse_gids) or the index (ix_user_groups): ids the
 * reader never answers and a group named root are left out; at most max
 * are stored, all are counted; the writer's ascending order is checked
 * and restored when the list fits. */
struct gid_list {
	gid_t *gids;
	size_t max, n;
	int unsorted;
	uint32_t prev;
	uint32_t min_id;     /* the floor (reserved_floor) */
	int64_t root_gid;    /* a group named root: left out; -1 none */
};

static inline uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* CLOCK_MONOTONIC_COARSE in ns (vDSO: no syscall); -1 if unavailable,
 * which makes every call check. */
static inline int64_t coarse_now(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Bump allocator over the caller's buffer. */
struct arena {
	char *buf;
	size_t len, used;
};

static inline char *arena_str(struct arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	if (n > a->len - a->used)
		return NULL;
	char *p = a->buf + a->used;
	memcpy(p, s, n);
	a->used += n;
	return p;
}

/* Copies the one row of a passwd or group statement into ent (struct
 * passwd or struct group, by fill) and caller memory; the key is name, or
 * key when name is NULL. *id_out gets the row's uid/gid. */
typedef int (*fill_fn)(struct scim_cache *c, sqlite3_stmt *st, void *ent,
		       char *buf, size_t buflen, uint32_t *id_out);

/* reader.conf as read (config.c). */
struct reader_conf {
	char path[4096];
	uint32_t min_id;
	char err[200]; /* "" when the file is fine or absent */
};

/* The one lock of the reader (common.c says what it covers). */
extern pthread_mutex_t reader_mu;
/* Forks this process descends from, counted by the atfork child handler. */
extern unsigned fork_gen;

/* Shared by the parts (hidden in the modules: -fvisibility=hidden). */

/* common.c */
struct snap *enter_ix(struct scim_cache *c, struct stripe **st, int *status);
void leave(struct stripe *st);
int ix_damaged(struct scim_cache *c);
int ix_damaged_at(struct scim_cache *c, struct snap *s);
void mark_stale(struct scim_cache *c);
int absent(struct scim_cache *c);
int begin(struct scim_cache *c);
void close_db(struct scim_cache *c);
void end(struct scim_cache *c);
int ensure_open(struct scim_cache *c, int force);
int open_db(struct scim_cache *c);
int root_only(const struct stat *st);
int same_file(const struct stat *a, const struct stat *b);
void set_err(struct scim_cache *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* config.c */
int read_conf(struct reader_conf *rc);

/* sql.c */
int col_id(struct scim_cache *c, sqlite3_stmt *st, int i, uint32_t *id);
const char *col_text(sqlite3_stmt *st, int i);
int prepare(struct scim_cache *c, enum stmt_id id);
int64_t query_int(sqlite3 *db, const char *sql);
int sql_ready(struct scim_cache *c);
int step(struct scim_cache *c, sqlite3_stmt *st);
int step_one(struct scim_cache *c, sqlite3_stmt *st);
sqlite3_stmt *stmt(struct scim_cache *c, enum stmt_id id);

/* nssindex.c */
int ix_check_all(struct scim_cache *c);
int ix_in_group(struct ixq *q, const char *user,
		       const char *group);
int ix_lookup(struct ixq *q, enum stmt_id id, const char *name,
		     int64_t key, void *ent, char *buf, size_t buflen,
		     uint32_t *id_out);
void ix_open(struct snap *s, const unsigned char *head, size_t nhead);
void ix_done(struct ixq *q);
int64_t ix_root_gid(struct ixq *q);
int ix_user_active(struct ixq *q, const char *name, int *active);
int ix_user_groups(struct ixq *q, const char *user, gid_t *gids,
			  size_t max, size_t *count);

/* answer.c */
int row_query(struct scim_cache *c, enum stmt_id id, const char *name,
		     int64_t key, fill_fn fill, void *ent, char *buf,
		     size_t buflen, uint32_t *id_out);
int walk(struct scim_cache *c, enum stmt_id id, fill_fn fill,
		void *ent, int64_t *pos, char *buf, size_t buflen);

/* group.c */
int finish_gr(size_t *memo_need, size_t *fill_len, struct arena *a, char *name,
		     char *passwd, char *list, uint32_t gid, struct group *gr,
		     uint32_t *gid_out);

/* initgroups.c */
void gid_done(struct gid_list *l);
void gid_keep(struct gid_list *l, uint32_t gid);
int parse_gids(struct scim_cache *c, const char *s, gid_t *gids,
		      size_t max, size_t *count);

#endif /* SCIM_READER_H */
