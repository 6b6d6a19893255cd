/*
 * pam_scim.c - account management for users of the scimbridge cache.
 *
 * pam_sm_acct_mgmt answers from the local snapshot only (no network):
 *
 *   user not in the snapshot          PAM_IGNORE (not ours: local, LDAP...)
 *   name shadowed by another account  PAM_IGNORE (NSS resolves the name to
 *                                     a different uid, e.g. a local user)
 *   disabled at the source            PAM_ACCT_EXPIRED
 *   not in any allow_groups group     PAM_PERM_DENIED
 *   active (and allowed)              PAM_SUCCESS
 *
 * A disabled account gives PAM_ACCT_EXPIRED rather than PAM_PERM_DENIED:
 * active=false is the identity provider's way of retiring or suspending an
 * account, which is what "expired" means to PAM callers (pam_unix answers
 * the same for an expired shadow entry), and it keeps the two refusals
 * apart in logs. Both are refusals; the user is told why through the
 * conversation (PAM_ERROR_MSG), unless the caller passed PAM_SILENT.
 *
 * Group membership is what the identity provider lists in the group
 * (the snapshot's memberships), the same rule scim-keys applies.
 *
 * When the snapshot cannot be read (missing, corrupt, unknown schema), we
 * cannot tell whether a user is ours:
 *
 *   unavailable=open (default)  PAM_IGNORE for everyone. Without a usable
 *       snapshot libnss_scim resolves no SCIM account either, so SCIM users
 *       cannot log in anyway; failing open keeps root and other local
 *       accounts able to log in and repair the node.
 *   unavailable=closed          PAM_AUTHINFO_UNAVAIL for every user that
 *       is not in /etc/passwd (local accounts still get PAM_IGNORE). For
 *       nodes where a name service cache (nscd, sssd) could still resolve
 *       SCIM users while the snapshot is gone.
 *
 * Options (pam_succeed_if style; an unknown option is a configuration
 * error, PAM_SERVICE_ERR, rather than a silently wider policy):
 *
 *   cache=/abs/path             snapshot path (default: reader.conf, then
 *                               the compiled default)
 *   allow_groups=g1,g2          only members of one of these may log in;
 *                               absent or empty: any active user
 *   unavailable=open|closed     see above
 *   max_age=SECONDS             stale when the live snapshot file's mtime
 *                               is older (0, the default: never). syncd
 *                               sets it at every successful poll, changed
 *                               or not (a mirror node, from its manifest):
 *                               it is the age of the last contact with the
 *                               identity source, so a quiet directory with
 *                               a healthy syncd is never stale. Stale under
 *                               unavailable=closed: refused like an
 *                               unusable snapshot (local users still
 *                               PAM_IGNORE); under open: decided from the
 *                               snapshot all the same (disabled users stay
 *                               refused), with a LOG_WARNING line.
 *   debug                       log decisions via pam_syslog
 *
 * Only the account stack does anything. Listed in the auth, session or
 * password stack by mistake, pam_scim answers PAM_IGNORE there and logs
 * (LOG_ERR) that it belongs in the account stack: it never authenticates
 * anyone, and does not fail every login either (without the entry points
 * libpam answers PAM_MODULE_UNKNOWN, "Module is unknown", which under
 * "required" locked root out of su and sshd).
 *
 * Home directories are not this module's job: use pam_mkhomedir in the
 * session stack (see tests/login/run.sh). It is maintained with Linux-PAM,
 * works for any NSS user, copies /etc/skel, creates missing parents, and
 * never touches a directory that already exists, so a second root-running
 * file copier here would only add risk.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>

#define PAM_SM_ACCOUNT
#define PAM_SM_AUTH
#define PAM_SM_SESSION
#define PAM_SM_PASSWORD
#include <security/pam_ext.h>
#include <security/pam_modules.h>
#include <security/pam_modutil.h>

#include "scimcache.h"

#define MAX_ALLOW_GROUPS 32
#define LOCAL_PASSWD "/etc/passwd"
#define LOCAL_GROUP "/etc/group"

struct options {
	const char *cache;               /* NULL: configured/default path */
	char *groups_buf;                /* owned copy of allow_groups */
	const char *groups[MAX_ALLOW_GROUPS];
	size_t ngroups;
	int closed;
	int debug;
	long max_age;
};

static void free_options(struct options *o)
{
	free(o->groups_buf);
	o->groups_buf = NULL;
}

