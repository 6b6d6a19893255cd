/*
 * sqlite_api.h - every SQLite call the reader makes, as one table of
 * function pointers: how libnss_scim.so.2 reaches the private SQLite it
 * loads only when a call first needs SQL (issue 22).
 *
 * Why: the NSS module is loaded into every process that looks a user up,
 * and almost none of them needs SQL (passwd, group and initgroups come
 * from the NSS index). With SQLite linked in, the module was a 1.1 MB
 * file whose loader had to apply 1,002 relocations to five pages of
 * SQLite's tables (aBuiltinFunc, the VFS, the pragma and keyword tables):
 * each written page a copy-on-write page fault in every new process, and
 * with the extra text and rodata, five page faults more in the first
 * lookup of a freshly exec'd program (33 against 28, measured with
 * getrusage; 8-12 us each in this VM). Now SQLite is
 * $(NSSDIR)/scimbridge/libscimbridge-sqlite.so (c/sqlite_table.c, which
 * exports only this table), and sql.c's sqlite_load() dlopens it on the
 * first SQL call: enumeration (getpwent, getgrent), and snapshots the
 * index cannot answer.
 *
 * The module (and only it: -DSCIM_SQLITE_DLOPEN) reads the sqlite3_*
 * names below as calls through the table (reader.h); syncd (cgo), the
 * PAM and SPANK modules and the test tools call SQLite directly, as
 * before. A call added to the reader but not to this list fails the
 * module's link (-z defs: no sqlite3_* symbol may stay undefined), so
 * the list cannot fall behind silently.
 */
#ifndef SCIM_SQLITE_API_H
#define SCIM_SQLITE_API_H

#include <sqlite3.h>

/* Bumped whenever SCIM_SQLITE_CALLS changes: the module refuses a
 * library whose table has another version or size (an upgrade that
 * replaced one file but not the other). */
#define SCIM_SQLITE_API_VERSION 1
#define SCIM_SQLITE_API_SYMBOL "scimbridge_sqlite_api_v1"

/* X(return type, name after "sqlite3_", parameters) */
#define SCIM_SQLITE_CALLS(X)                                                  \
	X(int, initialize, (void))                                            \
	X(int, open_v2, (const char *, sqlite3 **, int, const char *))        \
	X(int, close_v2, (sqlite3 *))                                         \
	X(const char *, errmsg, (sqlite3 *))                                  \
	X(const char *, errstr, (int))                                        \
	X(int, db_config, (sqlite3 *, int, ...))                              \
	X(int, file_control, (sqlite3 *, const char *, int, void *))          \
	X(void, progress_handler, (sqlite3 *, int, int (*)(void *), void *))  \
	X(int, exec, (sqlite3 *, const char *,                                \
		      int (*)(void *, int, char **, char **), void *, char **)) \
	X(int, prepare_v2, (sqlite3 *, const char *, int, sqlite3_stmt **,    \
			    const char **))                                   \
	X(int, prepare_v3, (sqlite3 *, const char *, int, unsigned int,       \
			    sqlite3_stmt **, const char **))                  \
	X(int, step, (sqlite3_stmt *))                                        \
	X(int, reset, (sqlite3_stmt *))                                       \
	X(int, clear_bindings, (sqlite3_stmt *))                              \
	X(int, finalize, (sqlite3_stmt *))                                    \
	X(int, bind_text, (sqlite3_stmt *, int, const char *, int,            \
			   void (*)(void *)))                                 \
	X(int, bind_int64, (sqlite3_stmt *, int, sqlite3_int64))              \
	X(int, column_int, (sqlite3_stmt *, int))                             \
	X(sqlite3_int64, column_int64, (sqlite3_stmt *, int))                 \
	X(const unsigned char *, column_text, (sqlite3_stmt *, int))          \
	X(int, column_type, (sqlite3_stmt *, int))

struct scim_sqlite_api {
	unsigned version; /* SCIM_SQLITE_API_VERSION */
	unsigned size;    /* sizeof(struct scim_sqlite_api) */
#define SCIM_SQLITE_FIELD(ret, name, params) ret (*name) params;
	SCIM_SQLITE_CALLS(SCIM_SQLITE_FIELD)
#undef SCIM_SQLITE_FIELD
};

#endif /* SCIM_SQLITE_API_H */
