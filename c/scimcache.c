/*
 * scimcache.c - the one reader of the scimbridge cache snapshot.
 *
 * See include/scimcache.h for the contract. This file is compiled into
 * every C module (with -fvisibility=hidden) and into syncd through cgo, so
 * syncd verifies each snapshot with exactly the code the nodes run.
 *
 * Why it looks the way it does (measurements in /work/shared/notes/nss.md):
 *  - The file is opened with immutable=1: the writer never changes a live
 *    file, it renames a new one over it. SQLite then takes no locks and
 *    never looks for a hot journal, which made lookups about 3x faster.
 *    Because SQLite no longer notices changes, the reader stat()s the path
 *    and reopens when dev/inode/size differ (not on a touch: see
 *    same_file), at most once per
 *    CHECK_INTERVAL_NS per handle (a stat per lookup was a third of a hot
 *    lookup's cost): a long-running process sees a replaced snapshot
 *    within that interval, a new process always opens the current file,
 *    and scim_cache_check() checks at once. Without a usable file, every
 *    call stat()s the path (a missing file costs that stat), but a file
 *    that failed to open is retried at most once per CHECK_INTERVAL_NS
 *    while it stays the same file.
 *  - The file is also read through mmap (MMAP_SIZE): an immutable file
 *    cannot change under the mapping, and page reads become memory reads.
 *  - The reader opens and maps the file itself (open_db) and opens SQLite
 *    on it only when a call first needs SQL (sql_open: through the path,
 *    kept only if it is the same inode, else both are reopened): SQLite's
 *    initialisation and open were about 100 us of a new process's first
 *    lookup, which the NSS index answers without them.
 *  - NSS modules live inside arbitrary programs that fork while other
 *    threads are mid-lookup. Every SQLite call of the process is made under
 *    one lock (reader_mu), which the pthread_atfork handlers take before
 *    fork and re-initialise in the child; they also mark every handle stale
 *    so that the child reopens the file rather than using the parent's
 *    SQLite connection. The modules link a private, single-threaded SQLite
 *    (c/sqlite_private.c): this lock is the only thing serialising it, and
 *    no SQLite mutex of the host program is ever ours to inherit.
 *  - passwd, group and initgroups by name and id come from the NSS index
 *    (syncd/snapshot/index.go): hash-bucketed records in one blob that the
 *    reader finds from the SQLite file format (page 2) and reads through
 *    SQLite's own mapping of the file, with no SQL: a random key is one
 *    bucket chunk and one record (0.6-1 us against 2-2.4 us for B-tree
 *    descents), and a new process's first lookup parses no schema.
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
#include "scimcache.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

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

#define PW_COLS "name, uid, gid, gecos, home, shell"
/* Ids an answer may carry: never below the floor (min_id of reader.conf,
 * default SCIM_DEFAULT_MIN_ID; at least 1, so never root's uid and group)
 * nor 2^32-1 ((uid_t)-1, "no id" to chown and setreuid). syncd's
 * validation never writes such rows; the reader does not answer from them
 * either, so a damaged or hand-made snapshot cannot make anyone root, or a
 * member of a system group (27 sudo, 42 shadow, 6 disk), through NSS, PAM
 * or SPANK. Nor does it answer for the name "root". The floor is written
 * into each statement when it is prepared (%1$u: prepare()'s snprintf). */
#define ID_OK(col) col " BETWEEN %1$u AND 4294967294"
#define PW_OK ID_OK("uid") " AND " ID_OK("gid")
static const char *const stmt_sql[ST_COUNT] = {
	/* users_by_name covers every column read: one B-tree descent. */
	[ST_PW_NAM] = "SELECT " PW_COLS " FROM users INDEXED BY users_by_name "
		      "WHERE name = ?1 AND " PW_OK,
	[ST_PW_UID] = "SELECT " PW_COLS " FROM users WHERE uid = ?1 AND "
		      ID_OK("gid") " AND name <> 'root'",
	/* Walks: the key bound to ?1 must be the only range on the rowid.
	 * With ID_OK's BETWEEN beside it SQLite seeks to the constant bound
	 * and tests "> ?1" row by row, so each step scanned from the start
	 * (enumerating 100,000 users took 100 s). The caller binds at least
	 * 0, which keeps 0 out; 2^32-1 is excluded without a range. */
	[ST_PW_NEXT] = "SELECT " PW_COLS " FROM users WHERE uid > ?1 "
		       "AND uid <> 4294967295 AND " ID_OK("gid") " AND name <> 'root' "
		       "ORDER BY uid LIMIT 1",
	[ST_ACTIVE] = "SELECT active FROM users INDEXED BY users_by_name "
		      "WHERE name = ?1 AND " PW_OK,
	[ST_GR_NAM] = "SELECT gid, name, members FROM groups WHERE name = ?1 "
		      "AND " ID_OK("gid"),
	[ST_GR_GID] = "SELECT gid, name, members FROM groups WHERE gid = ?1 "
		      "AND name <> 'root'",
	[ST_GR_NEXT] = "SELECT gid, name, members FROM groups WHERE gid > ?1 "
		       "AND gid <> 4294967295 AND name <> 'root' ORDER BY gid "
		       "LIMIT 1",
	/* The narrow UNIQUE index (name, uid): users_by_name is wider and
	 * cost 0.5 us per getgrouplist of random users in cache misses. */
	[ST_USER_EXISTS] = "SELECT 1 FROM users WHERE name = ?1 AND " PW_OK,
	/* One descent of user_groups (schema version 2): the gids as text.
	 * Reserved gids (below the floor) and a group named root (root_gid)
	 * are skipped in C: in SQL, a subquery cost 2 us per getgrouplist. */
	[ST_USER_GROUPS] = "SELECT gids FROM user_groups WHERE name = ?1 AND "
			   PW_OK,
	[ST_IN_GROUP] = "SELECT 1 FROM memberships WHERE user_name = ?1 AND "
			"gid = (SELECT gid FROM groups WHERE name = ?2 AND "
			ID_OK("gid") ")",
	[ST_KEYS] = "SELECT key FROM ssh_keys WHERE user_name = ?1 ORDER BY seq",
	[ST_ASSOC_COUNT] = "SELECT count(*) FROM slurm_associations WHERE "
			   "user_name = ?1 AND blocked = 0 AND "
			   "(?2 IS NULL OR account = ?2)",
	[ST_ASSOC_NEXT] = "SELECT account, qos, default_qos, is_default, "
			  "blocked FROM slurm_associations WHERE "
			  "user_name = ?1 AND account > ?2 ORDER BY account "
			  "LIMIT 1",
	[ST_META] = "SELECT value FROM meta WHERE key = ?1",
};

static int cmp_gid(const void *a, const void *b)
{
	gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;
	return x < y ? -1 : x > y;
}

/* Names and ids the reader never answers for (see ID_OK). */
static int reserved_name(const char *name)
{
	return strcmp(name, "root") == 0;
}

static int reserved_id(const struct scim_cache *c, uint32_t id);
static int64_t coarse_now(void);

/* The tables a snapshot must have, as ordinary tables (not views or
 * virtual tables, whose reads could run arbitrary code). */
static const char *const required_tables[] = {
	"meta", "users", "groups", "memberships", "ssh_keys",
	"slurm_associations", "user_groups",
};

/* The NSS index (schema.sql, table nss_index; layout in
 * syncd/snapshot/index.go): one blob in the row of the table whose root is
 * page 2, read straight from the file's mapping. Its first bytes sit in
 * page 2's cell (local), the rest in overflow pages that the writer lays
 * out one after another, each starting with the number of the next. */
struct nss_index {
	int ok;
	uint32_t len;        /* bytes of the blob */
	int64_t local_at;    /* file offset of blob byte 0 (in page 2) */
	uint32_t local;      /* blob bytes stored in page 2 */
	uint32_t first;      /* first overflow page (1-based), 0: none */
	uint32_t npages;     /* overflow pages */
	uint32_t page;       /* page size */
	uint32_t chunk;      /* blob bytes per overflow page (usable - 4) */
	uint64_t cmul;       /* 2^48 / chunk + 1: q / chunk as a multiply */
	uint64_t seed;
	uint32_t version; /* meta.schema_version the writer recorded */
	uint32_t csize, cbase; /* bucket chunks: size, blob offset of chunk 0 */
	uint32_t kfirst[4], kmask[4]; /* per ix_kind: first chunk, buckets - 1 */
	unsigned char *seen; /* overflow pages whose link was checked */
	unsigned char *scratch; /* a chunk that does not sit in one page */
};

struct scim_cache {
	char *path;
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
	pid_t pid;     /* process that opened db */
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
	/* The last SCIM_ERANGE of row_query: statement, key (memo_name for
	 * names), and the buffer size below which it is certain; 0: none.
	 * Cleared when the file is closed. */
	size_t memo_need;
	int memo_id;
	int64_t memo_key;
	char memo_name[256];
	/* The last answer of a keyed passwd/group lookup (see ans_load). */
	struct {
		int id;        /* statement, -1: none */
		int64_t key;
		char name[256];
		uint32_t xid;  /* uid/gid */
		uint32_t gid;  /* passwd: primary gid */
		uint32_t off[5]; /* string offsets: passwd all five, group two */
		size_t slen;   /* bytes of strings */
		size_t n;      /* group: members (offsets after the strings) */
		char *blob;    /* slen bytes, then n uint32_t offsets */
		size_t cap;
	} ans;
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
	const unsigned char *base; /* the whole file, mapped; NULL if not */
	int64_t size;        /* bytes of the file */
	struct nss_index ix; /* the NSS index, when ix.ok */
};

/* The one lock of the reader: every call on every handle, the list of
 * handles, and so every SQLite call of this copy of the reader. The
 * modules' SQLite is built without mutexes (SQLITE_THREADSAFE=0,
 * c/sqlite_private.c), which is correct only because no two threads are
 * ever inside it at once: two handles on two threads would otherwise
 * share its globals (the unix VFS's inode list, the PRNG). Per-handle
 * locks bought nothing: NSS, PAM and SPANK each use one handle. */
static pthread_mutex_t reader_mu = PTHREAD_MUTEX_INITIALIZER;
static struct scim_cache *list_head; /* every handle, for fork_child */

static void fork_prepare(void)
{
	pthread_mutex_lock(&reader_mu);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&reader_mu);
}

/* The child has one thread; the lock it inherited was taken by
 * fork_prepare in the forking thread, so no SQLite call was half done.
 * Re-initialising (not unlocking) also clears any waiter state copied
 * from the parent. */
static void fork_child(void)
{
	pthread_mutex_init(&reader_mu, NULL);
	for (struct scim_cache *c = list_head; c; c = c->next)
		c->stale = 1;
}

/* Registered when the object is loaded, not on first use: a
 * pthread_once that registers is not fork-safe. A child forked after the
 * registration but before the once was marked done re-runs it, registers
 * the handlers twice, and its own next fork then deadlocks taking
 * reader_mu twice. Priority 101 runs this before the NSS module's
 * constructor (102), whose handlers must run their prepare step first. */