/* Splits a comma-separated list into o->groups; empty items are skipped. */
static int parse_groups(pam_handle_t *pamh, struct options *o, const char *v)
{
	char *save = NULL, *tok;

	free(o->groups_buf);
	o->ngroups = 0;
	o->groups_buf = strdup(v);
	if (o->groups_buf == NULL)
		return PAM_BUF_ERR;
	for (tok = strtok_r(o->groups_buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		if (*tok == '\0')
			continue;
		if (o->ngroups == MAX_ALLOW_GROUPS) {
			pam_syslog(pamh, LOG_ERR,
				   "allow_groups: more than %d groups",
				   MAX_ALLOW_GROUPS);
			return PAM_SERVICE_ERR;
		}
		o->groups[o->ngroups++] = tok;
	}
	return PAM_SUCCESS;
}

static int parse_options(pam_handle_t *pamh, int argc, const char **argv,
			 struct options *o)
{
	int i, r;

	memset(o, 0, sizeof(*o));
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (strncmp(a, "cache=", 6) == 0) {
			if (a[6] != '/') {
				pam_syslog(pamh, LOG_ERR,
					   "cache= needs an absolute path: %s", a);
				return PAM_SERVICE_ERR;
			}
			o->cache = a + 6;
		} else if (strncmp(a, "allow_groups=", 13) == 0) {
			r = parse_groups(pamh, o, a + 13);
			if (r != PAM_SUCCESS)
				return r;
		} else if (strcmp(a, "unavailable=open") == 0) {
			o->closed = 0;
		} else if (strcmp(a, "unavailable=closed") == 0) {
			o->closed = 1;
		} else if (strncmp(a, "max_age=", 8) == 0) {
			char *end;
			errno = 0;
			long n = strtol(a + 8, &end, 10);
			if (errno || end == a + 8 || *end || n < 0) {
				pam_syslog(pamh, LOG_ERR,
					   "max_age= needs seconds (0: never "
					   "stale): %s", a);
				return PAM_SERVICE_ERR;
			}
			o->max_age = n;
		} else if (strcmp(a, "debug") == 0) {
			o->debug = 1;
		} else {
			pam_syslog(pamh, LOG_ERR, "unknown option: %s", a);
			return PAM_SERVICE_ERR;
		}
	}
	return PAM_SUCCESS;
}

/* 1 if name has an entry in /etc/passwd itself (not via NSS). */
static int is_local_user(const char *name)
{
	struct passwd *pw;
	int found = 0;
	FILE *f = fopen(LOCAL_PASSWD, "re");

	if (f == NULL)
		return 0;
	while ((pw = fgetpwent(f)) != NULL) {
		if (strcmp(pw->pw_name, name) == 0) {
			found = 1;
			break;
		}
	}
	fclose(f);
	return found;
}

