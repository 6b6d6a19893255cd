/*
 * spank_scim.c - refuse Slurm jobs of users the SCIM snapshot does not
 * provision, with a message that says why and what to do.
 *
 * Answers from the local snapshot only (the reader in c/scimcache.c): no
 * network, no slurmdbd call, so a job launch never waits on a directory.
 *
 * Where it checks (and why only there):
 *
 *   allocator (sbatch, salloc) and local (srun), in init_post_opt: the
 *     submitting user (getuid) must be in the snapshot, active, and have at
 *     least one association that is not blocked. Failing here stops the
 *     command before anything reaches slurmctld: no job id is used. The
 *     account is not visible in these contexts (-A is not exposed to SPANK).
 *   remote (slurmstepd), in task_init only: the job's user (S_JOB_UID) must
 *     be in the snapshot, active, and have an association with the job's
 *     account (SLURM_JOB_ACCOUNT from the job environment); a blocked one
 *     counts, so jobs that were running or pending when their association
 *     was blocked for removal still run. Failing task_init fails the job
 *     and leaves the node alone; failing any other remote callback drains
 *     the node, so no other remote callback ever fails.
 *
 * plugstack.conf:
 *
 *   required /path/spank_scim.so [option=value ...]
 *
 * required, not optional: Slurm ignores a failing callback of an optional
 * plugin (spank(8): optional plugins only cause a warning), so under
 * optional a refusal is printed and the job goes on anyway.
 *
 * Contexts: only allocator, local (init_post_opt) and remote (task_init)
 * do anything. In slurmd and job_script context (slurmd itself and its
 * prolog/epilog) nothing can fail, whatever the options, the user or the
 * snapshot: a failure there drains the node. sbatch --uid (root only)
 * passes the submit check as root; task_init then checks the job's uid.
 *
 *   cache=/abs/path        snapshot (default: reader.conf, then the
 *                          compiled default)
 *   mode=enforce|warn      warn: print the refusal as a warning, allow
 *   exempt_users=a,b       never checked (root and slurm_user always pass)
 *   exempt_uids=0,64030    never checked
 *   slurm_user=NAME        SlurmUser of slurm.conf (default: slurm)
 *   message=TEXT           appended to every refusal; the rest of the line
 *                          after message= is the text, so put it last
 *   missing=open|closed    when the snapshot is unusable or stale:
 *                          open (default) allows with a loud log line,
 *                          closed refuses
 *   max_age=SECONDS        stale when meta created_at is older (0: never)
 *
 * An unknown or malformed option refuses jobs in the checking callbacks
 * (the message names it): a typo must not quietly disable the check.
 */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#pragma GCC visibility push(default)
#include <slurm/spank.h>
SPANK_PLUGIN(scim, 1);
#pragma GCC visibility pop

#include "scimcache.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_EXEMPT 64
#define TAG "spank_scim: "

struct options {
	char cache[PATH_MAX];
	int warn;
	int missing_closed;
	long max_age;
	char exempt_users[1024];
	uid_t exempt_uids[MAX_EXEMPT];
	size_t n_uids;
	char slurm_user[64];
	char message[512];
	char error[256]; /* first configuration error, if any */
};

typedef int (*opt_parser)(struct options *o, const char *val);

static int set_str(char *dst, size_t len, const char *val)
{
	return snprintf(dst, len, "%s", val) < (int) len ? 0 : -1;
}

static int opt_cache(struct options *o, const char *v)
{
	return v[0] == '/' ? set_str(o->cache, sizeof(o->cache), v) : -1;
}

static int opt_mode(struct options *o, const char *v)
{
	if (!strcmp(v, "enforce") || !strcmp(v, "warn")) {
		o->warn = !strcmp(v, "warn");
		return 0;
	}
	return -1;
}

static int opt_missing(struct options *o, const char *v)
{
	if (!strcmp(v, "open") || !strcmp(v, "closed")) {
		o->missing_closed = !strcmp(v, "closed");
		return 0;
	}
	return -1;
}

static int opt_max_age(struct options *o, const char *v)
{
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno || *end || end == v || n < 0)
		return -1;
	o->max_age = n;
	return 0;
}

