/*
 * nss_scim.c - glibc NSS module "scim": passwd, group and initgroups from
 * the scimbridge snapshot, through the one reader in c/ (include/scimcache.h).
 *
 * No network, no threads, no environment: the answer comes from a local
 * SQLite file or the module says UNAVAIL and glibc moves on (nsswitch.conf
 * lists scim after files, so root and system accounts never depend on it).
 *
 * Only the _nss_scim_* entry points are exported; the reader is compiled in
 * with hidden visibility.
 */
#include <errno.h>
#include <grp.h>
#include <nss.h>
#include <pthread.h>
#include <pwd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scimcache.h"

#define EXPORT __attribute__((visibility("default")))

/* One handle per process, opened on first use: most processes that load
 * the module never ask it anything. Its path (reader.conf) is read once;
 * the file behind it is followed across renames by the reader. */
static struct scim_cache *cache;

/* Enumeration cursors (getpwent/getgrent are per process in glibc). */
static pthread_mutex_t ent_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t pw_pos = -1, gr_pos = -1;

/* A thread inside getpwent holds ent_mu while it waits for the reader's
 * handle lock, so fork must take ent_mu first. Handlers registered later
 * run their prepare step earlier, which is why these are registered after
 * the reader's own: constructor priority 102 against the reader's 101.
 * Registered at load, never in a pthread_once (see register_atfork in
 * c/common.c): setpwent takes ent_mu before any lookup has run. */
static void ent_prepare(void) { pthread_mutex_lock(&ent_mu); }
static void ent_parent(void) { pthread_mutex_unlock(&ent_mu); }
static void ent_child(void) { pthread_mutex_init(&ent_mu, NULL); }

__attribute__((constructor(102))) static void register_ent_atfork(void)
{
	pthread_atfork(ent_prepare, ent_parent, ent_child);
}

/* The handle, made by the first call. Not pthread_once: glibc's wakes
 * the futex of every once it completes (a system call in every new
 * process's first lookup, issue 22), and a child forked while another
 * thread was inside it would run it again. Two threads making it at once
 * each make one; the one that installs second frees its own (nothing has
 * used it), so no lock and no fork hazard. A handle that could not be
 * made (out of memory) is tried again at the next call. */
