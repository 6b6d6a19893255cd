/*
 * scimcache.h - the one reader of the scimbridge cache snapshot.
 *
 * Compiled into libnss_scim.so.2, pam_scim.so and spank_scim.so, and bound
 * into Go (syncd/cache) so that syncd verifies every snapshot with the same
 * code the nodes run. It never touches the network, starts no threads, and
 * is safe across fork(): each handle reopens in a child.
 *
 * A replaced snapshot (new device, inode or size at the path; never an
 * mtime/ctime-only change: syncd touches the live file after every
 * successful poll, see scim_cache_mtime) is noticed
 * by checking the path at most once a second per handle: a long-running
 * process answers from the previous file for up to a second after a
 * rename, a new handle always opens the current file, and
 * scim_cache_check() checks at once. Without a usable file each call
 * stat()s the path, so a snapshot that appears (or replaces an unusable
 * one) is used at the next call; an unusable file that stays in place is
 * reopened at most once a second (its last error is the answer between
 * tries). The file is read through mmap; like
 * immutable=1 this relies on the writer's rule that a published file is
 * never modified in place (truncating one under a reader could fault it).
 *
 * Every lookup copies its result into caller memory. Strings in the
 * returned structs point into the caller's buffer. A buffer that is too
 * small gives SCIM_ERANGE and changes nothing the caller can rely on; the
 * same call with a larger buffer then succeeds (glibc's NSS retry loop).
 *
 * Thread safety: a handle may be shared by threads. passwd, group and
 * initgroups lookups answered from the NSS index run on many threads at
 * once, without a lock; every other call, on every handle of the process,
 * is serialised by the reader's one lock, which also covers every SQLite
 * call: the modules link a private SQLite built without mutexes
 * (c/sqlite_private.c), and the lock is taken before fork and
 * re-initialised in the child.
 *
 * The same key asked again of a handle (passwd and group by name or id)
 * is answered from a copy of the last answer while the file stays the
 * same; a handle also keeps one read transaction open on its immutable
 * file. Both end when the file is reopened.
 *
 * No call answers below the floor: a user or group row with an id below
 * min_id (reader.conf, default SCIM_DEFAULT_MIN_ID, at least 1: never
 * root's 0) or 2^32-1 ((uid_t)-1, "no id"), and the name "root", are
 * treated as absent (SCIM_NOTFOUND; SCIM_UNAVAIL still when the snapshot
 * is unusable), in lookups, walks and group lists; so is a user whose
 * primary gid is one of those ids (in every user call: passwd, active,
 * groups, keys), and membership in such a gid (scim_user_groups,
 * scim_user_in_group). syncd's validation never writes them; a damaged or
 * hand-made file must not make anyone root, or a member of a system group
 * (sudo 27, shadow 42, disk 6), through NSS, PAM or SPANK either. NSS
 * returns NOTFOUND for them, so "scim [NOTFOUND=return] files" still
 * answers root and system accounts from files only when the snapshot is
 * unusable (UNAVAIL); list scim after files.
 *
 * Trust: the snapshot file and its directory must be owned by root and
 * not group/world-writable (both ends of a symlink); otherwise the handle
 * answers SCIM_UNAVAIL and logs why to syslog (LOG_AUTHPRIV, once per
 * handle and reason). So does a reader.conf that exists but is
 * unreadable, not root-owned, group/world-writable or malformed; a
 * missing reader.conf means the compiled defaults.
 */
#ifndef SCIMCACHE_H
#define SCIMCACHE_H