__attribute__((constructor(101))) static void register_atfork(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static int reserved_id(const struct scim_cache *c, uint32_t id)
{
	return id < (c ? c->min_id : 1) || id == UINT32_MAX;
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
};

static void gid_keep(const struct scim_cache *c, struct gid_list *l,
		     uint32_t gid)
{
	if (reserved_id(c, gid) || (int64_t)gid == c->root_gid)
		return;
	if (l->n < l->max)
		l->gids[l->n] = gid;
	if (l->n > 0 && gid < l->prev)
		l->unsorted = 1;
	l->prev = gid;
	l->n++;
}

static void gid_done(struct gid_list *l)
{
	if (l->unsorted && l->n <= l->max)
		qsort(l->gids, l->n, sizeof(*l->gids), cmp_gid);
}

static void set_err(struct scim_cache *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_err(struct scim_cache *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
}

static void close_db(struct scim_cache *c)
{
	for (int i = 0; i < ST_COUNT; i++) {
		sqlite3_finalize(c->st[i]);
		c->st[i] = NULL;
	}
	if (c->base)
		munmap((void *)c->base, (size_t)c->size);
	c->base = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->ix.seen);
	free(c->ix.scratch);
	memset(&c->ix, 0, sizeof(c->ix));
	c->sql_ok = 0;
	if (c->db)
		sqlite3_close_v2(c->db);
	c->db = NULL;
	c->stale = 0;
	c->used = 0;
	c->memo_need = 0;
	c->ans.id = -1;
}

static int progress_cb(void *arg)
{
	struct scim_cache *c = arg;
	return ++c->progress > PROGRESS_LIMIT;
}

/* "file:" URI for path, percent-encoding what a URI would misread. */
static char *path_uri(const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(path);
	char *uri = malloc(sizeof("file:?immutable=1") + 3 * n);
	if (!uri)
		return NULL;
	char *p = stpcpy(uri, "file:");
	for (const unsigned char *s = (const unsigned char *)path; *s; s++) {
		unsigned char ch = *s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || strchr("/-._~", ch)) {
			*p++ = (char)ch;
		} else {
			*p++ = '%';
			*p++ = hex[ch >> 4];
			*p++ = hex[ch & 15];
		}
	}
	strcpy(p, "?immutable=1");
	return uri;
}

/* Runs a one-value query during open; -1 on any error. */
static int64_t query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int check_tables(struct scim_cache *c)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(
		c->db,
		"SELECT type, sql FROM sqlite_master WHERE name = ?1", -1, &st,
		NULL);
	if (rc != SQLITE_OK) {
		set_err(c, "%s: not a readable SQLite database: %s", c->path,
			sqlite3_errmsg(c->db));
		return SCIM_UNAVAIL;
	}
	int status = SCIM_OK;
	for (size_t i = 0; i < sizeof(required_tables) / sizeof(*required_tables);
	     i++) {
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, required_tables[i], -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc != SQLITE_ROW) {
			set_err(c, "%s: not a scimbridge snapshot: table %s %s",
				c->path, required_tables[i],
				rc == SQLITE_DONE ? "missing"
						  : sqlite3_errmsg(c->db));
			status = SCIM_UNAVAIL;
			break;
		}
		const char *type = (const char *)sqlite3_column_text(st, 0);
		const char *sql = (const char *)sqlite3_column_text(st, 1);
		if (!type || strcmp(type, "table") != 0 || !sql ||
		    strncmp(sql, "CREATE TABLE", 12) != 0) {
			set_err(c, "%s: not a scimbridge snapshot: %s is not a "
				"plain table", c->path, required_tables[i]);
			status = SCIM_UNAVAIL;
			break;
		}
	}
	sqlite3_finalize(st);
	return status;
}

/* The snapshot's tables as plain tables and its schema_version, in one
 * query (one statement to prepare: opening is part of every process's
 * first lookup). On any failure check_tables names what is wrong. */
#define TABLES_SQL                                                          \
	"SELECT (SELECT count(*) FROM sqlite_master WHERE type = 'table' "     \
	"AND substr(sql, 1, 12) = 'CREATE TABLE' AND name IN ('meta', "       \
	"'users', 'groups', 'memberships', 'ssh_keys', "                       \
	"'slurm_associations', 'user_groups')), (SELECT value FROM meta "     \
	"WHERE key = "                                                         \
	"'schema_version')"

/* The tables and meta.schema_version, for SQL (the header's
 * application_id and user_version were checked by open_db). */
static int check_meta(struct scim_cache *c)
{
	_Static_assert(sizeof(required_tables) / sizeof(*required_tables) == 7,
		       "TABLES_SQL names every required table");
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(c->db, TABLES_SQL, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc != SQLITE_ROW || sqlite3_column_int(st, 0) != 7) {
		sqlite3_finalize(st);
		if (check_tables(c) == SCIM_OK) /* names the table if it can */
			set_err(c, "%s: not a scimbridge snapshot: %s", c->path,
				sqlite3_errmsg(c->db));
		return SCIM_UNAVAIL;
	}
	int status = SCIM_OK;
	const char *v = (const char *)sqlite3_column_text(st, 1);
	char want[16];
	snprintf(want, sizeof(want), "%d", SCIM_SCHEMA_VERSION);
	if (!v || strcmp(v, want) != 0) {
		set_err(c, "%s: snapshot schema_version %s, this reader "
			"understands %s", c->path, v ? v : "(none)", want);
		status = SCIM_UNAVAIL;
	}
	sqlite3_finalize(st);
	return status;
}

/* The identity of a snapshot file: device, inode and size. Not its
 * mtime: syncd sets the live file's mtime to its last successful contact
 * with the source after every poll (a mirror, to its manifest's), and a
 * touch must neither reopen nor re-verify anything. A published file is
 * never modified in place, and the handle keeps its inode open, so the
 * inode number cannot be reused under it. */
static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size;
}

/* Refusals an admin must hear about (an untrusted file or reader.conf):
 * to syslog once per handle and reason, never once per call. */
static void log_refusal(struct scim_cache *c)
{
	if (strcmp(c->logged, c->err) == 0)
		return;
	snprintf(c->logged, sizeof(c->logged), "%s", c->err);
	syslog(LOG_AUTHPRIV | LOG_ERR, "scimbridge reader: %s", c->err);
}

/* 0 if st is owned by root and not group/world-writable. */
static int root_only(const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH)) ? 0 : -1;
}

/* Whoever can write the snapshot, or replace it in its directory, picks
 * every answer of every process on the node, setuid ones included: the
 * file (sb, stat of the path) and the directory holding it must be
 * root-owned and not group/world-writable. A symlinked path is checked at
 * both ends (the link's directory and the target's). Checked when a file
 * is opened; a chmod of an open file is root's own doing. */