static int opt_exempt_users(struct options *o, const char *v)
{
	return set_str(o->exempt_users, sizeof(o->exempt_users), v);
}

static int opt_exempt_uids(struct options *o, const char *v)
{
	const char *p = v;
	while (*p) {
		char *end;
		errno = 0;
		unsigned long n = strtoul(p, &end, 10);
		if (errno || end == p || (*end && *end != ',') || n > UINT32_MAX - 1 ||
		    o->n_uids == MAX_EXEMPT)
			return -1;
		o->exempt_uids[o->n_uids++] = (uid_t) n;
		p = *end ? end + 1 : end;
	}
	return 0;
}

static int opt_slurm_user(struct options *o, const char *v)
{
	return set_str(o->slurm_user, sizeof(o->slurm_user), v);
}

static int opt_message(struct options *o, const char *v)
{
	return set_str(o->message, sizeof(o->message), v);
}

static const struct {
	const char *name;
	opt_parser parse;
} option_table[] = {
	{"cache", opt_cache},
	{"mode", opt_mode},
	{"missing", opt_missing},
	{"max_age", opt_max_age},
	{"exempt_users", opt_exempt_users},
	{"exempt_uids", opt_exempt_uids},
	{"slurm_user", opt_slurm_user},
	{"message", opt_message},
};

static void parse_options(struct options *o, int ac, char **av)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->slurm_user, sizeof(o->slurm_user), "slurm");
	for (int i = 0; i < ac; i++) {
		const char *eq = strchr(av[i], '=');
		size_t klen = eq ? (size_t) (eq - av[i]) : strlen(av[i]);
		size_t j, n = sizeof(option_table) / sizeof(option_table[0]);
		for (j = 0; j < n; j++)
			if (strlen(option_table[j].name) == klen &&
			    !strncmp(option_table[j].name, av[i], klen))
				break;
		if (j == n) {
			if (!o->error[0])
				snprintf(o->error, sizeof(o->error),
					 "unknown option \"%s\" in plugstack.conf", av[i]);
			continue;
		}
		if (!eq) {
			if (!o->error[0])
				snprintf(o->error, sizeof(o->error),
					 "plugstack.conf option \"%s\" needs a value (%s=...)",
					 av[i], option_table[j].name);
			continue;
		}
		if (!strcmp(option_table[j].name, "message")) {
			/* plugstack.conf splits on blanks: the rest of the line is the text. */
			char text[sizeof(o->message)];
			size_t len = (size_t) snprintf(text, sizeof(text), "%s", eq + 1);
			for (i++; i < ac && len < sizeof(text); i++)
				len += (size_t) snprintf(text + len, sizeof(text) - len, " %s", av[i]);
			len = strlen(text);
			/* it does not strip quotes either */
			if (len >= 2 && text[0] == '"' && text[len - 1] == '"') {
				text[len - 1] = '\0';
				opt_message(o, text + 1);
			} else {
				opt_message(o, text);
			}
			break;
		}
		if (option_table[j].parse(o, eq + 1) != 0 && !o->error[0])
			snprintf(o->error, sizeof(o->error),
				 "bad value in plugstack.conf option \"%s\"", av[i]);
	}
}

static struct scim_cache *cache;

static struct scim_cache *get_cache(const struct options *o)
{
	if (!cache)
		cache = scim_cache_new(o->cache[0] ? o->cache : NULL);
	return cache;
}

static int in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t) (comma - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return 1;
		p = comma ? comma + 1 : NULL;
	}
	return 0;
}

/* Root, SlurmUser and the configured exemptions are never checked. */
static int exempt(const struct options *o, uid_t uid, const char *name)
{
	if (uid == 0)
		return 1;
	for (size_t i = 0; i < o->n_uids; i++)
		if (o->exempt_uids[i] == uid)
			return 1;
	if (name && in_list(o->exempt_users, name))
		return 1;
	struct passwd pw, *res = NULL;
	char buf[4096];
	if (getpwnam_r(o->slurm_user, &pw, buf, sizeof(buf), &res) == 0 && res &&
	    res->pw_uid == uid)
		return 1;
	return 0;
}