static struct scim_cache *handle(void)
{
	struct scim_cache *c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
	if (c)
		return c;
	struct scim_cache *mine = scim_cache_new(NULL), *none = NULL;
	if (!mine)
		return NULL;
	if (__atomic_compare_exchange_n(&cache, &none, mine, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return mine;
	scim_cache_free(mine);
	return none;
}

static enum nss_status status(int st, int *errnop)
{
	switch (st) {
	case SCIM_OK:
		return NSS_STATUS_SUCCESS;
	case SCIM_ERANGE:
		*errnop = ERANGE;
		return NSS_STATUS_TRYAGAIN;
	case SCIM_NOTFOUND:
		*errnop = ENOENT;
		return NSS_STATUS_NOTFOUND;
	default:
		*errnop = ENOENT;
		return NSS_STATUS_UNAVAIL;
	}
}

/* --- passwd ------------------------------------------------------------ */

EXPORT enum nss_status _nss_scim_getpwnam_r(const char *name,
					    struct passwd *pw, char *buf,
					    size_t buflen, int *errnop)
{
	return status(scim_getpwnam(handle(), name, pw, buf, buflen), errnop);
}

EXPORT enum nss_status _nss_scim_getpwuid_r(uid_t uid, struct passwd *pw,
					    char *buf, size_t buflen,
					    int *errnop)
{
	return status(scim_getpwuid(handle(), uid, pw, buf, buflen), errnop);
}

EXPORT enum nss_status _nss_scim_setpwent(int stayopen)
{
	(void)stayopen;
	pthread_mutex_lock(&ent_mu);
	pw_pos = -1;
	pthread_mutex_unlock(&ent_mu);
	return NSS_STATUS_SUCCESS;
}

EXPORT enum nss_status _nss_scim_endpwent(void)
{
	return _nss_scim_setpwent(0);
}

/* Keyset walk: the cursor is the last uid returned and moves only on
 * success, so an ERANGE retry gets the same entry and a snapshot replaced
 * mid-walk neither repeats nor skips users present in both. */
EXPORT enum nss_status _nss_scim_getpwent_r(struct passwd *pw, char *buf,
					    size_t buflen, int *errnop)
{
	struct scim_cache *c = handle();
	pthread_mutex_lock(&ent_mu);
	int st = scim_nextpw(c, &pw_pos, pw, buf, buflen);
	pthread_mutex_unlock(&ent_mu);
	return status(st, errnop);
}

/* --- group ------------------------------------------------------------- */

EXPORT enum nss_status _nss_scim_getgrnam_r(const char *name,
					    struct group *gr, char *buf,
					    size_t buflen, int *errnop)
{
	return status(scim_getgrnam(handle(), name, gr, buf, buflen), errnop);
}

EXPORT enum nss_status _nss_scim_getgrgid_r(gid_t gid, struct group *gr,
					    char *buf, size_t buflen,
					    int *errnop)
{
	return status(scim_getgrgid(handle(), gid, gr, buf, buflen), errnop);
}

EXPORT enum nss_status _nss_scim_setgrent(int stayopen)
{
	(void)stayopen;
	pthread_mutex_lock(&ent_mu);
	gr_pos = -1;
	pthread_mutex_unlock(&ent_mu);
	return NSS_STATUS_SUCCESS;
}

EXPORT enum nss_status _nss_scim_endgrent(void)
{
	return _nss_scim_setgrent(0);
}

EXPORT enum nss_status _nss_scim_getgrent_r(struct group *gr, char *buf,
					    size_t buflen, int *errnop)
{
	struct scim_cache *c = handle();
	pthread_mutex_lock(&ent_mu);
	int st = scim_nextgr(c, &gr_pos, gr, buf, buflen);
	pthread_mutex_unlock(&ent_mu);
	return status(st, errnop);
}

/* --- initgroups -------------------------------------------------------- */

/* At most this many gids per user come from this module: the kernel's
 * NGROUPS_MAX, so no process can hold more (glibc's initgroups asks for
 * no more than that either). A user in more groups gets the lowest
 * SCIM_MAX_GROUPS gids, also in getgrouplist and id; the reader walks the
 * user's rows once more to count them, nothing else. It also bounds the
 * memory a damaged snapshot can make a lookup allocate (256 KiB). */
#define SCIM_MAX_GROUPS 65536

static int gid_cmp(const void *a, const void *b)
{
	gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;
	return x < y ? -1 : x > y;
}

/* Appends user's groups (except `group`, the primary gid the caller
 * already has, and gids already collected from earlier modules) to
 * *groupsp, growing it as glibc expects but never beyond limit (> 0).
 * One index range scan instead of walking every group, which is what
 * makes id/login fast with many groups.
 *
 * Linear: the reader returns each gid once, in ascending order, so a gid
 * repeats only what an earlier module put in *groupsp; those (usually one
 * or two) are sorted once and looked up by bisection. Comparing each new
 * gid with everything collected so far took 3.5 s for a user in 70,000
 * groups. The array grows by doubling, as glibc's own modules do. */
EXPORT enum nss_status _nss_scim_initgroups_dyn(const char *user, gid_t group,
						long int *start,
						long int *size,
						gid_t **groupsp,
						long int limit, int *errnop)
{
	struct scim_cache *c = handle();
	gid_t stackbuf[256];
	gid_t *gids = stackbuf;
	size_t n = 0;
	int st = scim_user_groups(c, user, gids, 256, &n);
	/* The count can change if the snapshot is replaced between calls:
	 * retry a bounded number of times. Past SCIM_MAX_GROUPS the first
	 * SCIM_MAX_GROUPS gids (ascending) are what we keep. */
	for (int tries = 0; st == SCIM_ERANGE && tries < 4; tries++) {
		if (gids != stackbuf)
			free(gids);
		size_t want = n < SCIM_MAX_GROUPS - 16 ? n + 16 : SCIM_MAX_GROUPS;
		gids = malloc(want * sizeof(*gids));
		if (!gids) {
			*errnop = ENOMEM;
			return NSS_STATUS_TRYAGAIN;
		}
		st = scim_user_groups(c, user, gids, want, &n);
		if (st == SCIM_ERANGE && want == SCIM_MAX_GROUPS) {
			st = SCIM_OK;
			n = SCIM_MAX_GROUPS;
		}
	}
	if (st != SCIM_OK) {
		if (gids != stackbuf)
			free(gids);
		if (st == SCIM_ERANGE) { /* kept growing: treat as transient */
			*errnop = EAGAIN;
			return NSS_STATUS_TRYAGAIN;
		}
		return status(st, errnop);
	}

	/* What earlier modules (files) already collected, sorted. */
	long int k0 = *start > 0 ? *start : 0;
	gid_t small[64], *prev = small;
	if (k0 > (long int)(sizeof(small) / sizeof(*small))) {
		prev = malloc((size_t)k0 * sizeof(*prev));
		if (!prev) {
			if (gids != stackbuf)
				free(gids);
			*errnop = ENOMEM;
			return NSS_STATUS_TRYAGAIN;
		}
	}
	if (k0 > 0) {
		memcpy(prev, *groupsp, (size_t)k0 * sizeof(*prev));
		qsort(prev, (size_t)k0, sizeof(*prev), gid_cmp);
	}

	enum nss_status ret = NSS_STATUS_SUCCESS;
	for (size_t i = 0; i < n; i++) {
		gid_t g = gids[i];
		if (g == group || (i > 0 && g == gids[i - 1]) ||
		    (k0 > 0 && bsearch(&g, prev, (size_t)k0, sizeof(*prev), gid_cmp)))
			continue;
		if (*start == *size) {
			if (limit > 0 && *size >= limit)
				break; /* glibc's NGROUPS_MAX: the rest is dropped */
			long int newsize = *size > 0 ? 2 * *size : 16;
			if (limit > 0 && newsize > limit)
				newsize = limit;
			gid_t *ng = realloc(*groupsp, (size_t)newsize * sizeof(**groupsp));
			if (!ng) {
				*errnop = ENOMEM;
				ret = NSS_STATUS_TRYAGAIN;
				break;
			}
			*groupsp = ng;
			*size = newsize;
		}
		(*groupsp)[(*start)++] = g;
	}
	if (prev != small)
		free(prev);
	if (gids != stackbuf)
		free(gids);
	return ret;
}
