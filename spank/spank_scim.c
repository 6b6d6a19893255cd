/*
 * spank_scim.c - refuse Slurm jobs of users the SCIM snapshot does not
 * provision, with a message that says why and what to do.
 *
 * Answers from the local snapshot only (the reader in c/): no
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
 *     be in the snapshot, active, and have at least one association; a
 *     blocked one counts, so jobs that were running or pending when their
 *     association was blocked for removal still run. Failing task_init
 *     fails the job and leaves the node alone; failing any other remote
 *     callback drains the node, so no other remote callback ever fails.
 *
 * The job's account is not checked here. SPANK in this Slurm (22.05; see
 * spank.h's spank_item_t) exposes no S_JOB_ACCOUNT, and SLURM_JOB_ACCOUNT
 * in the job's environment is the caller's to set (SLURM_JOB_ACCOUNT=chem
 * srun inside another account's allocation passed the old check). Asking
 * slurmctld would put a network call into every task launch. Which
 * accounts a user may charge is slurmctld's decision: run it with
 * AccountingStorageEnforce=associations (syncd's associations are then
 * the rule; a blocked one has MaxSubmitJobs=0). Here the user must still
 * exist, be active and hold an association at all.
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
 *   exempt_users=a,b       never checked; names are looked up in
 *                          /etc/passwd only, so a SCIM user of the same
 *                          name is not exempt (root and slurm_user always
 *                          pass)
 *   exempt_uids=0,64030    never checked
 *   slurm_user=NAME        SlurmUser of slurm.conf (default: slurm), by its
 *                          uid in /etc/passwd; never a snapshot name (a
 *                          SCIM user named slurm is checked like any
 *                          other). A SlurmUser that only LDAP knows:
 *                          exempt_uids=
 *   message=TEXT           appended to every refusal; the rest of the line
 *                          after message= is the text, so put it last
 *   missing=open|closed    when the snapshot is missing or unusable:
 *                          open (default) allows with a loud log line
 *                          (SCIM users do not resolve then, so their jobs
 *                          cannot start anyway), closed refuses. When it
 *                          is stale: open decides from it all the same
 *                          (disabled users stay refused) with a loud log
 *                          line, closed refuses.
 *   max_age=SECONDS        stale when the live snapshot file's mtime is
 *                          older (0, the default: never). syncd sets the
 *                          mtime at every successful poll, changed or not
 *                          (a mirror node, from its manifest), so it is
 *                          the age of the last contact with the identity
 *                          source: a quiet directory with a healthy syncd
 *                          is never stale.
 *   wait_for_snapshot=SECONDS  (default 30; 0: never wait) on a mirror
 *                          node (a <cache>.mirror.json beside the
 *                          snapshot), task_init waits this long before it
 *                          refuses a job, for a newer snapshot from the
 *                          head (see "Ordering across the cluster").
 *
 * Ordering across the cluster. The head acts in Slurm for a snapshot
 * (releases the held jobs of a re-enabled user, creates the association a
 * new user's job needs) as soon as it has committed it; a compute node
 * that mirrors the head receives that snapshot a poll later (mirror
 * interval, 5 s by default, plus the download). A job the head released
 * can reach this node's task_init first, when the node's copy still says
 * "disabled" or "no association". So task_init on a mirror node does not
 * fail a job at once: it waits up to wait_for_snapshot seconds for the
 * live snapshot to be replaced and decides again on each new file; the
 * first allowing answer runs the job. It stops waiting, and refuses, when
 * the node has heard from the head since the job reached it (the live
 * file's mtime, the head's signed source_contact, moved past the start of
 * the wait) with the same answer, or when the time is up. Waiting never
 * grants anything: only a snapshot that allows the user does, so a
 * disabled user's job is still refused, a few seconds later. The submit
 * checks (sbatch, salloc, srun) never wait: their refusal costs no job.
 *
 * An unknown or malformed option refuses jobs in the checking callbacks
 * (the message names it): a typo must not quietly disable the check.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
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
	long wait_snapshot;
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

static int parse_seconds(long *dst, const char *v)
{
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno || *end || end == v || n < 0)
		return -1;
	*dst = n;
	return 0;
}

static int opt_max_age(struct options *o, const char *v)
{
	return parse_seconds(&o->max_age, v);
}

static int opt_wait_snapshot(struct options *o, const char *v)
{
	/* a day at most: a task that waits longer is a hung job */
	long n;
	if (parse_seconds(&n, v) != 0 || n > 86400)
		return -1;
	o->wait_snapshot = n;
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
	{"wait_for_snapshot", opt_wait_snapshot},
	{"exempt_users", opt_exempt_users},
	{"exempt_uids", opt_exempt_uids},
	{"slurm_user", opt_slurm_user},
	{"message", opt_message},
};