/* Tells the user why, through the conversation, unless PAM_SILENT. */
static void tell(pam_handle_t *pamh, int flags, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void tell(pam_handle_t *pamh, int flags, const char *fmt, ...)
{
	va_list ap;

	if (flags & PAM_SILENT)
		return;
	va_start(ap, fmt);
	pam_verror(pamh, fmt, ap);
	va_end(ap);
}

static int unavailable(pam_handle_t *pamh, int flags, const struct options *o,
		       struct scim_cache *c, const char *user)
{
	if (!o->closed) {
		if (o->debug)
			pam_syslog(pamh, LOG_DEBUG,
				   "cache unavailable (%s), ignoring %s",
				   scim_cache_error(c), user);
		return PAM_IGNORE;
	}
	if (is_local_user(user)) {
		if (o->debug)
			pam_syslog(pamh, LOG_DEBUG,
				   "cache unavailable (%s), %s is local",
				   scim_cache_error(c), user);
		return PAM_IGNORE;
	}
	pam_syslog(pamh, LOG_NOTICE,
		   "denying %s: cache unavailable (%s), unavailable=closed",
		   user, scim_cache_error(c));
	tell(pamh, flags, "Access denied: the account cache is unavailable");
	return PAM_AUTHINFO_UNAVAIL;
}

/* Joins the allowed groups as "a, b, c" for the user's message. */
static void join_groups(const struct options *o, char *buf, size_t len)
{
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < o->ngroups && n < len; i++) {
		int w = snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
				 o->groups[i]);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

/* scim_getpwnam with a buffer that grows on SCIM_ERANGE (up to 1 MiB). */
static int lookup_user(struct scim_cache *c, const char *user,
		       struct passwd *pw, char **bufp)
{
	size_t len = 4096;
	int r;

	for (;;) {
		char *b = realloc(*bufp, len);
		if (b == NULL)
			return -1;
		*bufp = b;
		r = scim_getpwnam(c, user, pw, b, len);
		if (r != SCIM_ERANGE || len >= (1u << 20))
			return r;
		len *= 2;
	}
}

/* The policy for a user the snapshot has, with uid suid. */
static int decide(pam_handle_t *pamh, int flags, const struct options *o,
		  struct scim_cache *c, const char *user, uid_t suid)
{
	const struct passwd *sys;
	char list[1024];
	int r, active = 0, member = 0;
	size_t i;

	/*
	 * Police only the account the system actually logs in: if the name
	 * resolves to another uid (a local account listed before scim in
	 * nsswitch.conf), that account is not ours.
	 */
	sys = pam_modutil_getpwnam(pamh, user);
	if (sys != NULL && sys->pw_uid != suid) {
		if (o->debug)
			pam_syslog(pamh, LOG_DEBUG,
				   "%s: resolves to uid %lu, not the "
				   "snapshot's %lu; ignoring",
				   user, (unsigned long)sys->pw_uid,
				   (unsigned long)suid);
		return PAM_IGNORE;
	}

	r = scim_user_active(c, user, &active);
	if (r == SCIM_UNAVAIL)
		return unavailable(pamh, flags, o, c, user);
	if (r != SCIM_OK) {
		pam_syslog(pamh, LOG_ERR, "%s: active lookup failed (%d)",
			   user, r);
		return PAM_SYSTEM_ERR;
	}
	if (!active) {
		pam_syslog(pamh, LOG_NOTICE,
			   "denying %s: disabled in the identity provider",
			   user);
		tell(pamh, flags,
		     "Access denied: account %s is disabled in the identity "
		     "provider", user);
		return PAM_ACCT_EXPIRED;
	}

	if (scim_local_group_member(LOCAL_GROUP, user, list, sizeof(list))) {
		pam_syslog(pamh, LOG_ERR,
			   "denying %s: the SCIM user is listed as a member of "
			   "local group %s in " LOCAL_GROUP " on this node; "
			   "remove it from that line (syncd status names it)",
			   user, list);
		tell(pamh, flags,
		     "Access denied: account %s clashes with a local group "
		     "on this host; ask your admin", user);
		return PAM_PERM_DENIED;
	}

	if (o->ngroups == 0) {
		if (o->debug)
			pam_syslog(pamh, LOG_DEBUG, "%s: active, allowed",
				   user);
		return PAM_SUCCESS;
	}
	for (i = 0; i < o->ngroups; i++) {
		r = scim_user_in_group(c, user, o->groups[i], &member);
		if (r == SCIM_UNAVAIL)
			return unavailable(pamh, flags, o, c, user);
		if (r == SCIM_OK && member) {
			if (o->debug)
				pam_syslog(pamh, LOG_DEBUG,
					   "%s: active, member of %s", user,
					   o->groups[i]);
			return PAM_SUCCESS;
		}
		/* SCIM_NOTFOUND: no such group in the snapshot; not a member. */
	}
	join_groups(o, list, sizeof(list));
	pam_syslog(pamh, LOG_NOTICE, "denying %s: not in an allowed group (%s)",
		   user, list);
	tell(pamh, flags,
	     "Access denied: account %s is not in an allowed group (%s)",
	     user, list);
	return PAM_PERM_DENIED;
}

/* Stale (max_age): closed refuses like an unusable snapshot; open goes
 * on with the snapshot's answers. PAM_SUCCESS to go on. */
static int check_stale(pam_handle_t *pamh, int flags, const struct options *o,
		       struct scim_cache *c, const char *user)
{
	struct timespec mt;
	if (o->max_age <= 0)
		return PAM_SUCCESS;
	if (scim_cache_mtime(c, &mt) != SCIM_OK)
		return unavailable(pamh, flags, o, c, user);
	long age = (long)(time(NULL) - mt.tv_sec);
	if (age <= o->max_age)
		return PAM_SUCCESS;
	if (!o->closed) {
		pam_syslog(pamh, LOG_WARNING,
			   "snapshot is stale (last contact with the identity "
			   "source %lds ago, max_age=%ld): deciding from it "
			   "all the same (unavailable=open)", age, o->max_age);
		return PAM_SUCCESS;
	}
	if (is_local_user(user))
		return PAM_IGNORE;
	pam_syslog(pamh, LOG_NOTICE,
		   "denying %s: snapshot is stale (last contact with the "
		   "identity source %lds ago, max_age=%ld), unavailable=closed",
		   user, age, o->max_age);
	tell(pamh, flags, "Access denied: the account cache is stale");
	return PAM_AUTHINFO_UNAVAIL;
}

static int check_account(pam_handle_t *pamh, int flags,
			 const struct options *o, struct scim_cache *c,
			 const char *user)
{
	struct passwd spw = {0};
	char *buf = NULL;
	int r = check_stale(pamh, flags, o, c, user);
	if (r != PAM_SUCCESS)
		return r;
	r = lookup_user(c, user, &spw, &buf);
	uid_t suid = spw.pw_uid;

	free(buf);
	switch (r) {
	case SCIM_OK:
		return decide(pamh, flags, o, c, user, suid);
	case SCIM_NOTFOUND:
		if (o->debug)
			pam_syslog(pamh, LOG_DEBUG, "%s: not in the snapshot",
				   user);
		return PAM_IGNORE;
	case SCIM_UNAVAIL:
		return unavailable(pamh, flags, o, c, user);
	case -1:
		return PAM_BUF_ERR;
	default:
		/* An entry over 1 MiB is not an account: refuse it. */
		pam_syslog(pamh, LOG_ERR, "%s: snapshot lookup failed (%d)",
			   user, r);
		return PAM_SYSTEM_ERR;
	}
}

/* The build hides every symbol (-fvisibility=hidden); PAM needs this one. */
__attribute__((visibility("default")))
int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc,
		     const char **argv)
{
	struct options o;
	struct scim_cache *c;
	const char *user = NULL;
	int r;

	r = parse_options(pamh, argc, argv, &o);
	if (r != PAM_SUCCESS) {
		free_options(&o);
		return r;
	}
	r = pam_get_user(pamh, &user, NULL);
	if (r == PAM_CONV_AGAIN) {
		/* The application will call again (Linux-PAM's rule for
		 * pam_get_user in a non-blocking conversation). */
		free_options(&o);
		return PAM_INCOMPLETE;
	}
	if (r != PAM_SUCCESS || user == NULL || *user == '\0') {
		pam_syslog(pamh, LOG_ERR, "cannot determine the user name");
		free_options(&o);
		return r == PAM_SUCCESS ? PAM_USER_UNKNOWN : r;
	}

	c = scim_cache_new(o.cache);
	if (c == NULL) {
		free_options(&o);
		return PAM_BUF_ERR;
	}
	r = check_account(pamh, flags, &o, c, user);
	scim_cache_free(c);
	free_options(&o);
	return r;
}