#include <grp.h>
#include <pwd.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The snapshot schemas this reader understands (meta.schema_version and
 * the header's user_version): SCIM_SCHEMA_VERSION_MIN to
 * SCIM_SCHEMA_VERSION. Version 3 (syncd/snapshot/schema.sql, index.go):
 * groups.members may be NULL, meaning the group's members are its
 * memberships rows (a list longer than 1,000 bytes), and the NSS index
 * keeps such a list in pieces. A version 2 reader would answer those
 * groups with no members, so it refuses a version 3 file (SCIM_UNAVAIL;
 * a node's mirror of an older syncd keeps its last snapshot instead):
 * upgrade the nodes before the head. This reader reads both. */
#define SCIM_SCHEMA_VERSION 3
#define SCIM_SCHEMA_VERSION_MIN 2

/* Compiled defaults; they may be changed only by a root-owned, not
 * group/world-writable config file (never by the environment: setuid
 * programs load these modules). Its lines: "cache_path = /abs/path",
 * "min_id = N" (1..4294967294), blank lines and "# comments"; anything
 * else makes every handle SCIM_UNAVAIL. */
#ifndef SCIM_DEFAULT_CACHE_PATH
#define SCIM_DEFAULT_CACHE_PATH "/var/lib/scimbridge/cache.db"
#endif
#ifndef SCIM_DEFAULT_MIN_ID
#define SCIM_DEFAULT_MIN_ID 1000
#endif
#ifndef SCIM_READER_CONFIG_PATH
#define SCIM_READER_CONFIG_PATH "/etc/scimbridge/reader.conf"
#endif

enum scim_status {
	SCIM_OK = 0,
	SCIM_NOTFOUND = 1,   /* the snapshot is good and has no such entry */
	SCIM_ERANGE = 2,     /* the caller's buffer is too small: retry larger */
	SCIM_UNAVAIL = 3,    /* no usable snapshot: missing, unreadable,
	                        corrupt, or an unknown schema version */
};

struct scim_cache;

/* Opens a handle on path (NULL: the configured or compiled default). The
 * file itself is opened lazily on first use, so a handle on a missing file
 * is valid and answers SCIM_UNAVAIL until the file appears. Returns NULL
 * only when out of memory. */
struct scim_cache *scim_cache_new(const char *path);
void scim_cache_free(struct scim_cache *c);

/* The path the modules use: SCIM_READER_CONFIG_PATH's cache_path, else
 * the default. Copies into buf; returns 0, or -1 if it does not fit or
 * reader.conf is unusable (buf then holds the default; a handle on any
 * path answers SCIM_UNAVAIL and scim_cache_error says why). */
int scim_configured_path(char *buf, size_t buflen);

/* Forces a check now (stat the path; open or reopen); SCIM_OK when a
 * usable snapshot of SCIM_SCHEMA_VERSION is open. Lookups do this
 * implicitly, at most once a second. Usable means:
 * a regular file whose SQLite header's page count matches its size (not
 * truncated), the snapshot's application_id, the six tables as plain
 * tables, meta.schema_version from SCIM_SCHEMA_VERSION_MIN to
 * SCIM_SCHEMA_VERSION (the same as the header's user_version), and every query
 * of this reader prepares, and every overflow link of the NSS index (read
 * with pread, 128 KiB at a time: the check maps none of the file). A
 * lookup's open checks only what costs O(1): the header (size, page
 * count, application_id, user_version) and, when the file has one, the
 * NSS index's place and header (its schema_version included); passwd,
 * group and initgroups lookups are then answered from the index without
 * SQL. The first call that needs SQL checks the tables and
 * meta.schema_version, and each query is prepared when first needed (an
 * unusable one then makes the file unusable, as here). */
int scim_cache_check(struct scim_cache *c);

/* 1 if the open snapshot has a usable NSS index (passwd, group and
 * initgroups by name and id answered without SQL; table nss_index, layout
 * in syncd/snapshot/index.go), 0 if it is read through SQL only (older
 * writers, hand-made files) or is unusable. */
int scim_cache_indexed(struct scim_cache *c);

/* Last error text of this handle (static storage inside the handle; for
 * logs and for syncd's verification messages). */
const char *scim_cache_error(struct scim_cache *c);

/* The mtime of the file at the handle's path, stat()ed now (the open
 * snapshot is reopened first if it was replaced): the time of syncd's
 * last successful contact with the identity source (syncd sets it after
 * every successful poll, changed or not; a mirror node sets it from its
 * manifest). The gates' staleness is now - this. SCIM_UNAVAIL when there
 * is no usable snapshot. */
int scim_cache_mtime(struct scim_cache *c, struct timespec *mtime);

/* --- passwd ------------------------------------------------------------ */
int scim_getpwnam(struct scim_cache *c, const char *name, struct passwd *pw,
		  char *buf, size_t buflen);
int scim_getpwuid(struct scim_cache *c, uid_t uid, struct passwd *pw,
		  char *buf, size_t buflen);
/* Enumeration by keyset: the first entry with uid > *pos (start with
 * *pos = -1). On SCIM_OK *pos is advanced to the returned uid; on any other
 * result it is unchanged, so ERANGE retries return the same entry and a
 * replaced snapshot mid-walk neither repeats nor skips surviving entries.
 * Every walk (nextpw, nextgr, next_assoc) strictly advances: a corrupt file
 * whose keys come back out of order gives SCIM_UNAVAIL, never a loop. */
int scim_nextpw(struct scim_cache *c, int64_t *pos, struct passwd *pw,
		char *buf, size_t buflen);

/* active: 1 enabled, 0 disabled (active=false at the source). */
int scim_user_active(struct scim_cache *c, const char *name, int *active);

/* --- group ------------------------------------------------------------- */
int scim_getgrnam(struct scim_cache *c, const char *name, struct group *gr,
		  char *buf, size_t buflen);
int scim_getgrgid(struct scim_cache *c, gid_t gid, struct group *gr,
		  char *buf, size_t buflen);
int scim_nextgr(struct scim_cache *c, int64_t *pos, struct group *gr,
		char *buf, size_t buflen);

/* Supplementary groups of user (by name), ascending gid, excluding none:
 * one read of the user's user_groups row (schema version 2).
 * Writes at most max gids into gids and sets *count to the total number;
 * returns SCIM_ERANGE if *count > max (call again with a larger array). */
int scim_user_groups(struct scim_cache *c, const char *user, gid_t *gids,
		     size_t max, size_t *count);

/* *member = 1 if user is listed in group (by names). */
int scim_user_in_group(struct scim_cache *c, const char *user,
		       const char *group, int *member);

/* --- ssh keys ---------------------------------------------------------- */
/* All keys of user, each followed by '\n', NUL-terminated, in source
 * order. SCIM_NOTFOUND if the user does not exist; SCIM_OK with "" if the
 * user has no keys. */
int scim_user_keys(struct scim_cache *c, const char *user, char *buf,
		   size_t buflen);

/* --- slurm associations ------------------------------------------------ */
struct scim_assoc {
	const char *account;
	const char *qos;         /* comma-separated */
	const char *default_qos;
	int is_default;
	int blocked;
};
/* Counts user's associations that are not blocked, optionally only for
 * account (NULL: any). SCIM_OK with *count = 0 when there are none. */
int scim_assoc_count(struct scim_cache *c, const char *user,
		     const char *account, int *count);
/* Enumerates user's associations by account name: the first account
 * greater than after ("" to start). Strings point into buf. */
int scim_next_assoc(struct scim_cache *c, const char *user, const char *after,
		    struct scim_assoc *a, char *buf, size_t buflen);

/* --- meta -------------------------------------------------------------- */
/* Copies meta.value for key into buf. */
int scim_meta(struct scim_cache *c, const char *key, char *buf, size_t buflen);

/* --- the node's own accounts ------------------------------------------- */
/* 1 if a line of group_file (this host's /etc/group, read directly, not
 * through NSS) lists name as a member, ignoring case, with that group's
 * name copied into buf; else 0. A SCIM user so listed would get that
 * local group at login and in jobs (`files` answers initgroups): syncd
 * rejects such users on the head, and pam_scim and spank_scim refuse them
 * on a node whose own file lists them. */
int scim_local_group_member(const char *group_file, const char *name,
			    char *buf, size_t buflen);

#ifdef __cplusplus
}
#endif
#endif /* SCIMCACHE_H */