static void parse_options(struct options *o, int ac, char **av)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->slurm_user, sizeof(o->slurm_user), "slurm");
	o->wait_snapshot = 30;
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

/* Root, SlurmUser and the configured exemptions are never checked.
 * Names (slurm_user, exempt_users) count by their uid in /etc/passwd, the
 * node's own accounts: the snapshot's names are the identity provider's,
 * and a SCIM user named slurm must not pass as SlurmUser. */
static int exempt(const struct options *o, uid_t uid)
{
	if (uid == 0)
		return 1;
	for (size_t i = 0; i < o->n_uids; i++)
		if (o->exempt_uids[i] == uid)
			return 1;
	FILE *f = fopen("/etc/passwd", "re");
	if (!f)
		return 0;
	struct passwd ent, *pw;
	char buf[8192];
	int found = 0;
	while (!found && fgetpwent_r(f, &ent, buf, sizeof(buf), &pw) == 0)
		found = pw->pw_uid == uid && pw->pw_name &&
			(!strcmp(pw->pw_name, o->slurm_user) ||
			 in_list(o->exempt_users, pw->pw_name));
	fclose(f);
	return found;
}

enum verdict { ALLOW, DENY, UNUSABLE, STALE };

/* Is the snapshot usable and fresh? Sets why on UNUSABLE and STALE.
 * Staleness is now - mtime of the live file: the last successful contact
 * with the identity source (see max_age), not the last change. */
static enum verdict snapshot_state(const struct options *o, struct scim_cache *c,
				   char *why, size_t len)
{
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
		struct timespec mt;
		if (scim_cache_mtime(c, &mt) != SCIM_OK) {
			snprintf(why, len, "the SCIM snapshot is unusable: %s", scim_cache_error(c));
			return UNUSABLE;
		}
		long age = (long) (time(NULL) - mt.tv_sec);
		if (age > o->max_age) {
			snprintf(why, len, "the SCIM snapshot is stale: last contact with the "
				 "identity source %lds ago (max_age=%ld; is syncd running?)",
				 age, o->max_age);
			return STALE;
		}
	}
	return ALLOW;
}

/* Grows a reader call's buffer (4 KiB, doubling, to MAX_BUF) on
 * SCIM_ERANGE: a large entry (a 4,090-byte home) is an answer, not an
 * unusable snapshot. -1 past MAX_BUF or out of memory. */
#define MAX_BUF (1u << 20)
static int grow(char **bufp, size_t *lenp)
{
	size_t n = *lenp ? *lenp * 2 : 4096;
	if (n > MAX_BUF)
		return -1;
	char *b = realloc(*bufp, n);
	if (!b)
		return -1;
	*bufp = b;
	*lenp = n;
	return 0;
}

/* Does user have an association (blocked ones count)? SCIM_ERANGE only
 * when the first one is larger than MAX_BUF. */
static int has_any_account(struct scim_cache *c, const char *user, int *found)
{
	struct scim_assoc a;
	char *buf = NULL;
	size_t len = 0;
	int rc = SCIM_ERANGE;
	while (rc == SCIM_ERANGE && grow(&buf, &len) == 0)
		rc = scim_next_assoc(c, user, "", &a, buf, len);
	free(buf);
	*found = rc == SCIM_OK;
	return rc == SCIM_NOTFOUND ? SCIM_OK : rc;
}

/*
 * The decision for uid. in_job: a step of a job that already passed
 * (task_init, srun inside an allocation), which any association lets
 * run, a blocked one too; otherwise (a new submission) it takes one that
 * is not blocked. Writes a one-line reason on DENY or UNUSABLE.
 */
