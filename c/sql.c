/*
 * sql.c - the SQL side of the reader: SQLite opened on the snapshot when
 * a call first needs it, the tables and schema_version checked, and the
 * prepared statements every SQL answer runs.
 */
#include "reader.h"

#define PW_COLS "name, uid, gid, gecos, home, shell"
/* Schema version 3: members is NULL for a list kept only as memberships
 * rows (longer than 1,000 bytes, schema.sql); they are read in name order
 * (the ordered subquery orders group_concat, as in derive.sql). */
#define GR_COLS                                                              \
	"gid, name, coalesce(members, (SELECT group_concat(user_name, ',') "  \
	"FROM (SELECT user_name FROM memberships WHERE gid = groups.gid "     \
	"ORDER BY user_name)), '')"
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
	[ST_GR_NAM] = "SELECT " GR_COLS " FROM groups WHERE name = ?1 "
		      "AND " ID_OK("gid"),
	[ST_GR_GID] = "SELECT " GR_COLS " FROM groups WHERE gid = ?1 "
		      "AND name <> 'root'",
	[ST_GR_NEXT] = "SELECT " GR_COLS " FROM groups WHERE gid > ?1 "
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

/* The tables a snapshot must have, as ordinary tables (not views or
 * virtual tables, whose reads could run arbitrary code). */
static const char *const required_tables[] = {
	"meta", "users", "groups", "memberships", "ssh_keys",
	"slurm_associations", "user_groups",
};

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
int64_t query_int(sqlite3 *db, const char *sql)
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
	int known = 0;
	for (int k = SCIM_SCHEMA_VERSION_MIN; v && k <= SCIM_SCHEMA_VERSION; k++) {
		snprintf(want, sizeof(want), "%d", k);
		known |= strcmp(v, want) == 0;
	}
	if (!known) {
		set_err(c, "%s: snapshot schema_version %s, this reader "
			"understands %d to %d", c->path, v ? v : "(none)",
			SCIM_SCHEMA_VERSION_MIN, SCIM_SCHEMA_VERSION);
		status = SCIM_UNAVAIL;
	}
	sqlite3_finalize(st);
	return status;
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

#ifdef SCIM_SQLITE_DLOPEN
#include <dlfcn.h>

/* SQLite, once sqlite_load found it (never unloaded): published once
 * (atomically, release), read by sqlite_loaded (acquire) before any call
 * through it; a forked child inherits it with the mapping. */
const struct scim_sqlite_api *scim_sqlite;

static int sqlite_loaded(void)
{
	return __atomic_load_n(&scim_sqlite, __ATOMIC_ACQUIRE) != NULL;
}

/* Loads the module's private SQLite (sqlite_api.h says why it is not
 * linked in): SCIM_SQLITE_LIB beside the file this module was loaded
 * from (dladdr), so it is found wherever the module was (the NSS
 * directory, a build directory, a test's overlay), and never through
 * the library search path, LD_LIBRARY_PATH or the host's libsqlite3.
 * Like reader.conf and the snapshot, it must be root's and writable by
 * root only: it runs inside setuid programs.
 *
 * Called WITHOUT reader_mu (sql_ready lets it go around this call), so
 * it writes its error into err, not the handle. dlopen holds the
 * loader's lock while it runs the constructors of what it loads, and a
 * constructor of a library that another thread is loading may look a
 * user up, which takes reader_mu: a thread that held reader_mu while it
 * waited in dlopen for the loader's lock deadlocked with it (issue 22;
 * tests/c/dlopen_ctor_test.c hung every time). Two threads loading at
 * once both dlopen (the loader counts the second as a reference to the
 * same object) and publish the same table. A child forked while a thread
 * is inside this dlopen starts with scim_sqlite NULL and the loader's
 * lock re-initialised by glibc's fork, and loads again if it needs SQL
 * (tests/c/fork_sqlload_test.c forks around this load). A failure is not
 * remembered: the next SQL call (at most one per call) tries again, and
 * the index lookups never come here. */