/* parse "2026-05-09T07:29:33Z" (what syncd writes) */
static int parse_utc(const char *s, time_t *out)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end || (*end != 'Z' && *end != '\0'))
		return -1;
	*out = timegm(&tm);
	return 0;
}

enum verdict { ALLOW, DENY, UNUSABLE };

/* Is the snapshot usable and fresh? Sets why on UNUSABLE. */
static enum verdict snapshot_state(const struct options *o, struct scim_cache *c,
				   char *why, size_t len)
{
	char created[64];
	if (!c) {
		snprintf(why, len, "out of memory opening the SCIM snapshot");
		return UNUSABLE;
	}
	int rc = scim_cache_check(c);
	if (rc != SCIM_OK) {
		snprintf(why, len, "the SCIM snapshot is unusable: %s", scim_cache_error(c));
		return UNUSABLE;
	}
	if (o->max_age > 0) {
		time_t t;
		if (scim_meta(c, "created_at", created, sizeof(created)) != SCIM_OK ||
		    parse_utc(created, &t) != 0) {
			snprintf(why, len, "the SCIM snapshot has no valid created_at");
			return UNUSABLE;
		}
		long age = (long) (time(NULL) - t);
		if (age > o->max_age) {
			snprintf(why, len, "the SCIM snapshot is stale: created %s, %lds ago (max_age=%ld)",
				 created, age, o->max_age);
			return UNUSABLE;
		}
	}
	return ALLOW;
}

/* Does user have an association with account (any account when NULL;
 * blocked ones count)? */
static int has_account(struct scim_cache *c, const char *user, const char *account, int *found)
{
	char buf[2048], after[256] = "";
	struct scim_assoc a;
	*found = 0;
	for (int guard = 0; guard < 100000; guard++) {
		int rc = scim_next_assoc(c, user, after, &a, buf, sizeof(buf));
		if (rc == SCIM_NOTFOUND)
			return SCIM_OK;
		if (rc != SCIM_OK)
			return rc;
		if (!account || !strcmp(a.account, account)) {
			*found = 1;
			return SCIM_OK;
		}
		snprintf(after, sizeof(after), "%s", a.account);
	}
	return SCIM_UNAVAIL;
}

/*
 * The decision for uid (and account, in remote context; NULL otherwise).
 * Writes a one-line reason on DENY or UNUSABLE.
 */
static enum verdict decide(const struct options *o, uid_t uid, const char *account,
			   char *why, size_t len)
{
	struct scim_cache *c = get_cache(o);
	enum verdict v = snapshot_state(o, c, why, len);
	if (v != ALLOW)
		return v;

	struct passwd pw;
	char buf[4096];
	int rc = scim_getpwuid(c, uid, &pw, buf, sizeof(buf));
	if (rc == SCIM_NOTFOUND) {
		struct passwd lpw, *res = NULL;
		char lbuf[4096];
		if (getpwuid_r(uid, &lpw, lbuf, sizeof(lbuf), &res) == 0 && res)
			snprintf(why, len, "user %s is not provisioned on this cluster (not in the SCIM snapshot); "
				 "ask your admin to add you to a cluster group", res->pw_name);
		else
			snprintf(why, len, "uid %u is not provisioned on this cluster (not in the SCIM snapshot); "
				 "ask your admin to add you to a cluster group", (unsigned) uid);
		return DENY;
	}
	if (rc != SCIM_OK) {
		snprintf(why, len, "the SCIM snapshot is unusable: %s", scim_cache_error(c));
		return UNUSABLE;
	}
	const char *name = pw.pw_name;
	if (exempt(o, uid, name))
		return ALLOW;

	int active = 0;
	if (scim_user_active(c, name, &active) != SCIM_OK) {
		snprintf(why, len, "the SCIM snapshot is unusable: %s", scim_cache_error(c));
		return UNUSABLE;
	}
	if (!active) {
		snprintf(why, len, "user %s is disabled in the identity provider; "
			 "ask your admin to re-enable your account", name);
		return DENY;
	}

	if (account && account[0]) {
		int found = 0;
		if (has_account(c, name, account, &found) != SCIM_OK) {
			snprintf(why, len, "the SCIM snapshot is unusable: %s", scim_cache_error(c));
			return UNUSABLE;
		}
		if (!found) {
			snprintf(why, len, "user %s has no Slurm association with account %s; "
				 "use an account of one of your groups (sacctmgr show assoc user=%s)",
				 name, account, name);
			return DENY;
		}
		return ALLOW;
	}

	int n = 0, any = 0;
	if (scim_assoc_count(c, name, NULL, &n) != SCIM_OK ||
	    (n == 0 && has_account(c, name, NULL, &any) != SCIM_OK)) {
		snprintf(why, len, "the SCIM snapshot is unusable: %s", scim_cache_error(c));
		return UNUSABLE;
	}
	if (n == 0 && any) {
		snprintf(why, len, "user %s's Slurm associations are being removed (no longer in a "
			 "cluster group); running jobs finish, new ones are refused", name);
		return DENY;
	}
	if (n == 0) {
		snprintf(why, len, "user %s has no Slurm association yet; it is created within "
			 "a minute of joining a group, try again shortly", name);
		return DENY;
	}
	return ALLOW;
}