static enum verdict decide(const struct options *o, uid_t uid, int in_job,
			   char *why, size_t len)
{
	struct scim_cache *c = get_cache(o);
	enum verdict v = snapshot_state(o, c, why, len);
	if (v == STALE && !o->missing_closed) {
		slurm_error(TAG "WARNING: %s; deciding from it all the same (missing=open)", why);
		v = ALLOW;
	}
	if (v != ALLOW)
		return v == STALE ? UNUSABLE : v;

	struct passwd pw;
	char *buf = NULL;
	size_t blen = 0;
	int rc = SCIM_ERANGE;
	while (rc == SCIM_ERANGE && grow(&buf, &blen) == 0)
		rc = scim_getpwuid(c, uid, &pw, buf, blen);
	if (rc == SCIM_NOTFOUND) {
		struct passwd lpw, *res = NULL;
		char lbuf[4096];
		if (getpwuid_r(uid, &lpw, lbuf, sizeof(lbuf), &res) == 0 && res)
			snprintf(why, len, "user %s is not provisioned on this cluster (not in the SCIM snapshot); "
				 "ask your admin to add you to a cluster group", res->pw_name);
		else
			snprintf(why, len, "uid %u is not provisioned on this cluster (not in the SCIM snapshot); "
				 "ask your admin to add you to a cluster group", (unsigned) uid);
		v = DENY;
	} else if (rc == SCIM_ERANGE) {
		/* No valid entry is near MAX_BUF: refuse, never "unusable". */
		snprintf(why, len, "uid %u has a SCIM entry larger than %u bytes; ask your admin",
			 (unsigned) uid, MAX_BUF);
		v = DENY;
	} else if (rc != SCIM_OK) {
		snprintf(why, len, "the SCIM snapshot is unusable: %s", scim_cache_error(c));
		v = UNUSABLE;
	}
	if (v != ALLOW) {
		free(buf);
		return v;
	}
	const char *name = pw.pw_name;

	int active = 0, n = 0, any = 0;
	char group[256];
	if (scim_user_active(c, name, &active) != SCIM_OK) {
		snprintf(why, len, "the SCIM snapshot is unusable: %s", scim_cache_error(c));
		v = UNUSABLE;
	} else if (!active) {
		snprintf(why, len, "user %s is disabled in the identity provider; "
			 "ask your admin to re-enable your account", name);
		v = DENY;
	} else if (scim_local_group_member("/etc/group", name, group, sizeof(group))) {
		/* this node's own /etc/group would give the job that group */
		snprintf(why, len, "user %s is listed as a member of local group %s in /etc/group "
			 "on this node; ask your admin to remove it from that line", name, group);
		v = DENY;
	} else if ((rc = scim_assoc_count(c, name, NULL, &n)) != SCIM_OK ||
		   (n == 0 && (rc = has_any_account(c, name, &any)) != SCIM_OK)) {
		if (rc == SCIM_ERANGE)
			snprintf(why, len, "user %s has a Slurm association larger than %u bytes; "
				 "ask your admin", name, MAX_BUF);
		else
			snprintf(why, len, "the SCIM snapshot is unusable: %s", scim_cache_error(c));
		v = rc == SCIM_ERANGE ? DENY : UNUSABLE;
	} else if (in_job && n == 0 && !any) {
		snprintf(why, len, "user %s has no Slurm association any more (no longer in a "
			 "cluster group)", name);
		v = DENY;
	} else if (!in_job && n == 0 && any) {
		snprintf(why, len, "user %s's Slurm associations are being removed (no longer in a "
			 "cluster group); running jobs finish, new ones are refused", name);
		v = DENY;
	} else if (!in_job && n == 0) {
		/* No promise of a delay this plugin cannot know: the association
		 * comes with syncd's next Slurm pass, and only for members of a
		 * group mapped to an account. */
		snprintf(why, len, "user %s has no Slurm association yet; it is created by the next "
			 "Slurm pass of scimbridge once you are in a group that grants Slurm access "
			 "(if you are in none, ask your admin to be added to one)", name);
		v = DENY;
	}
	free(buf);
	return v;
}