static int sqlite_load(char *err, size_t errlen)
{
	if (sqlite_loaded())
		return SCIM_OK;
	Dl_info di;
	const char *slash = NULL;
	if (dladdr((void *)sqlite_load, &di) && di.dli_fname)
		slash = strrchr(di.dli_fname, '/');
	if (!slash) {
		snprintf(err, errlen, "cannot tell which directory this module "
			 "was loaded from, so cannot load its SQLite (%s beside "
			 "it): load the module by its full path", SCIM_SQLITE_LIB);
		return SCIM_UNAVAIL;
	}
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%.*s/%s",
			 (int)(slash - di.dli_fname), di.dli_fname,
			 SCIM_SQLITE_LIB);
	struct stat sb;
	if (n < 0 || (size_t)n >= sizeof(path)) {
		snprintf(err, errlen, "%s/%s: path too long", di.dli_fname,
			 SCIM_SQLITE_LIB);
		return SCIM_UNAVAIL;
	}
	if (stat(path, &sb) != 0) {
		snprintf(err, errlen, "%s: cannot load this module's SQLite: %s "
			 "(it is installed with the module; reinstall "
			 "scimbridge)", path, strerror(errno));
		return SCIM_UNAVAIL;
	}
	if (!S_ISREG(sb.st_mode) || root_only(&sb) != 0) {
		snprintf(err, errlen, "%s: refused: not a regular file owned by "
			 "root and writable by root only (reinstall scimbridge)",
			 path);
		return SCIM_UNAVAIL;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!h) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s: cannot load: %s (reinstall "
			 "scimbridge)", path, e ? e : "unknown error");
		return SCIM_UNAVAIL;
	}
	const struct scim_sqlite_api *api = dlsym(h, SCIM_SQLITE_API_SYMBOL);
	if (!api || api->version != SCIM_SQLITE_API_VERSION ||
	    api->size != sizeof(*api)) {
		snprintf(err, errlen, "%s: not the SQLite of this module (no %s "
			 "of size %zu): the module and it come from different "
			 "builds; reinstall scimbridge", path,
			 SCIM_SQLITE_API_SYMBOL, sizeof(*api));
		dlclose(h);
		return SCIM_UNAVAIL;
	}
	__atomic_store_n(&scim_sqlite, api, __ATOMIC_RELEASE);
	return SCIM_OK;
}

/* SQLite loaded for c's call, which holds reader_mu: the lock is let go
 * around the load (sqlite_load says why) and taken again, and the handle
 * made current again (another thread may have checked, replaced or
 * closed its snapshot meanwhile; the calling lookup has read nothing of
 * it through SQL yet). */
static int sqlite_ready_locked(struct scim_cache *c)
{
	if (sqlite_loaded())
		return SCIM_OK;
	char err[sizeof(c->err)];
	err[0] = '\0';
	pthread_mutex_unlock(&reader_mu);
	int status = sqlite_load(err, sizeof(err));
	pthread_mutex_lock(&reader_mu);
	if (status != SCIM_OK) {
		set_err(c, "%s", err);
		return status;
	}
	return ensure_open(c, 0);
}
#else
/* SQLite is linked in (syncd through cgo, PAM, SPANK, the tools). */
static int sqlite_ready_locked(struct scim_cache *c)
{
	(void)c;
	return SCIM_OK;
}
#endif

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
	/* A connection is this process's only (no SQLite across fork): the
	 * next check compares the pid (open_fd leaves it unrecorded). */
	if (!c->pid)
		c->pid = getpid();
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
int sql_ready(struct scim_cache *c)
{
	if (c->sql_ok)
		return SCIM_OK;
	/* Without SQLite this call is unavailable, but the file is not bad:
	 * the index keeps answering (no mark_stale). The load lets the lock
	 * go for a while: another thread may have made SQL ready meanwhile. */
	if (sqlite_ready_locked(c) != SCIM_OK)
		return SCIM_UNAVAIL;
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
		mark_stale(c);
		c->bad = c->id;
		c->bad_at = coarse_now();
		c->has_bad = 1;
		return status;
	}
	c->sql_ok = 1;
	return SCIM_OK;
}

/* Prepares statement id if it is not yet; SCIM_UNAVAIL if it cannot be
 * (a snapshot whose tables lack a column or index the reader uses): the
 * file is then treated like one that failed to open, retried once it is
 * replaced or CHECK_INTERVAL_NS later. Called locked, with c->db open. */
int prepare(struct scim_cache *c, enum stmt_id id)
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
	mark_stale(c);
	c->bad = c->id;
	c->bad_at = coarse_now();
	c->has_bad = 1;
	return SCIM_UNAVAIL;
}

/* Statement id of the open snapshot, prepared on first use and marked
 * for end() to reset; NULL if it cannot be prepared (step() then fails
 * with the reason recorded, and binding to NULL is a harmless no-op). */
sqlite3_stmt *stmt(struct scim_cache *c, enum stmt_id id)
{
	if (prepare(c, id) != SCIM_OK)
		return NULL;
	c->used |= 1u << id;
	return c->st[id];
}

/* Steps st: 1 for a row, 0 when done, -1 on an error (recorded; the
 * connection is reopened on the next call, as the file may be bad). */
int step(struct scim_cache *c, sqlite3_stmt *st)
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
	mark_stale(c);
	return -1;
}

/* The answer of a query of at most one row (called locked): SCIM_OK with
 * the row current, SCIM_NOTFOUND when there is none, SCIM_UNAVAIL on an
 * error (step() recorded why). The tail every keyed SQL call shares. */
int step_one(struct scim_cache *c, sqlite3_stmt *st)
{
	int r = step(c, st);
	return r > 0 ? SCIM_OK : r == 0 ? SCIM_NOTFOUND : SCIM_UNAVAIL;
}

const char *col_text(sqlite3_stmt *st, int i)
{
	const char *s = (const char *)sqlite3_column_text(st, i);
	return s ? s : "";
}

/* A uid or gid column as an id_t; -1 when out of range (a bad file). */
int col_id(struct scim_cache *c, sqlite3_stmt *st, int i, uint32_t *id)
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