/* Turns a decision into the callback's return value, and says why. */
static int enforce(const struct options *o, enum verdict v, const char *why)
{
	const char *sep = o->message[0] ? " " : "";
	switch (v) {
	case ALLOW:
		return 0;
	case UNUSABLE:
		if (!o->missing_closed) {
			slurm_error(TAG "WARNING: %s; allowing the job (missing=open)", why);
			return 0;
		}
		if (o->warn) {
			slurm_error(TAG "warning (mode=warn): %s; job denied under missing=closed", why);
			return 0;
		}
		slurm_error(TAG "%s; jobs are refused until it is repaired (missing=closed)%s%s",
			    why, sep, o->message);
		return -1;
	case DENY:
		if (o->warn) {
			slurm_error(TAG "warning (mode=warn): %s%s%s", why, sep, o->message);
			return 0;
		}
		slurm_error(TAG "%s%s%s", why, sep, o->message);
		return -1;
	}
	return -1;
}

static int config_error(const struct options *o)
{
	slurm_error(TAG "%s; refusing jobs until plugstack.conf is fixed", o->error);
	return o->warn ? 0 : -1;
}

/* exempt() by uid and by the name NSS gives it (which may be local). */
static int exempt_uid(const struct options *o, uid_t uid)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) != 0)
		res = NULL;
	return exempt(o, uid, res ? res->pw_name : NULL);
}

EXPORT int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void) sp;
	spank_context_t ctx = spank_context();
	if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR)
		return 0;
	struct options o;
	parse_options(&o, ac, av);
	if (o.error[0])
		return config_error(&o);
	uid_t uid = getuid();
	if (exempt_uid(&o, uid))
		return 0;
	/* srun inside an allocation launches a step of a job that already
	 * passed: check its account like slurmstepd will, so that the steps
	 * of a job whose association was blocked for removal still run. */
	const char *account = NULL;
	if (ctx == S_CTX_LOCAL && getenv("SLURM_JOB_ID"))
		account = getenv("SLURM_JOB_ACCOUNT");
	char why[1024];
	return enforce(&o, decide(&o, uid, account, why, sizeof(why)), why);
}

EXPORT int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	if (!spank_remote(sp))
		return 0;
	struct options o;
	parse_options(&o, ac, av);
	if (o.error[0])
		return config_error(&o);
	uid_t uid;
	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS) {
		slurm_error(TAG "cannot read the job's uid; job denied");
		return -1;
	}
	if (exempt_uid(&o, uid))
		return 0;
	char account[256] = "";
	if (spank_getenv(sp, "SLURM_JOB_ACCOUNT", account, sizeof(account)) != ESPANK_SUCCESS)
		account[0] = '\0';
	char why[1024];
	return enforce(&o, decide(&o, uid, account, why, sizeof(why)), why);
}

EXPORT int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void) sp;
	(void) ac;
	(void) av;
	scim_cache_free(cache);
	cache = NULL;
	return 0;
}