/* Turns a decision into the callback's return value, and says why. */
static int enforce(const struct options *o, enum verdict v, const char *why)
{
	const char *sep = o->message[0] ? " " : "";
	switch (v) {
	case ALLOW:
		return 0;
	case STALE: /* decide() makes it ALLOW or UNUSABLE */
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

/* The job's account is slurmctld's to enforce (see the top of this file):
 * say so in slurmd's log, once at its start, when slurm.conf (SLURM_CONF,
 * else /etc/slurm/slurm.conf) does not enforce associations. Never fails:
 * a failure in slurmd context drains the node. Include files are not
 * followed; a setting kept in one is reported as not found. */
static void check_enforce(void)
{
	const char *path = getenv("SLURM_CONF");
	if (!path || !*path)
		path = "/etc/slurm/slurm.conf";
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	char line[4096], value[4096] = "";
	int found = 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " \t");
		if (strncasecmp(p, "AccountingStorageEnforce", 24) != 0)
			continue;
		p += 24;
		p += strspn(p, " \t");
		if (*p != '=')
			continue;
		p++;
		p += strspn(p, " \t");
		p[strcspn(p, " \t\r\n#")] = '\0';
		snprintf(value, sizeof(value), "%s", p);
		found = 1;
	}
	fclose(f);
	for (char *q = value; *q; q++)
		*q = (char) tolower((unsigned char) *q);
	if (!found || (!strstr(value, "associations") && !strstr(value, "limits") &&
		       !strstr(value, "safe") && !strstr(value, "qos")))
		slurm_error(TAG "WARNING: %s has %s%s: jobs may be charged to any account, "
			    "spank_scim does not check the job's account; set "
			    "AccountingStorageEnforce=associations", path,
			    found ? "AccountingStorageEnforce=" : "no AccountingStorageEnforce",
			    found ? value : "");
}

EXPORT int slurm_spank_init(spank_t sp, int ac, char **av)
{
	(void) sp;
	(void) ac;
	(void) av;
	if (spank_context() == S_CTX_SLURMD)
		check_enforce();
	return 0;
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
	if (exempt(&o, uid))
		return 0;
	/* srun inside an allocation launches a step of a job that already
	 * passed: check it like slurmstepd will, so that the steps of a job
	 * whose association was blocked for removal still run. (The
	 * environment is the caller's: this submit check is a courtesy that
	 * saves a job id; task_init and slurmctld are the gates.) */
	int in_job = ctx == S_CTX_LOCAL && getenv("SLURM_JOB_ID") != NULL;
	char why[1024];
	return enforce(&o, decide(&o, uid, in_job, why, sizeof(why)), why);
}

/* The live snapshot's path: cache= or reader.conf's. 0 if unknown. */
static int live_path(const struct options *o, char *buf, size_t len)
{
	if (o->cache[0])
		return set_str(buf, len, o->cache) == 0;
	return scim_configured_path(buf, len) == 0;
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size;
}

/*
 * A job refused in task_init on a mirror node: wait for a newer snapshot
 * (see "Ordering across the cluster" at the top). Returns the decision
 * that stands; why is rewritten by each new decision.
 */
static enum verdict wait_for_newer(const struct options *o, uid_t uid, char *why, size_t len)
{
	char path[PATH_MAX], state[PATH_MAX + 16];
	struct stat cur, st;
	if (o->wait_snapshot <= 0 || !live_path(o, path, sizeof(path)) ||
	    snprintf(state, sizeof(state), "%s.mirror.json", path) >= (int) sizeof(state) ||
	    stat(state, &st) != 0 || stat(path, &cur) != 0)
		return DENY; /* not a mirror: the node's snapshot is the head's own */
	time_t start = time(NULL), seen = cur.st_mtime;
	slurm_info(TAG "%s; waiting up to %lds for a newer snapshot from the head", why,
		   o->wait_snapshot);
	struct timespec tick = {0, 250 * 1000 * 1000};
	while (time(NULL) - start < o->wait_snapshot) {
		nanosleep(&tick, NULL);
		if (stat(path, &st) != 0)
			continue;
		if (!same_file(&st, &cur)) {
			cur = st;
			scim_cache_check(get_cache(o));
			enum verdict v = decide(o, uid, 1, why, len);
			if (v != DENY) {
				slurm_info(TAG "a newer snapshot arrived after %lds: %s", (long) (time(NULL) - start),
					   v == ALLOW ? "the job runs" : why);
				return v;
			}
		}
		/* The node heard from the head after the job reached it, and
		 * the answer is the same: it stands. */
		if (st.st_mtime != seen && st.st_mtime > start)
			return DENY;
	}
	size_t n = strlen(why);
	snprintf(why + n, len - n, " (waited %lds for a newer snapshot: wait_for_snapshot)",
		 (long) (time(NULL) - start));
	return DENY;
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
	if (exempt(&o, uid))
		return 0;
	char why[1024];
	enum verdict v = decide(&o, uid, 1, why, sizeof(why));
	if (v == DENY && !o.warn)
		v = wait_for_newer(&o, uid, why, sizeof(why));
	return enforce(&o, v, why);
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