static int check_trust(struct scim_cache *c, const struct stat *sb)
{
	if (root_only(sb) != 0) {
		set_err(c, "%s: refused: owned by uid %u with mode %04o; the "
			"snapshot must be owned by root and not group or world "
			"writable", c->path, (unsigned)sb->st_uid,
			(unsigned)(sb->st_mode & 07777));
		return SCIM_UNAVAIL;
	}
	char real[PATH_MAX];
	const char *paths[2] = {c->path, NULL};
	struct stat lst;
	if (lstat(c->path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
		if (!realpath(c->path, real)) {
			set_err(c, "%s: cannot resolve the link: %s", c->path,
				strerror(errno));
			return SCIM_UNAVAIL;
		}
		paths[1] = real;
	}
	for (int i = 0; i < 2 && paths[i]; i++) {
		char dir[PATH_MAX];
		const char *slash = strrchr(paths[i], '/');
		size_t n = slash ? (size_t)(slash - paths[i]) : 0;
		if (n >= sizeof(dir))
			n = sizeof(dir) - 1;
		memcpy(dir, paths[i], n);
		strcpy(dir + n, n ? "" : slash ? "/" : ".");
		struct stat ds;
		if (stat(dir, &ds) != 0 || !S_ISDIR(ds.st_mode) ||
		    root_only(&ds) != 0) {
			set_err(c, "%s: refused: its directory %s is not owned "
				"by root or is group or world writable", c->path,
				dir);
			return SCIM_UNAVAIL;
		}
	}
	return SCIM_OK;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* Checks the SQLite header of the open file (c->fd: the very file the
 * lookups read, even if the path was renamed over meanwhile) against its
 * size: a snapshot is complete only if the page count recorded in the
 * header (valid when the change counter matches version-valid-for, as
 * every SQLite since 3.7.0 writes it) times the page size is exactly the
 * file size. A truncated copy would otherwise answer the lookups that
 * happen to hit surviving pages and fail the others, half way through a
 * walk. */
static int check_header(struct scim_cache *c, uint32_t *app, uint32_t *version)
{
	unsigned char h[100];
	int64_t size = c->size;
	if (size < (int64_t)sizeof(h) ||
	    pread(c->fd, h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    memcmp(h, "SQLite format 3", 16) != 0) {
		set_err(c, "%s: not an SQLite database", c->path);
		return SCIM_UNAVAIL;
	}
	uint32_t page = (uint32_t)h[16] << 8 | h[17];
	if (page == 1)
		page = 65536;
	uint32_t pages = be32(h + 28);
	if (page < 512 || (page & (page - 1)) || pages == 0 ||
	    be32(h + 24) != be32(h + 92)) {
		set_err(c, "%s: SQLite header without a valid database size",
			c->path);
		return SCIM_UNAVAIL;
	}
	if ((int64_t)page * pages != size) {
		set_err(c, "%s: truncated or extended: header says %" PRIu32
			" pages of %" PRIu32 " bytes, file has %lld bytes",
			c->path, pages, page, (long long)size);
		return SCIM_UNAVAIL;
	}
	*app = be32(h + 68); /* what PRAGMA application_id reads */
	*version = be32(h + 60); /* PRAGMA user_version: the schema version */
	return SCIM_OK;
}

/* Opens SQLite on the snapshot the first time a call needs SQL, through
 * the path (SQLite resolves links in names, so /proc/self/fd/N would
 * name the path again), and keeps it only if it is the file c->fd holds:
 * SQLite's descriptor and the path name the same inode, and the path
 * still names the file opened by open_db; else the snapshot was replaced
 * meanwhile and the next call reopens both. */
/* sql_open's answer when the path names a newer file than c->fd's: the
 * caller reopens both (never returned by the API). */
#define SQL_REPLACED 100

static int ensure_open(struct scim_cache *c, int force);

static int sql_open(struct scim_cache *c)
{
	/* The private SQLite is built without auto-initialisation
	 * (SQLITE_OMIT_AUTOINIT); with the system one this is a no-op. */
	int rc = sqlite3_initialize();
	char *uri = path_uri(c->path);
	if (!uri) {
		set_err(c, "out of memory");
		return SCIM_UNAVAIL;
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_open_v2(uri, &c->db,
				     SQLITE_OPEN_READONLY | SQLITE_OPEN_URI |
					     SQLITE_OPEN_NOMUTEX |
					     SQLITE_OPEN_PRIVATECACHE,
				     NULL);
	free(uri);
	if (rc != SQLITE_OK) {
		set_err(c, "%s: cannot open: %s", c->path,
			c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
		sqlite3_close_v2(c->db);
		c->db = NULL;
		return SCIM_UNAVAIL;
	}
	struct stat sb;
	int moved = 1;
	if (sqlite3_file_control(c->db, "main", SQLITE_FCNTL_HAS_MOVED,
				 &moved) != SQLITE_OK ||
	    moved || stat(c->path, &sb) != 0 || !same_file(&sb, &c->id)) {
		set_err(c, "%s: replaced while it was being opened", c->path);
		sqlite3_close_v2(c->db);
		c->db = NULL;
		return SQL_REPLACED;
	}
	/* The file comes from syncd, but the reader runs inside setuid
	 * programs: give its schema no power to call functions or reach
	 * past what SQLite checks itself. */
	sqlite3_db_config(c->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
	sqlite3_db_config(c->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
#endif
	sqlite3_db_config(c->db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
	sqlite3_db_config(c->db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, NULL);
	sqlite3_progress_handler(c->db, PROGRESS_PERIOD, progress_cb, c);
	return SCIM_OK;
}

/* What the first SQL call of an open file does once: SQLite's own page
 * reads through mmap, the tables and meta.schema_version checked, and one
 * read transaction for the connection's life (the file is immutable, so
 * it holds no lock and sees nothing change, and each lookup skips
 * SQLite's per-statement start and end of a read transaction). Any
 * failure makes the file unusable, as a failed open does. Called locked,
 * with c->db open. */
static int sql_ready(struct scim_cache *c)
{
	if (c->sql_ok)
		return SCIM_OK;
	int status = SCIM_OK;
	/* A snapshot replaced between open_db and here: open the new one
	 * (both the file and SQLite), a few times at most under a storm of
	 * renames. The calling lookup has read nothing from the old one. */
	for (int tries = 0; !c->db; tries++) {
		status = sql_open(c);
		if (status != SQL_REPLACED)
			break;
		status = SCIM_UNAVAIL;
		if (tries == 3 || ensure_open(c, 1) != SCIM_OK)
			break;
	}
	if (status == SCIM_OK) {
		/* A failure only means page reads through read(): not fatal. */
		char sql[64];
		snprintf(sql, sizeof(sql), "PRAGMA mmap_size = %lld", MMAP_SIZE);
		sqlite3_exec(c->db, sql, NULL, NULL, NULL);
		status = check_meta(c);
	}
	if (status == SCIM_OK &&
	    sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		set_err(c, "%s: cannot begin a read transaction: %s", c->path,
			sqlite3_errmsg(c->db));
		status = SCIM_UNAVAIL;
	}
	if (status != SCIM_OK) {
		c->stale = 1;
		c->bad = c->id;
		c->bad_at = coarse_now();
		c->has_bad = 1;
		return status;
	}
	c->sql_ok = 1;
	return SCIM_OK;
}

static void ix_open(struct scim_cache *c);
static int ix_user_active(struct scim_cache *c, const char *name, int *active);
static int ix_lookup(struct scim_cache *c, enum stmt_id id, const char *name,
		     int64_t key, void *ent, char *buf, size_t buflen,
		     uint32_t *id_out);

/* Opens c->path: the file, its header checked, mapped, and its NSS index
 * found; SQLite itself is opened only when a call first needs SQL
 * (sql_ready). c records the identity of the file opened (fstat of the
 * descriptor, so a rename over the path in between cannot mix files). */
static int open_db(struct scim_cache *c)
{
	struct stat fs;
	c->fd = open(c->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (c->fd < 0) {
		set_err(c, "%s: cannot open: %s", c->path, strerror(errno));
		return SCIM_UNAVAIL;
	}
	if (fstat(c->fd, &fs) != 0 || !S_ISREG(fs.st_mode)) {
		set_err(c, "%s: not a regular file", c->path);
		close_db(c);
		return SCIM_UNAVAIL;
	}
	c->size = fs.st_size;
	c->progress = 0;

	uint32_t app = 0, version = 0;
	int status = check_header(c, &app, &version);
	if (status == SCIM_OK && app != SCIM_APPLICATION_ID) {
		set_err(c, "%s: not a scimbridge snapshot (application_id %" PRIu32
			", want %d)", c->path, app, (int)SCIM_APPLICATION_ID);
		status = SCIM_UNAVAIL;
	}
	if (status == SCIM_OK && version != SCIM_SCHEMA_VERSION) {
		set_err(c, "%s: snapshot schema version %" PRIu32 ", this reader "
			"understands %d", c->path, version, SCIM_SCHEMA_VERSION);
		status = SCIM_UNAVAIL;
	}
	if (status != SCIM_OK) {
		close_db(c);
		return status;
	}
	/* The whole file, read-only: immutable by the writer's rule (a new
	 * file is renamed over it, never changed in place). Too large (or
	 * refused): no index, SQL reads through its own mapping. */
	if (c->size <= IX_MAP_MAX) {
		void *map = mmap(NULL, (size_t)c->size, PROT_READ, MAP_SHARED,
				 c->fd, 0);
		if (map != MAP_FAILED)
			c->base = map;
	}
	/* The NSS index answers passwd, group and initgroups lookups without
	 * SQL: no schema to parse, no statement to prepare. A file without
	 * one (older writers, hand-made fixtures) is read through SQL only. */
	ix_open(c);
	if (c->ix.ok && c->ix.version != SCIM_SCHEMA_VERSION) {
		set_err(c, "%s: snapshot schema_version %" PRIu32 ", this reader "
			"understands %d", c->path, c->ix.version,
			SCIM_SCHEMA_VERSION);
		close_db(c);
		return SCIM_UNAVAIL;
	}
	c->root_gid = -2; /* read when first needed (scim_user_groups) */
	c->pid = getpid();
	c->id = fs;
	c->err[0] = '\0';
	return SCIM_OK;
}

/* CLOCK_MONOTONIC_COARSE in ns (vDSO: no syscall); -1 if unavailable,
 * which makes every call check. */
static int64_t coarse_now(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Makes c->db current: opens it the first time, after fork, after an
 * SQLite error, and when the path now names a different file. The path
 * is stat()ed (immutable=1 means SQLite itself never looks) when force is
 * set or CHECK_INTERVAL_NS has passed since the last check; between
 * checks an open, healthy handle is used as is. */
static int ensure_open(struct scim_cache *c, int force)
{
	struct stat sb;
	c->progress = 0;
	if (c->conf_err[0]) {
		set_err(c, "%s", c->conf_err);
		log_refusal(c);
		return SCIM_UNAVAIL;
	}
	int64_t now = coarse_now();
	if (!force && c->fd >= 0 && !c->stale && now >= 0 && c->checked >= 0 &&
	    now - c->checked < CHECK_INTERVAL_NS && now >= c->checked)
		return SCIM_OK;
	if (stat(c->path, &sb) != 0) {
		set_err(c, "%s: %s", c->path, strerror(errno));
		close_db(c);
		return SCIM_UNAVAIL;
	}
	if (c->fd >= 0 && !c->stale && c->pid == getpid() && same_file(&sb, &c->id)) {
		c->checked = now;
		c->mtime = sb.st_mtim;
		return SCIM_OK;
	}
	close_db(c);
	/* The file that failed last time, unchanged (not even chmod'ed) and
	 * within the interval: the same answer without SQLite's open and
	 * the header and schema checks (20-80 us), which every NSS miss in
	 * files (ls -l, ps) would otherwise pay. c->err still says why. A
	 * new file at the path is opened at once. */
	if (!force && c->has_bad && same_file(&sb, &c->bad) &&
	    sb.st_ctim.tv_sec == c->bad.st_ctim.tv_sec &&
	    sb.st_ctim.tv_nsec == c->bad.st_ctim.tv_nsec && now >= 0 &&
	    now >= c->bad_at && now - c->bad_at < CHECK_INTERVAL_NS)
		return SCIM_UNAVAIL;
	int status;
	if (!S_ISREG(sb.st_mode)) {
		set_err(c, "%s: not a regular file", c->path);
		status = SCIM_UNAVAIL;
	} else if (sb.st_size == 0) {
		set_err(c, "%s: empty file", c->path);
		status = SCIM_UNAVAIL;
	} else if ((status = check_trust(c, &sb)) != SCIM_OK) {
		log_refusal(c);
	} else {
		status = open_db(c);
	}
	if (status == SCIM_OK) {
		c->checked = now;
		c->mtime = sb.st_mtim;
		c->has_bad = 0;
	} else {
		c->bad = sb;
		c->bad_at = now;
		c->has_bad = 1;
	}
	return status;
}

/* Locks c and makes the snapshot current (checking the file if force);
 * on SCIM_OK the caller must call end(). */
static int begin_check(struct scim_cache *c, int force)
{
	if (!c)
		return SCIM_UNAVAIL;
	pthread_mutex_lock(&reader_mu);
	int status = ensure_open(c, force);
	if (status != SCIM_OK)
		pthread_mutex_unlock(&reader_mu);
	return status;
}

static int begin(struct scim_cache *c)
{
	return begin_check(c, 0);
}

/* Resets the statements this call used (resetting all of them was a
 * sixth of a hot lookup) and unlocks. Clearing the bindings drops the
 * pointers to the caller's strings. */
static void end(struct scim_cache *c)
{
	for (int i = 0; c->used && i < ST_COUNT; i++)
		if (c->used & (1u << i) && c->st[i]) {
			sqlite3_reset(c->st[i]);
			sqlite3_clear_bindings(c->st[i]);
		}
	c->used = 0;
	pthread_mutex_unlock(&reader_mu);
}

/* The answer for a key no snapshot may hold (an empty name, root's name
 * or ids): SCIM_NOTFOUND, but SCIM_UNAVAIL when the snapshot is unusable,
 * as for any other key, so that NSS goes on to the next source even under
 * [NOTFOUND=return]. */
static int absent(struct scim_cache *c)
{
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	/* A file read through SQL is usable only once its tables and
	 * schema_version passed (sql_ready): until then, not NOTFOUND. */
	if (!c->ix.ok && sql_ready(c) != SCIM_OK)
		status = SCIM_UNAVAIL;
	end(c);
	return status == SCIM_OK ? SCIM_NOTFOUND : status;
}

/* Prepares statement id if it is not yet; SCIM_UNAVAIL if it cannot be
 * (a snapshot whose tables lack a column or index the reader uses): the
 * file is then treated like one that failed to open, retried once it is
 * replaced or CHECK_INTERVAL_NS later. Called locked, with c->db open. */
static int prepare(struct scim_cache *c, enum stmt_id id)
{
	if (c->st[id])
		return SCIM_OK;
	if (sql_ready(c) != SCIM_OK)
		return SCIM_UNAVAIL;
	char sql[1024]; /* the floor written in (ID_OK's %1$u) */
	snprintf(sql, sizeof(sql), stmt_sql[id], (unsigned)c->min_id);
	if (sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
			       &c->st[id], NULL) == SQLITE_OK && c->st[id])
		return SCIM_OK;
	set_err(c, "%s: not a scimbridge snapshot: %s", c->path,
		sqlite3_errmsg(c->db));
	c->stale = 1;
	c->bad = c->id;
	c->bad_at = coarse_now();
	c->has_bad = 1;
	return SCIM_UNAVAIL;
}

/* Statement id of the open snapshot, prepared on first use and marked
 * for end() to reset; NULL if it cannot be prepared (step() then fails
 * with the reason recorded, and binding to NULL is a harmless no-op). */
static sqlite3_stmt *stmt(struct scim_cache *c, enum stmt_id id)
{
	if (prepare(c, id) != SCIM_OK)
		return NULL;
	c->used |= 1u << id;
	return c->st[id];
}

/* Steps st: 1 for a row, 0 when done, -1 on an error (recorded; the
 * connection is reopened on the next call, as the file may be bad). */
static int step(struct scim_cache *c, sqlite3_stmt *st)
{
	if (!st)
		return -1; /* stmt() recorded why */
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	set_err(c, "%s: %s", c->path,
		rc == SQLITE_INTERRUPT ? "lookup exceeded its work limit"
				       : sqlite3_errmsg(c->db));
	c->stale = 1;
	return -1;
}

static const char *col_text(sqlite3_stmt *st, int i)
{
	const char *s = (const char *)sqlite3_column_text(st, i);
	return s ? s : "";
}

/* A uid or gid column as an id_t; -1 when out of range (a bad file). */
static int col_id(struct scim_cache *c, sqlite3_stmt *st, int i, uint32_t *id)
{
	sqlite3_int64 v = sqlite3_column_int64(st, i);
	if (sqlite3_column_type(st, i) != SQLITE_INTEGER || v < 0 ||
	    v > (sqlite3_int64)UINT32_MAX) {
		set_err(c, "%s: invalid id in snapshot", c->path);
		return -1;
	}
	*id = (uint32_t)v;
	return 0;
}

/* Bump allocator over the caller's buffer. */
struct arena {
	char *buf;
	size_t len, used;
};

static char *arena_str(struct arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	if (n > a->len - a->used)
		return NULL;
	char *p = a->buf + a->used;
	memcpy(p, s, n);
	a->used += n;
	return p;
}

/* --- passwd ------------------------------------------------------------ */

/* A walk step whose key did not increase: only a corrupt B-tree does
 * that, and it would make every enumeration loop forever. */
static int corrupt_walk(struct scim_cache *c)
{
	pthread_mutex_lock(&reader_mu);
	set_err(c, "%s: corrupt: keys out of order", c->path);
	c->stale = 1;
	pthread_mutex_unlock(&reader_mu);
	return SCIM_UNAVAIL;
}

/* Copies the current row of an ST_PW_* statement into pw/buf. */
static int fill_pw(struct scim_cache *c, sqlite3_stmt *st, void *ent,
		   char *buf, size_t buflen, uint32_t *uid_out)
{
	struct passwd *pw = ent;
	uint32_t uid, gid;
	if (col_id(c, st, 1, &uid) || col_id(c, st, 2, &gid)) {
		c->stale = 1;
		return SCIM_UNAVAIL;
	}
	struct arena a = {buf, buflen, 0};
	char *name = arena_str(&a, col_text(st, 0));
	char *passwd = arena_str(&a, PW_PASSWD);
	char *gecos = arena_str(&a, col_text(st, 3));
	char *home = arena_str(&a, col_text(st, 4));
	char *shell = arena_str(&a, col_text(st, 5));
	if (!name || !passwd || !gecos || !home || !shell)
		return SCIM_ERANGE;
	pw->pw_name = name;
	pw->pw_passwd = passwd;
	pw->pw_uid = uid;
	pw->pw_gid = gid;
	pw->pw_gecos = gecos;
	pw->pw_dir = home;
	pw->pw_shell = shell;
	c->fill_len = a.used;
	if (uid_out)
		*uid_out = uid;
	return SCIM_OK;
}

/* Copies the one row of a passwd or group statement into ent (struct
 * passwd or struct group, by fill) and caller memory; the key is name, or
 * key when name is NULL. *id_out gets the row's uid/gid. */
typedef int (*fill_fn)(struct scim_cache *c, sqlite3_stmt *st, void *ent,
		       char *buf, size_t buflen, uint32_t *id_out);

/* The answer memo: the last keyed passwd or group answer of the handle,
 * kept as strings and offsets, so that the same key asked again (ls -l,
 * ps, a shell prompt's repeated uid lookups; glibc's retry after ERANGE)
 * is a copy, not a B-tree descent and a row decode. Valid while the same
 * file stays open: close_db forgets it, as it forgets the connection.
 * At most ANS_MAX bytes (a 1,000-member group is about 12 KiB). */
#define ANS_MAX (64u << 10)

static int ans_keyed(enum stmt_id id)
{
	return id == ST_PW_NAM || id == ST_PW_UID || id == ST_GR_NAM ||
	       id == ST_GR_GID;
}

static int ans_match(const struct scim_cache *c, enum stmt_id id,
		     const char *name, int64_t key)
{
	return c->ans.id == (int)id &&
	       (name ? strcmp(name, c->ans.name) == 0 : key == c->ans.key);
}

static void ans_save(struct scim_cache *c, enum stmt_id id, const char *name,
		     int64_t key, const void *ent, const char *buf)
{
	c->ans.id = -1;
	if (!ans_keyed(id) || (name && strlen(name) >= sizeof(c->ans.name)))
		return;
	int group = id == ST_GR_NAM || id == ST_GR_GID;
	const struct group *gr = ent;
	const struct passwd *pw = ent;
	size_t n = 0;
	if (group)
		while (gr->gr_mem[n])
			n++;
	size_t slen = c->fill_len, need = slen + n * sizeof(uint32_t);
	if (need > ANS_MAX)
		return;
	if (need > c->ans.cap) {
		char *b = realloc(c->ans.blob, need);
		if (!b)
			return;
		c->ans.blob = b;
		c->ans.cap = need;
	}
	memcpy(c->ans.blob, buf, slen);
	if (group) {
		c->ans.off[0] = (uint32_t)(gr->gr_name - buf);
		c->ans.off[1] = (uint32_t)(gr->gr_passwd - buf);
		c->ans.xid = gr->gr_gid;
		for (size_t i = 0; i < n; i++) {
			uint32_t o = (uint32_t)(gr->gr_mem[i] - buf);
			memcpy(c->ans.blob + slen + i * sizeof(o), &o, sizeof(o));
		}
	} else {
		const char *s[5] = {pw->pw_name, pw->pw_passwd, pw->pw_gecos,
				    pw->pw_dir, pw->pw_shell};
		for (int i = 0; i < 5; i++)
			c->ans.off[i] = (uint32_t)(s[i] - buf);
		c->ans.xid = pw->pw_uid;
		c->ans.gid = pw->pw_gid;
	}
	c->ans.slen = slen;
	c->ans.n = n;
	c->ans.key = key;
	snprintf(c->ans.name, sizeof(c->ans.name), "%s", name ? name : "");
	c->ans.id = (int)id;
}

/* The memo's answer in the caller's memory, laid out as fill_* lays it
 * out (so the same buffer sizes succeed and fail). */
static int ans_load(struct scim_cache *c, void *ent, char *buf, size_t buflen,
		    uint32_t *id_out)
{
	size_t slen = c->ans.slen;
	if (c->ans.id == ST_GR_NAM || c->ans.id == ST_GR_GID) {
		size_t n = c->ans.n;
		size_t pad = (size_t)(-(uintptr_t)(buf + slen)) &
			     (_Alignof(char *) - 1);
		if (buflen < slen || pad > buflen - slen ||
		    n + 1 > (buflen - slen - pad) / sizeof(char *))
			return SCIM_ERANGE;
		memcpy(buf, c->ans.blob, slen);
		char **mem = (char **)(void *)(buf + slen + pad);
		for (size_t i = 0; i < n; i++) {
			uint32_t o;
			memcpy(&o, c->ans.blob + slen + i * sizeof(o), sizeof(o));
			mem[i] = buf + o;
		}
		mem[n] = NULL;
		struct group *gr = ent;
		gr->gr_name = buf + c->ans.off[0];
		gr->gr_passwd = buf + c->ans.off[1];
		gr->gr_gid = c->ans.xid;
		gr->gr_mem = mem;
	} else {
		if (buflen < slen)
			return SCIM_ERANGE;
		memcpy(buf, c->ans.blob, slen);
		struct passwd *pw = ent;
		pw->pw_name = buf + c->ans.off[0];
		pw->pw_passwd = buf + c->ans.off[1];
		pw->pw_gecos = buf + c->ans.off[2];
		pw->pw_dir = buf + c->ans.off[3];
		pw->pw_shell = buf + c->ans.off[4];
		pw->pw_uid = c->ans.xid;
		pw->pw_gid = c->ans.gid;
	}
	if (id_out)
		*id_out = c->ans.xid;
	return SCIM_OK;
}

static int row_query(struct scim_cache *c, enum stmt_id id, const char *name,
		     int64_t key, fill_fn fill, void *ent, char *buf,
		     size_t buflen, uint32_t *id_out)
{
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	/* glibc's getgrgid()/getgrnam() retry a large group with a buffer
	 * twice as large each time; each retry re-read the row (a 50,000-
	 * member group: 1 ms for the first lookup against 0.13 ms after).
	 * The same key in the same file with a buffer still below what the
	 * last attempt needed is answered at once. */
	if (c->memo_need && c->memo_id == (int)id && buflen < c->memo_need &&
	    (name ? strcmp(name, c->memo_name) == 0 : key == c->memo_key)) {
		end(c);
		return SCIM_ERANGE;
	}
	if (ans_match(c, id, name, key)) {
		status = ans_load(c, ent, buf, buflen, id_out);
		end(c);
		return status;
	}
	int row;
	sqlite3_stmt *st = NULL;
	if (c->ix.ok && ans_keyed(id)) {
		c->memo_need = 0;
		status = ix_lookup(c, id, name, key, ent, buf, buflen, id_out);
		row = status == SCIM_NOTFOUND ? 0 : status == SCIM_UNAVAIL ? -1 : 2;
	} else {
		st = stmt(c, id);
		if (name)
			sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		else
			sqlite3_bind_int64(st, 1, key);
		row = step(c, st);
	}
	switch (row) {
	case 1:
		c->memo_need = 0;
		status = fill(c, st, ent, buf, buflen, id_out);
		/* fall through */
	case 2: /* filled from the index */
		if (status == SCIM_ERANGE && c->memo_need &&
		    (!name || strlen(name) < sizeof(c->memo_name))) {
			c->memo_id = (int)id;
			c->memo_key = key;
			snprintf(c->memo_name, sizeof(c->memo_name), "%s",
				 name ? name : "");
		} else {
			c->memo_need = 0;
		}
		if (status == SCIM_OK)
			ans_save(c, id, name, key, ent, buf);
		break;
	case 0:
		status = SCIM_NOTFOUND;
		break;
	default:
		status = SCIM_UNAVAIL;
	}
	end(c);
	return status;
}

/* One step of a keyset walk (ST_PW_NEXT, ST_GR_NEXT): the first row whose
 * id is above *pos. The key bound is at least 0, which keeps id 0 out. A
 * row that does not move forward means out-of-order keys: a corrupt file
 * that would otherwise loop getent forever. */
static int walk(struct scim_cache *c, enum stmt_id id, fill_fn fill,
		void *ent, int64_t *pos, char *buf, size_t buflen)
{
	uint32_t next;
	/* Below the floor: start at it (keeps ids 0..min_id-1 out). */
	int64_t floor = c ? (int64_t)c->min_id - 1 : 0;
	int status = row_query(c, id, NULL, *pos < floor ? floor : *pos, fill,
			       ent, buf, buflen, &next);
	if (status == SCIM_OK && (int64_t)next <= *pos)
		return corrupt_walk(c);
	if (status == SCIM_OK)
		*pos = next;
	return status;
}

int scim_getpwnam(struct scim_cache *c, const char *name, struct passwd *pw,
		  char *buf, size_t buflen)
{
	if (!name || !*name || reserved_name(name))
		return absent(c);
	return row_query(c, ST_PW_NAM, name, 0, fill_pw, pw, buf, buflen, NULL);
}

int scim_getpwuid(struct scim_cache *c, uid_t uid, struct passwd *pw,
		  char *buf, size_t buflen)
{
	if (reserved_id(c, uid))
		return absent(c);
	return row_query(c, ST_PW_UID, NULL, uid, fill_pw, pw, buf, buflen, NULL);
}

int scim_nextpw(struct scim_cache *c, int64_t *pos, struct passwd *pw,
		char *buf, size_t buflen)
{
	return walk(c, ST_PW_NEXT, fill_pw, pw, pos, buf, buflen);
}

int scim_user_active(struct scim_cache *c, const char *name, int *active)
{
	if (!name || reserved_name(name))
		return absent(c);
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	if (c->ix.ok) { /* the index's flag, with ST_ACTIVE's conditions */
		status = ix_user_active(c, name, active);
		end(c);
		return status;
	}
	sqlite3_stmt *st = stmt(c, ST_ACTIVE);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	switch (step(c, st)) {
	case 1:
		*active = sqlite3_column_int(st, 0) != 0;
		break;
	case 0:
		status = SCIM_NOTFOUND;
		break;
	default:
		status = SCIM_UNAVAIL;
	}
	end(c);
	return status;
}

/* --- group ------------------------------------------------------------- */

/* Byte mask of w with 0x80 in each byte that is ',' (exact: no carry
 * crosses a byte), for splitting member lists eight bytes at a time:
 * a branch per byte cost more than the rest of a 1,000-member getgrgid. */
static inline uint64_t comma_bytes(const char *p)
{
	const uint64_t lo7 = 0x7F7F7F7F7F7F7F7FULL;
	uint64_t w;
	memcpy(&w, p, sizeof(w));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w); /* byte i of memory in bits 8i..8i+7 */
#endif
	uint64_t x = w ^ 0x2C2C2C2C2C2C2C2CULL; /* ',' bytes become 0 */
	return ~(((x & lo7) + lo7) | x | lo7);
}

/* Items of a comma-separated member list: commas + 1, none in "". */
static size_t count_items(const char *src, size_t len)
{
	size_t n = len > 0, i;
	for (i = 0; i + 8 <= len; i += 8)
		n += (size_t)((((comma_bytes(src + i) >> 7) *
				0x0101010101010101ULL) >> 56));
	for (; i < len; i++)
		n += src[i] == ',';
	return n;
}

/* Splits list (len bytes, in the caller's buffer) at its commas in place
 * into mem, NULL-terminated; empty items (only a damaged file has them)
 * are skipped. mem has room for count_items() + 1 pointers. */
static void split_members(char *list, size_t len, char **mem)
{
	size_t k = 0, start = 0, i;
	for (i = 0; i + 8 <= len; i += 8) {
		for (uint64_t m = comma_bytes(list + i); m; m &= m - 1) {
			size_t at = i + (size_t)(__builtin_ctzll(m) >> 3);
			list[at] = '\0';
			if (at > start)
				mem[k++] = list + start;
			start = at + 1;
		}
	}
	for (; i < len; i++)
		if (list[i] == ',') {
			list[i] = '\0';
			if (i > start)
				mem[k++] = list + start;
			start = i + 1;
		}
	if (len > start)
		mem[k++] = list + start;
	mem[k] = NULL;
}

/* After the name, "*" and the member list were copied into a: the member
 * pointers, aligned, after them; SCIM_ERANGE if they do not fit. */
static int finish_gr(struct scim_cache *c, struct arena *a, char *name,
		     char *passwd, char *list, uint32_t gid, struct group *gr,
		     uint32_t *gid_out)
{
	size_t len = strlen(list), n = count_items(list, len);
	size_t pad = (size_t)(-(uintptr_t)(a->buf + a->used)) &
		     (_Alignof(char *) - 1);
	if (pad > a->len - a->used ||
	    n + 1 > (a->len - a->used - pad) / sizeof(char *)) {
		c->memo_need = a->used + (n + 1) * sizeof(char *);
		return SCIM_ERANGE;
	}
	char **mem = (char **)(void *)(a->buf + a->used + pad);
	split_members(list, len, mem);
	gr->gr_name = name;
	gr->gr_passwd = passwd;
	gr->gr_gid = gid;
	gr->gr_mem = mem;
	c->fill_len = (size_t)(list + len + 1 - a->buf);
	if (gid_out)
		*gid_out = gid;
	return SCIM_OK;
}

/* Copies the current row of an ST_GR_* statement. Its members column
 * lists the member names comma-separated (validated names never contain
 * a comma): it is copied once after the group name, split in place, and
 * an aligned pointer array is built after it. One row read, however large
 * the group. */
static int fill_gr(struct scim_cache *c, sqlite3_stmt *st, void *ent,
		   char *buf, size_t buflen, uint32_t *gid_out)
{
	uint32_t gid;
	if (col_id(c, st, 0, &gid)) {
		c->stale = 1;
		return SCIM_UNAVAIL;
	}
	const char *src = col_text(st, 2);
	size_t len = strlen(src), n = count_items(src, len);
	/* Everything below but the pointer array's alignment: a buffer
	 * smaller than this gets SCIM_ERANGE at once, and row_query
	 * remembers it for glibc's retries (see memo_need). */
	size_t need = strlen(col_text(st, 1)) + 1 + sizeof(PW_PASSWD) + len + 1 +
		      (n + 1) * sizeof(char *);
	if (buflen < need) {
		c->memo_need = need;
		return SCIM_ERANGE;
	}
	struct arena a = {buf, buflen, 0};
	char *name = arena_str(&a, col_text(st, 1));
	char *passwd = arena_str(&a, PW_PASSWD);
	char *list = arena_str(&a, src);
	if (!name || !passwd || !list)
		return SCIM_ERANGE;
	return finish_gr(c, &a, name, passwd, list, gid, ent, gid_out);
}

/* --- the NSS index --------------------------------------------------------
 *
 * passwd, group and initgroups by name and id without SQL: hash-bucketed
 * records in one blob (layout: syncd/snapshot/index.go), each bucket one
 * chunk of the blob that the writer places in one overflow page, read in
 * place from the file's mapping. SQLite would parse the schema (most of a
 * process's first lookup) and descend two or three B-tree levels per call
 * (most of a warm one). Every answer passes the same floor as SQL's
 * (ID_OK, the name root); a damaged index is SCIM_UNAVAIL, like any
 * damaged file. */

#define IX_MAGIC "SCIMNSS2"
#define IX_HEADER 72
#define IX_FLAG_USABLE 1u
#define IX_USER_FIXED 24
#define IX_GROUP_FIXED 12

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* The index's hash (syncd/snapshot/index.go has the same): keyed by the
 * blob's seed, 8 bytes at a time, little-endian. */
static uint64_t ix_hash(uint64_t seed, const unsigned char *p, size_t n)
{
	uint64_t h = seed ^ ((uint64_t)n * 0x9E3779B97F4A7C15ULL);
	for (; n >= 8; p += 8, n -= 8) {
		h = (h ^ le64(p)) * 0xBF58476D1CE4E5B9ULL;
		h ^= h >> 31;
	}
	uint64_t w = 0;
	for (size_t i = n; i > 0; i--)
		w = w << 8 | p[i - 1];
	h = (h ^ w) * 0x94D049BB133111EBULL;
	h ^= h >> 29;
	h *= 0xBF58476D1CE4E5B9ULL;
	h ^= h >> 32;
	return h;
}

static uint64_t ix_hash_id(uint64_t seed, uint32_t id)
{
	unsigned char b[4] = {(unsigned char)id, (unsigned char)(id >> 8),
			      (unsigned char)(id >> 16),
			      (unsigned char)(id >> 24)};
	return ix_hash(seed, b, 4);
}

/* An SQLite varint at p, not past end: bytes used, 0 if malformed. */
static int varint(const unsigned char *p, const unsigned char *end,
		  uint64_t *v)
{
	uint64_t x = 0;
	for (int i = 0; i < 9; i++) {
		if (p + i >= end)
			return 0;
		if (i == 8) {
			*v = x << 8 | p[i];
			return 9;
		}
		x = x << 7 | (p[i] & 0x7f);
		if (!(p[i] & 0x80)) {
			*v = x;
			return i + 1;
		}
	}
	return 0;
}

/* Overflow page index and offset in it of blob byte q past the local
 * part: q / chunk by a multiply (exact for q < 2^32 and chunk < 2^16:
 * the error is below 2^-16), as every lookup makes several. */
static inline uint32_t ix_page_of(const struct nss_index *x, uint32_t q,
				  uint32_t *off)
{
#ifdef __SIZEOF_INT128__
	uint32_t i = (uint32_t)(((unsigned __int128)q * x->cmul) >> 48);
#else
	uint32_t i = q / x->chunk; /* 32-bit targets: no 128-bit multiply */
#endif
	*off = q - i * x->chunk;
	return i;
}

/* Overflow page i of the blob (its bytes after the link): NULL if it is
 * past the blob or does not link to the next page as the writer lays them
 * out (checked once per page and open). */
static const unsigned char *ix_page(struct nss_index *x,
				    const unsigned char *base, uint32_t i)
{
	if (i >= x->npages)
		return NULL;
	const unsigned char *pg = base + (int64_t)(x->first + i - 1) * x->page;
	if (!(x->seen[i >> 3] & (1u << (i & 7)))) {
		uint32_t next = i + 1 < x->npages ? x->first + i + 1 : 0;
		if (be32(pg) != next)
			return NULL;
		x->seen[i >> 3] |= (unsigned char)(1u << (i & 7));
	}
	return pg + 4;
}

/* Copies n bytes of the blob at offset at into dst: -1 if they are not
 * all inside it, or if an overflow page read is not linked to the next
 * one as the writer lays them out (checked once per page and open). */
static int ix_read(struct scim_cache *c, uint32_t at, void *dst, uint32_t n)
{
	struct nss_index *x = &c->ix;
	unsigned char *d = dst;
	if (at > x->len || n > x->len - at)
		return -1;
	if (at < x->local) {
		uint32_t k = x->local - at < n ? x->local - at : n;
		memcpy(d, c->base + x->local_at + at, k);
		d += k;
		at += k;
		n -= k;
	}
	while (n > 0) {
		uint32_t off, i = ix_page_of(x, at - x->local, &off);
		const unsigned char *pg = ix_page(x, c->base, i);
		if (!pg)
			return -1;
		uint32_t k = x->chunk - off < n ? x->chunk - off : n;
		memcpy(d, pg + off, k);
		d += k;
		at += k;
		n -= k;
	}
	return 0;
}

/* The n bytes of the blob at at, in place when they sit in one page
 * (the writer's bucket chunks always do), else copied into buf: NULL if
 * they are not all inside the blob or a link crossed is not as laid out. */
static const unsigned char *ix_view(struct scim_cache *c, uint32_t at,
				    uint32_t n, unsigned char *buf)
{
	struct nss_index *x = &c->ix;
	if (at > x->len || n > x->len - at)
		return NULL;
	if (at < x->local) {
		if (n <= x->local - at)
			return c->base + x->local_at + at;
	} else {
		uint32_t off, i = ix_page_of(x, at - x->local, &off);
		if (i < x->npages && n <= x->chunk - off) {
			const unsigned char *pg = ix_page(x, c->base, i);
			return pg ? pg + off : NULL;
		}
	}
	return ix_read(c, at, buf, n) == 0 ? buf : NULL;
}

enum ix_kind { IX_PW_NAME, IX_PW_UID, IX_GR_NAME, IX_GR_GID };

/* Finds the index in the open file: page 2 must be a table leaf holding
 * one row (rowid 1: NULL, then a blob) whose blob starts with IX_MAGIC.
 * Only what costs O(1) is checked here; ix_read checks each overflow link
 * it crosses, and scim_cache_check (syncd's verification) checks them
 * all. Leaves c->ix.ok 0, and the file to SQL, if anything is off. */
static void ix_open(struct scim_cache *c)
{
	struct nss_index *x = &c->ix;
	memset(x, 0, sizeof(*x));
	if (!c->base || c->size <= 512)
		return;
	const unsigned char *b = c->base;
	uint32_t page = (uint32_t)b[16] << 8 | b[17];
	if (page == 1)
		page = 65536;
	uint32_t usable = page - b[20];
	/* Auto-vacuum files put pointer-map pages among the overflow pages
	 * (header offset 52, nonzero then): never laid out as the writer
	 * does, read through SQL. */
	if (usable < 480 || (int64_t)page * 2 > c->size || be32(b + 52) != 0)
		return;
	const unsigned char *pg = b + page, *end = pg + usable;
	if (pg[0] != 0x0D || (pg[3] << 8 | pg[4]) != 1)
		return;
	uint32_t cell = (uint32_t)pg[8] << 8 | pg[9];
	if (cell < 10 || cell >= usable)
		return;
	const unsigned char *q = pg + cell;
	uint64_t pay, rowid, hdr, t0, t1;
	int n;
	if (!(n = varint(q, end, &pay)))
		return;
	q += n;
	if (!(n = varint(q, end, &rowid)) || rowid != 1)
		return;
	q += n;
	/* How much of a payload a table leaf keeps in the page (SQLite
	 * file format, "B-tree Pages"): the rest is in overflow pages. */
	uint64_t X = usable - 35, M = (uint64_t)(usable - 12) * 32 / 255 - 23;
	uint64_t local = pay;
	if (pay > X) {
		uint64_t K = M + (pay - M) % (usable - 4);
		local = K <= X ? K : M;
	}
	if (local > (uint64_t)(end - q) ||
	    (pay > local && (uint64_t)(end - q) < local + 4))
		return;
	const unsigned char *lend = q + local, *hp;
	if (!(n = varint(q, lend, &hdr)) || hdr < 3 || hdr > local)
		return;
	hp = q + n;
	if (!(n = varint(hp, q + hdr, &t0)) || t0 != 0)
		return;
	hp += n;
	if (!(n = varint(hp, q + hdr, &t1)) || t1 < 12 || t1 % 2)
		return;
	hp += n;
	uint64_t len = (t1 - 12) / 2;
	if (hp != q + hdr || len + hdr != pay || len < 64 || len > UINT32_MAX)
		return;
	x->len = (uint32_t)len;
	x->local_at = (q - b) + (int64_t)hdr;
	x->local = (uint32_t)(local - hdr);
	x->page = page;
	x->chunk = usable - 4;
	x->cmul = (1ULL << 48) / x->chunk + 1;
	if (pay > local) {
		uint32_t first = be32(q + local);
		uint64_t np = (pay - local + x->chunk - 1) / x->chunk;
		if (first < 3 || first + np - 1 > (uint64_t)(c->size / page))
			return;
		x->first = first;
		x->npages = (uint32_t)np;
		x->seen = calloc((np + 7) / 8, 1);
		if (!x->seen)
			return;
	}
	unsigned char h[IX_HEADER];
	if (x->len < IX_HEADER || ix_read(c, 0, h, IX_HEADER) != 0 ||
	    memcmp(h, IX_MAGIC, 8) != 0 ||
	    le32(h + 8) != x->len || !(le32(h + 12) & IX_FLAG_USABLE))
		return;
	x->seed = le64(h + 16);
	x->csize = le32(h + 24);
	x->cbase = le32(h + 28);
	x->version = le32(h + 64);
	if (x->csize < 64 || x->csize > 65536 || x->cbase < IX_HEADER ||
	    x->cbase > x->len)
		return;
	for (int k = 0; k < 4; k++) {
		x->kfirst[k] = le32(h + 32 + 8 * k);
		x->kmask[k] = le32(h + 36 + 8 * k);
		uint64_t end = (uint64_t)x->kfirst[k] + x->kmask[k] + 1;
		if (x->kmask[k] >= (1u << 24) || (x->kmask[k] & (x->kmask[k] + 1)) ||
		    end * x->csize > (uint64_t)(x->len - x->cbase))
			return;
	}
	x->scratch = malloc(x->csize);
	if (!x->scratch)
		return;
	x->ok = 1;
}

/* Every overflow link of the index (scim_cache_check): a lookup checks
 * only those it crosses. */
static int ix_check_all(struct scim_cache *c)
{
	struct nss_index *x = &c->ix;
	for (uint32_t i = 0; x->ok && i < x->npages; i++) {
		unsigned char b;
		uint32_t at = x->local + i * x->chunk;
		if (ix_read(c, at, &b, 1) != 0) {
			set_err(c, "%s: corrupt: the NSS index's page %" PRIu32
				" is not linked as written", c->path,
				x->first + i);
			return SCIM_UNAVAIL;
		}
	}
	return SCIM_OK;
}

struct ix_user {
	uint32_t uid, gid, ngids, active;
	uint32_t len[4]; /* name, gecos, home, shell */
	uint32_t gids_at, str_at;
};

static int ix_user_at(struct scim_cache *c, uint32_t rec, struct ix_user *u)
{
	unsigned char buf[IX_USER_FIXED];
	const unsigned char *b = ix_view(c, rec, sizeof(buf), buf);
	if (!b)
		return -1;
	u->uid = le32(b);
	u->gid = le32(b + 4);
	u->ngids = le32(b + 8);
	u->active = le32(b + 12) & 1;
	uint64_t total = 0;
	for (int i = 0; i < 4; i++)
		total += u->len[i] = (uint32_t)b[16 + 2 * i] | (uint32_t)b[17 + 2 * i] << 8;
	u->gids_at = rec + IX_USER_FIXED;
	if (u->ngids > (c->ix.len - u->gids_at) / 4)
		return -1;
	u->str_at = u->gids_at + u->ngids * 4;
	return total <= c->ix.len - u->str_at ? 0 : -1;
}

struct ix_group {
	uint32_t gid, name_len, mem_len, name_at;
};

static int ix_group_at(struct scim_cache *c, uint32_t rec, struct ix_group *g)
{
	unsigned char buf[IX_GROUP_FIXED];
	const unsigned char *b = ix_view(c, rec, sizeof(buf), buf);
	if (!b)
		return -1;
	g->gid = le32(b);
	g->name_len = le32(b + 4);
	g->mem_len = le32(b + 8);
	g->name_at = rec + IX_GROUP_FIXED;
	uint64_t total = (uint64_t)g->name_len + g->mem_len;
	return total <= c->ix.len - g->name_at ? 0 : -1;
}

/* 1 if the len bytes at at are name (of length n), 0 if not, -1 damaged. */
static int ix_name_is(struct scim_cache *c, uint32_t at, uint32_t len,
		      const char *name, size_t n)
{
	unsigned char buf[256];
	if (len != n)
		return 0;
	if (n > sizeof(buf))
		return 0; /* no key that long is ever asked (callers cap) */
	const unsigned char *b = ix_view(c, at, (uint32_t)n, buf);
	if (!b)
		return -1;
	return memcmp(b, name, n) == 0;
}

/* Entry offsets in a bucket chunk (index.go): two flag bits. */
#define IX_ELSEWHERE 0x8000 /* u32 blob offset, u32 length of the record */
#define IX_REDIRECT 0x4000  /* u32 gid, u32 by-name bucket, u32 by-name tag */
#define IX_OFF_MASK 0x3FFF

/* Scans bucket b of kind for an entry tagged tag whose record has name
 * (n bytes) or, with name NULL, id (uid or gid), and parses it into out
 * (a struct ix_user for the passwd kinds, a struct ix_group for the
 * group kinds): 1 found, 0 none, -1 a damaged index. The chunk lists its
 * entries' tags first, then where each entry is; only tagged entries are
 * read. A by-gid entry redirects to the group's by-name entry (depth 1). */
static int ix_scan(struct scim_cache *c, enum ix_kind kind, uint32_t b,
		   uint32_t tag, const char *name, size_t n, uint32_t id,
		   int depth, void *out)
{
	struct nss_index *x = &c->ix;
	if (b > x->kmask[kind])
		return -1;
	uint32_t chunk = x->cbase + (x->kfirst[kind] + b) * x->csize;
	const unsigned char *ch = ix_view(c, chunk, x->csize, x->scratch);
	if (!ch)
		return -1;
	uint32_t count = (uint32_t)ch[0] | (uint32_t)ch[1] << 8;
	if (2 + 6 * (uint64_t)count > x->csize)
		return -1;
	const unsigned char *tags = ch + 2, *offs = ch + 2 + 4 * count;
	for (uint32_t j = 0; j < count; j++) {
		if (le32(tags + 4 * j) != tag)
			continue;
		uint32_t at = (uint32_t)offs[2 * j] | (uint32_t)offs[2 * j + 1] << 8;
		uint32_t off = at & IX_OFF_MASK, rec = chunk + off;
		if (at & IX_REDIRECT) {
			if (kind != IX_GR_GID || name || depth > 0 ||
			    off > x->csize - 12)
				return -1;
			if (le32(ch + off) != id)
				continue;
			return ix_scan(c, IX_GR_NAME, le32(ch + off + 4),
				       le32(ch + off + 8), NULL, 0, id, depth + 1,
				       out);
		}
		if (at & IX_ELSEWHERE) {
			if (off > x->csize - 8)
				return -1;
			rec = le32(ch + off);
			if (rec == 0 || rec >= x->len)
				return -1;
		} else if (off >= x->csize) {
			return -1;
		}
		int m;
		if (kind <= IX_PW_UID) {
			struct ix_user *u = out;
			if (ix_user_at(c, rec, u) != 0)
				return -1;
			m = name ? ix_name_is(c, u->str_at, u->len[0], name, n)
				 : u->uid == id;
		} else {
			struct ix_group *g = out;
			if (ix_group_at(c, rec, g) != 0)
				return -1;
			m = name ? ix_name_is(c, g->name_at, g->name_len, name, n)
				 : g->gid == id;
		}
		if (m)
			return m;
	}
	return 0;
}

/* The record of a key, parsed into out (see ix_scan): 1 found, 0 absent,
 * -1 damaged. */
static int ix_find(struct scim_cache *c, enum ix_kind kind, const char *name,
		   uint32_t id, void *out)
{
	struct nss_index *x = &c->ix;
	size_t n = name ? strlen(name) : 0;
	if (name && n > 255)
		return 0;
	uint64_t h = name ? ix_hash(x->seed, (const unsigned char *)name, n)
			  : ix_hash_id(x->seed, id);
	return ix_scan(c, kind, (uint32_t)h & x->kmask[kind],
		       (uint32_t)(h >> 32), name, n, id, 0, out);
}

static int ix_damaged(struct scim_cache *c)
{
	set_err(c, "%s: corrupt: the NSS index does not read back", c->path);
	c->stale = 1;
	c->bad = c->id;
	c->bad_at = coarse_now();
	c->has_bad = 1;
	return SCIM_UNAVAIL;
}

/* Copies len bytes of the blob at at into the arena, NUL-terminated. */
static char *ix_str(struct scim_cache *c, struct arena *a, uint32_t at,
		    uint32_t len, int *bad)
{
	if ((size_t)len + 1 > a->len - a->used)
		return NULL;
	char *p = a->buf + a->used;
	if (ix_read(c, at, p, len) != 0) {
		*bad = 1;
		return NULL;
	}
	p[len] = '\0';
	a->used += (size_t)len + 1;
	return p;
}

static int ix_fill_pw(struct scim_cache *c, const struct ix_user *u,
		      struct passwd *pw, char *buf, size_t buflen)
{
	/* The four strings follow one another in the record: one read, then
	 * each with its terminator (and "*" after the name) into buf. */
	size_t total = (size_t)u->len[0] + u->len[1] + u->len[2] + u->len[3];
	if (buflen < total + 4 + sizeof(PW_PASSWD))
		return SCIM_ERANGE;
	const unsigned char *src = ix_view(c, u->str_at, (uint32_t)total,
					   (unsigned char *)buf + buflen - total);
	if (!src)
		return ix_damaged(c);
	char *p = buf, *f[4];
	for (int k = 0; k < 4; k++) {
		/* src may be the end of buf itself (a record across pages):
		 * memmove, and each string lands before what is still to read. */
		f[k] = p;
		memmove(p, src, u->len[k]);
		p[u->len[k]] = '\0';
		p += u->len[k] + 1;
		src += u->len[k];
		if (k == 0) {
			memcpy(p, PW_PASSWD, sizeof(PW_PASSWD));
			p += sizeof(PW_PASSWD);
		}
	}
	pw->pw_name = f[0];
	pw->pw_passwd = f[0] + u->len[0] + 1;
	pw->pw_gecos = f[1];
	pw->pw_dir = f[2];
	pw->pw_shell = f[3];
	pw->pw_uid = u->uid;
	pw->pw_gid = u->gid;
	c->fill_len = (size_t)(p - buf);
	return SCIM_OK;
}

static int ix_fill_gr(struct scim_cache *c, const struct ix_group *g,
		      struct group *gr, char *buf, size_t buflen,
		      uint32_t *gid_out)
{
	size_t strs = (size_t)g->name_len + 1 + sizeof(PW_PASSWD) +
		      g->mem_len + 1;
	if (buflen < strs + sizeof(char *)) {
		c->memo_need = strs + sizeof(char *);
		return SCIM_ERANGE;
	}
	struct arena a = {buf, buflen, 0};
	int bad = 0;
	char *name = ix_str(c, &a, g->name_at, g->name_len, &bad);
	char *passwd = name ? arena_str(&a, PW_PASSWD) : NULL;
	char *list = passwd ? ix_str(c, &a, g->name_at + g->name_len,
				     g->mem_len, &bad)
			    : NULL;
	if (bad)
		return ix_damaged(c);
	if (!list)
		return SCIM_ERANGE;
	return finish_gr(c, &a, name, passwd, list, g->gid, gr, gid_out);
}

/* A keyed passwd or group lookup (row_query's ST_PW_NAM, ST_PW_UID,
 * ST_GR_NAM, ST_GR_GID) from the index, with SQL's conditions. */
static int ix_lookup(struct scim_cache *c, enum stmt_id id, const char *name,
		     int64_t key, void *ent, char *buf, size_t buflen,
		     uint32_t *id_out)
{
	enum ix_kind kind = id == ST_PW_NAM ? IX_PW_NAME
			  : id == ST_PW_UID ? IX_PW_UID
			  : id == ST_GR_NAM ? IX_GR_NAME
					    : IX_GR_GID;
	struct ix_user u;
	struct ix_group g;
	int found = ix_find(c, kind, name, (uint32_t)key,
			    kind <= IX_PW_UID ? (void *)&u : (void *)&g);
	if (found < 0)
		return ix_damaged(c);
	if (found == 0)
		return SCIM_NOTFOUND;
	if (kind <= IX_PW_UID) {
		/* By name, the caller already refused "root". */
		int root = name ? 0 : ix_name_is(c, u.str_at, u.len[0], "root", 4);
		if (root < 0)
			return ix_damaged(c);
		if (root || reserved_id(c, u.uid) || reserved_id(c, u.gid))
			return SCIM_NOTFOUND;
		if (id_out)
			*id_out = u.uid;
		return ix_fill_pw(c, &u, ent, buf, buflen);
	}
	int root = name ? 0 : ix_name_is(c, g.name_at, g.name_len, "root", 4);
	if (root < 0)
		return ix_damaged(c);
	if (root || reserved_id(c, g.gid))
		return SCIM_NOTFOUND;
	return ix_fill_gr(c, &g, ent, buf, buflen, id_out);
}

/* The gid of a group named root in the index, -1 if none. */
static int64_t ix_root_gid(struct scim_cache *c)
{
	struct ix_group g;
	return ix_find(c, IX_GR_NAME, "root", 0, &g) > 0 ? (int64_t)g.gid : -1;
}

/* Calls f(arg, gid) for each gid of u's list in the index until f
 * returns nonzero: 1 if one did, 0 if none, -1 damaged. */
static int ix_gids(struct scim_cache *c, const struct ix_user *u,
		   int (*f)(void *arg, uint32_t gid), void *arg)
{
	unsigned char buf[1024];
	for (uint32_t i = 0; i < u->ngids; i += sizeof(buf) / 4) {
		uint32_t k = u->ngids - i < sizeof(buf) / 4 ? u->ngids - i
							     : (uint32_t)(sizeof(buf) / 4);
		const unsigned char *b = ix_view(c, u->gids_at + i * 4, k * 4, buf);
		if (!b)
			return -1;
		for (uint32_t j = 0; j < k; j++)
			if (f(arg, le32(b + 4 * j)))
				return 1;
	}
	return 0;
}

struct gid_keep_arg {
	const struct scim_cache *c;
	struct gid_list *l;
};

static int ix_keep_gid(void *arg, uint32_t gid)
{
	struct gid_keep_arg *a = arg;
	gid_keep(a->c, a->l, gid);
	return 0;
}

/* scim_user_groups from the index: the user's packed gids, filtered as
 * parse_gids filters user_groups' text. Called locked. */
static int ix_user_groups(struct scim_cache *c, const char *user, gid_t *gids,
			  size_t max, size_t *count)
{
	struct ix_user u;
	int found = ix_find(c, IX_PW_NAME, user, 0, &u);
	if (found < 0)
		return ix_damaged(c);
	if (found == 0 || reserved_id(c, u.uid) || reserved_id(c, u.gid))
		return SCIM_NOTFOUND;
	struct gid_list l = {gids, max, 0, 0, 0};
	struct gid_keep_arg a = {c, &l};
	if (ix_gids(c, &u, ix_keep_gid, &a) < 0)
		return ix_damaged(c);
	gid_done(&l);
	*count = l.n;
	return l.n > max ? SCIM_ERANGE : SCIM_OK;
}

/* scim_user_active from the index: ST_ACTIVE's conditions. Locked. */
static int ix_user_active(struct scim_cache *c, const char *name, int *active)
{
	struct ix_user u;
	int found = ix_find(c, IX_PW_NAME, name, 0, &u);
	if (found < 0)
		return ix_damaged(c);
	if (found == 0 || reserved_id(c, u.uid) || reserved_id(c, u.gid))
		return SCIM_NOTFOUND;
	*active = (int)u.active;
	return SCIM_OK;
}

static int ix_is_gid(void *arg, uint32_t gid)
{
	return gid == *(const uint32_t *)arg;
}

/* 1 if user's gid list in the index holds group's gid, 0 if not (or no
 * such user or group, or the group's gid below the floor), -1 damaged.
 * Called locked. */
static int ix_in_group(struct scim_cache *c, const char *user,
		       const char *group)
{
	struct ix_group g;
	struct ix_user u;
	int found = ix_find(c, IX_GR_NAME, group, 0, &g);
	if (found > 0 && !reserved_id(c, g.gid))
		found = ix_find(c, IX_PW_NAME, user, 0, &u);
	else if (found > 0)
		found = 0;
	if (found > 0)
		found = ix_gids(c, &u, ix_is_gid, &g.gid);
	if (found < 0)
		ix_damaged(c);
	return found;
}

int scim_getgrnam(struct scim_cache *c, const char *name, struct group *gr,
		  char *buf, size_t buflen)
{
	if (!name || !*name || reserved_name(name))
		return absent(c);
	return row_query(c, ST_GR_NAM, name, 0, fill_gr, gr, buf, buflen, NULL);
}

int scim_getgrgid(struct scim_cache *c, gid_t gid, struct group *gr,
		  char *buf, size_t buflen)
{
	if (reserved_id(c, gid))
		return absent(c);
	return row_query(c, ST_GR_GID, NULL, gid, fill_gr, gr, buf, buflen, NULL);
}

int scim_nextgr(struct scim_cache *c, int64_t *pos, struct group *gr,
		char *buf, size_t buflen)
{
	return walk(c, ST_GR_NEXT, fill_gr, gr, pos, buf, buflen);
}

/* SCIM_OK if user is in users, SCIM_NOTFOUND if not; called locked. */
static int user_exists(struct scim_cache *c, const char *user)
{
	sqlite3_stmt *st = stmt(c, ST_USER_EXISTS);
	sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
	int r = step(c, st);
	sqlite3_reset(st);
	return r > 0 ? SCIM_OK : r == 0 ? SCIM_NOTFOUND : SCIM_UNAVAIL;
}

/* Parses user_groups.gids ("200001,200007": decimal, comma-separated)
 * into gids (at most max), skipping ids the reader never answers; *count
 * gets the number kept. -1 if the text is not such a list (a damaged or
 * hand-made file). syncd writes the list ascending; one that is not is
 * sorted here when it fits. Called locked. */
static int parse_gids(struct scim_cache *c, const char *s, gid_t *gids,
		      size_t max, size_t *count)
{
	struct gid_list l = {gids, max, 0, 0, 0};
	while (*s) {
		uint64_t v = 0;
		const char *p = s;
		while (*p >= '0' && *p <= '9' && p - s < 10)
			v = v * 10 + (uint64_t)(*p++ - '0');
		if (p == s || v > UINT32_MAX || (*p && *p != ',') ||
		    (*p == ',' && !p[1]))
			return -1;
		s = *p ? p + 1 : p;
		gid_keep(c, &l, (uint32_t)v);
	}
	gid_done(&l);
	*count = l.n;
	return 0;
}

int scim_user_groups(struct scim_cache *c, const char *user, gid_t *gids,
		     size_t max, size_t *count)
{
	if (!user || reserved_name(user))
		return absent(c);
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	size_t n = 0;
	/* -1 when there is none (or on an error: the group walk and getgrgid
	 * still never answer for it). Once per open, on first use. */
	if (c->ix.ok) {
		if (c->root_gid == -2)
			c->root_gid = ix_root_gid(c);
		status = ix_user_groups(c, user, gids, max, count);
		end(c);
		return status;
	}
	if (c->root_gid == -2)
		c->root_gid = sql_ready(c) == SCIM_OK
			? query_int(c->db, "SELECT gid FROM groups WHERE "
					   "name = 'root'")
			: -1;
	sqlite3_stmt *st = stmt(c, ST_USER_GROUPS);
	sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
	switch (step(c, st)) {
	case 1:
		if (parse_gids(c, col_text(st, 0), gids, max, &n) != 0) {
			set_err(c, "%s: corrupt: user_groups of %s is not a gid "
				"list", c->path, user);
			c->stale = 1;
			status = SCIM_UNAVAIL;
		}
		break;
	case 0:
		status = SCIM_NOTFOUND;
		break;
	default:
		status = SCIM_UNAVAIL;
	}
	end(c);
	if (status != SCIM_OK)
		return status;
	*count = n;
	return n > max ? SCIM_ERANGE : SCIM_OK;
}

int scim_user_in_group(struct scim_cache *c, const char *user,
		       const char *group, int *member)
{
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	int r = 0;
	if (user && group && !reserved_name(user) && !reserved_name(group) &&
	    c->ix.ok) {
		/* ST_IN_GROUP from the index: the group's gid (above the floor),
		 * then that gid in the user's list (the memberships rows). */
		r = ix_in_group(c, user, group);
	} else if (user && group && !reserved_name(user) && !reserved_name(group)) {
		sqlite3_stmt *st = stmt(c, ST_IN_GROUP);
		sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, group, -1, SQLITE_STATIC);
		r = step(c, st);
	}
	if (r < 0)
		status = SCIM_UNAVAIL;
	else
		*member = r;
	end(c);
	return status;
}

/* --- ssh keys ---------------------------------------------------------- */

int scim_user_keys(struct scim_cache *c, const char *user, char *buf,
		   size_t buflen)
{
	if (!user || reserved_name(user))
		return absent(c);
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	status = user_exists(c, user);
	if (status == SCIM_OK) {
		sqlite3_stmt *st = stmt(c, ST_KEYS);
		sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
		size_t used = 0;
		int r;
		while ((r = step(c, st)) == 1) {
			const char *k = col_text(st, 0);
			size_t n = strlen(k);
			if (n + 1 > buflen - used) { /* key and '\n' */
				status = SCIM_ERANGE;
				break;
			}
			memcpy(buf + used, k, n);
			buf[used + n] = '\n';
			used += n + 1;
		}
		if (r < 0)
			status = SCIM_UNAVAIL;
		else if (status == SCIM_OK && used >= buflen)
			status = SCIM_ERANGE; /* no room for the NUL */
		else if (status == SCIM_OK)
			buf[used] = '\0';
	}
	end(c);
	return status;
}

/* --- slurm associations ------------------------------------------------ */

int scim_assoc_count(struct scim_cache *c, const char *user,
		     const char *account, int *count)
{
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	sqlite3_stmt *st = stmt(c, ST_ASSOC_COUNT);
	sqlite3_bind_text(st, 1, user ? user : "", -1, SQLITE_STATIC);
	if (account)
		sqlite3_bind_text(st, 2, account, -1, SQLITE_STATIC);
	if (step(c, st) == 1)
		*count = sqlite3_column_int(st, 0);
	else
		status = SCIM_UNAVAIL;
	end(c);
	return status;
}

int scim_next_assoc(struct scim_cache *c, const char *user, const char *after,
		    struct scim_assoc *a, char *buf, size_t buflen)
{
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	sqlite3_stmt *st = stmt(c, ST_ASSOC_NEXT);
	sqlite3_bind_text(st, 1, user ? user : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, after ? after : "", -1, SQLITE_STATIC);
	switch (step(c, st)) {
	case 1: {
		struct arena ar = {buf, buflen, 0};
		const char *account = arena_str(&ar, col_text(st, 0));
		const char *qos = arena_str(&ar, col_text(st, 1));
		const char *dq = arena_str(&ar, col_text(st, 2));
		if (!account || !qos || !dq) {
			status = SCIM_ERANGE;
			break;
		}
		if (strcmp(account, after ? after : "") <= 0) {
			set_err(c, "%s: corrupt: keys out of order", c->path);
			c->stale = 1;
			status = SCIM_UNAVAIL;
			break;
		}
		a->account = account;
		a->qos = qos;
		a->default_qos = dq;
		a->is_default = sqlite3_column_int(st, 3) != 0;
		a->blocked = sqlite3_column_int(st, 4) != 0;
		break;
	}
	case 0:
		status = SCIM_NOTFOUND;
		break;
	default:
		status = SCIM_UNAVAIL;
	}
	end(c);
	return status;
}

/* --- meta -------------------------------------------------------------- */

int scim_meta(struct scim_cache *c, const char *key, char *buf, size_t buflen)
{
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	sqlite3_stmt *st = stmt(c, ST_META);
	sqlite3_bind_text(st, 1, key ? key : "", -1, SQLITE_STATIC);
	switch (step(c, st)) {
	case 1: {
		struct arena a = {buf, buflen, 0};
		if (!arena_str(&a, col_text(st, 0)))
			status = SCIM_ERANGE;
		break;
	}
	case 0:
		status = SCIM_NOTFOUND;
		break;
	default:
		status = SCIM_UNAVAIL;
	}
	end(c);
	return status;
}

/* --- configuration ----------------------------------------------------- */

struct reader_conf {
	char path[4096];
	uint32_t min_id;
	char err[200]; /* "" when the file is fine or absent */
};
/* (A comment is a line of its own: "min_id = 1000 # x" is malformed.) */

/* Reads SCIM_READER_CONFIG_PATH: lines "key = value", blank lines and
 * "#" comments; keys cache_path (absolute) and min_id (1..4294967294).
 * The file is trusted only if root owns it and nobody else can write it:
 * these modules run in setuid programs, and whoever picks the path or the
 * floor picks every answer. Environment variables are never consulted for
 * the same reason. A missing file means the compiled defaults; a file
 * that exists but is unreadable, untrusted or malformed is an error (the
 * handle then answers SCIM_UNAVAIL, saying why), never a silent default:
 * a reader.conf at mode 0600 made user processes read another file. */
static int read_conf(struct reader_conf *rc)
{
	const char *cp = SCIM_READER_CONFIG_PATH;
	snprintf(rc->path, sizeof(rc->path), "%s", SCIM_DEFAULT_CACHE_PATH);
	rc->min_id = SCIM_DEFAULT_MIN_ID;
	rc->err[0] = '\0';
	char text[4096];
	int fd = open(cp, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(rc->err, sizeof(rc->err), "%s: cannot read: %s (it "
			 "must be root-owned, mode 0644)", cp, strerror(errno));
		return -1;
	}
	struct stat sb;
	ssize_t n = -1;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || root_only(&sb) != 0)
		snprintf(rc->err, sizeof(rc->err), "%s: refused: not a regular "
			 "file owned by root and writable by root only", cp);
	else if ((n = read(fd, text, sizeof(text))) < 0)
		snprintf(rc->err, sizeof(rc->err), "%s: cannot read: %s", cp,
			 strerror(errno));
	else if (n == (ssize_t)sizeof(text))
		snprintf(rc->err, sizeof(rc->err), "%s: larger than %zu bytes",
			 cp, sizeof(text) - 1);
	close(fd);
	if (rc->err[0])
		return -1;
	text[n] = '\0';
	int lineno = 0;
	for (char *line = text, *next; line; line = next) {
		lineno++;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line += strspn(line, " \t\r");
		size_t len = strlen(line);
		while (len > 0 && strchr(" \t\r", line[len - 1]))
			line[--len] = '\0';
		if (!*line || *line == '#')
			continue;
		char *eq = strchr(line, '=');
		size_t klen = eq ? (size_t)(eq - line) : 0;
		while (klen > 0 && strchr(" \t", line[klen - 1]))
			klen--;
		char *v = eq ? eq + 1 + strspn(eq + 1, " \t") : NULL;
		if (!eq || klen == 0) {
			snprintf(rc->err, sizeof(rc->err), "%s line %d: expected "
				 "\"key = value\"", cp, lineno);
			return -1;
		}
		if (klen == 10 && !strncmp(line, "cache_path", 10)) {
			if (v[0] != '/') {
				snprintf(rc->err, sizeof(rc->err), "%s line %d: "
					 "cache_path must be an absolute path",
					 cp, lineno);
				return -1;
			}
			snprintf(rc->path, sizeof(rc->path), "%s", v);
		} else if (klen == 6 && !strncmp(line, "min_id", 6)) {
			char *end;
			errno = 0;
			unsigned long long x = strtoull(v, &end, 10);
			if (errno || end == v || *end || *v == '-' || x < 1 ||
			    x > 4294967294ULL) {
				snprintf(rc->err, sizeof(rc->err), "%s line %d: "
					 "min_id must be a number from 1 to "
					 "4294967294", cp, lineno);
				return -1;
			}
			rc->min_id = (uint32_t)x;
		} else {
			snprintf(rc->err, sizeof(rc->err), "%s line %d: unknown "
				 "key \"%.*s\" (known: cache_path, min_id)", cp,
				 lineno, (int)(klen > 40 ? 40 : klen), line);
			return -1;
		}
	}
	return 0;
}

int scim_configured_path(char *buf, size_t buflen)
{
	struct reader_conf rc;
	int r = read_conf(&rc);
	size_t len = strlen(rc.path);
	if (len + 1 > buflen)
		return -1;
	memcpy(buf, rc.path, len + 1);
	return r;
}

/* --- handles ----------------------------------------------------------- */

struct scim_cache *scim_cache_new(const char *path)
{
	struct reader_conf rc;
	read_conf(&rc);
	struct scim_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->path = strdup(path ? path : rc.path);
	if (!c->path) {
		free(c);
		return NULL;
	}
	c->min_id = rc.min_id;
	snprintf(c->conf_err, sizeof(c->conf_err), "%s", rc.err);
	c->ans.id = -1;
	c->fd = -1;
	snprintf(c->err, sizeof(c->err), "%s: not opened yet", c->path);
	pthread_mutex_lock(&reader_mu);
	c->next = list_head;
	list_head = c;
	pthread_mutex_unlock(&reader_mu);
	return c;
}

void scim_cache_free(struct scim_cache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&reader_mu);
	for (struct scim_cache **p = &list_head; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	close_db(c);
	pthread_mutex_unlock(&reader_mu);
	free(c->ans.blob);
	free(c->path);
	free(c);
}

int scim_cache_check(struct scim_cache *c)
{
	int status = begin_check(c, 1);
	if (status != SCIM_OK)
		return status;
	for (int i = 0; status == SCIM_OK && i < ST_COUNT; i++)
		status = prepare(c, (enum stmt_id)i);
	if (status == SCIM_OK)
		status = ix_check_all(c);
	end(c);
	return status;
}

int scim_cache_indexed(struct scim_cache *c)
{
	if (begin(c) != SCIM_OK)
		return 0;
	int ok = c->ix.ok;
	end(c);
	return ok;
}

const char *scim_cache_error(struct scim_cache *c)
{
	return c ? c->err : "no cache handle";
}

int scim_cache_mtime(struct scim_cache *c, struct timespec *mtime)
{
	int status = begin_check(c, 1);
	if (status != SCIM_OK)
		return status;
	*mtime = c->mtime;
	end(c);
	return SCIM_OK;
}

int scim_local_group_member(const char *group_file, const char *name,
			    char *buf, size_t buflen)
{
	struct group *gr;
	int found = 0;
	FILE *f = fopen(group_file, "re");

	if (f == NULL)
		return 0;
	while (!found && (gr = fgetgrent(f)) != NULL) {
		for (char **m = gr->gr_mem; m && *m; m++) {
			if (strcasecmp(*m, name) == 0) {
				snprintf(buf, buflen, "%s", gr->gr_name);
				found = 1;
				break;
			}
		}
	}
	fclose(f);
	return found;
}