/*
 * The other stacks: pam_scim is an account module only. PAM_IGNORE, so
 * that a misplaced line neither grants anything nor fails every login,
 * and a LOG_ERR line naming the mistake.
 */
static int misplaced(pam_handle_t *pamh, const char *stack)
{
	pam_syslog(pamh, LOG_ERR,
		   "pam_scim is an account module: in the %s stack it does "
		   "nothing (PAM_IGNORE); list it as 'account' instead",
		   stack);
	return PAM_IGNORE;
}

__attribute__((visibility("default")))
int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc,
			const char **argv)
{
	(void)flags, (void)argc, (void)argv;
	return misplaced(pamh, "auth");
}

__attribute__((visibility("default")))
int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc,
		   const char **argv)
{
	(void)flags, (void)argc, (void)argv;
	return misplaced(pamh, "auth (setcred)");
}

__attribute__((visibility("default")))
int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc,
			const char **argv)
{
	(void)flags, (void)argc, (void)argv;
	return misplaced(pamh, "session");
}

__attribute__((visibility("default")))
int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc,
			 const char **argv)
{
	(void)flags, (void)argc, (void)argv;
	return misplaced(pamh, "session");
}

__attribute__((visibility("default")))
int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc,
		     const char **argv)
{
	(void)flags, (void)argc, (void)argv;
	return misplaced(pamh, "password");
}
