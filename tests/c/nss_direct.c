/*
 * nss_direct - calls libnss_scim.so.2's entry points directly (dlopen), as
 * glibc does, to check what glibc cannot show from outside: statuses and
 * errno, that ERANGE leaves the result alone and does not move the
 * enumeration cursor, and initgroups_dyn's growth, limit, primary-group
 * skip and de-duplication.
 *
 *   nss_direct MODULE USER            (inside scim_ns, so reader.conf applies)
 *   nss_direct MODULE USER hostile    the snapshot also holds rows no NSS
 *                                     answer may come from (see below)
 *   nss_direct MODULE USER unavail    the snapshot is unusable
 *   nss_direct MODULE USER repeat N   N getpwnam_r calls of USER, then
 *                                     "elapsed SECONDS" (for strace counts)
 *   nss_direct MODULE USER recover GOOD LIVE
 *                                     LIVE (reader.conf's path) is unusable;
 *                                     GOOD is renamed over it: the very next
 *                                     lookup answers from it
 *
 * USER must be in at least 3 groups of the snapshot. Expected values come
 * from the module's own getgrent walk, cross-checked by tests/nss/run.sh
 * against sqlite3. Prints PASS:/FAIL: lines; exits 1 on failure.
 *
 * hostile: tests/nss/run.sh adds a user toor with uid 0, a user minus1
 * with uid and gid (uid_t)-1, a user wheelie with primary gid 0, a user
 * named root (uid 4294967290), groups wheel0 (gid 0), gm1 (gid
 * (gid_t)-1) and root (gid 4294967291), and makes USER a member of all
 * three. None of them may be answered: root's ids and name belong to
 * the local root, (uid_t)-1 means "no id" to chown and setreuid.
 */
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <nss.h>
#include <pwd.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum nss_status (*pwnam_fn)(const char *, struct passwd *, char *,
				    size_t, int *);
typedef enum nss_status (*pwuid_fn)(uid_t, struct passwd *, char *, size_t,
				    int *);
typedef enum nss_status (*grnam_fn)(const char *, struct group *, char *,
				    size_t, int *);
typedef enum nss_status (*grgid_fn)(gid_t, struct group *, char *, size_t,
				    int *);
typedef enum nss_status (*pwent_fn)(struct passwd *, char *, size_t, int *);
typedef enum nss_status (*grent_fn)(struct group *, char *, size_t, int *);
typedef enum nss_status (*setent_fn)(int);
typedef enum nss_status (*endent_fn)(void);
typedef enum nss_status (*initgroups_fn)(const char *, gid_t, long *, long *,
					 gid_t **, long, int *);

static int failures;
#define CHECK(cond, ...)                                   \
	do {                                               \
		printf("%s: ", (cond) ? "PASS" : "FAIL"); \
		printf(__VA_ARGS__);                       \
		putchar('\n');                             \
		failures += !(cond);                       \
	} while (0)

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	if (!p) {
		printf("FAIL: %s not exported\n", name);
		exit(1);
	}
	return p;
}

/* The module's entry points, under the names glibc gives its own. */
#define getpwnam_r m_getpwnam_r
#define getpwuid_r m_getpwuid_r
#define getgrnam_r m_getgrnam_r
#define getgrgid_r m_getgrgid_r
#define getpwent_r m_getpwent_r
#define getgrent_r m_getgrent_r
#define setpwent m_setpwent
#define setgrent m_setgrent
#define endpwent m_endpwent
#define endgrent m_endgrent
#define initgroups m_initgroups
static pwnam_fn getpwnam_r;
static pwuid_fn getpwuid_r;
static grnam_fn getgrnam_r;
static grgid_fn getgrgid_r;
static pwent_fn getpwent_r;
static grent_fn getgrent_r;
static setent_fn setpwent, setgrent;
static endent_fn endpwent, endgrent;
static initgroups_fn initgroups;
static char big[1 << 20];

/* getpwnam_r(name): NOTFOUND with errno ENOENT, result untouched. */
static void pw_absent(const char *what, const char *name)
{
	struct passwd pw, pw0;
	memset(&pw, 0x5A, sizeof(pw));
	memcpy(&pw0, &pw, sizeof(pw));
	int err = 0;
	enum nss_status st = getpwnam_r(name, &pw, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_NOTFOUND && err == ENOENT &&
		      !memcmp(&pw, &pw0, sizeof(pw)),
	      "getpwnam_r(%s): NOTFOUND, errno ENOENT (status %d, errno %d%s%s)",
	      what, st, err, st == NSS_STATUS_SUCCESS ? ", answered " : "",
	      st == NSS_STATUS_SUCCESS ? pw.pw_name : "");
}

static void gr_absent(const char *what, const char *name)
{
	struct group gr;
	int err = 0;
	enum nss_status st = getgrnam_r(name, &gr, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_NOTFOUND && err == ENOENT,
	      "getgrnam_r(%s): NOTFOUND, errno ENOENT (status %d, errno %d)",
	      what, st, err);
}

static void uid_absent(const char *what, uid_t uid)
{
	struct passwd pw;
	int err = 0;
	enum nss_status st = getpwuid_r(uid, &pw, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_NOTFOUND && err == ENOENT,
	      "getpwuid_r(%s): NOTFOUND, errno ENOENT (status %d, errno %d%s%s)",
	      what, st, err, st == NSS_STATUS_SUCCESS ? ", answered " : "",
	      st == NSS_STATUS_SUCCESS ? pw.pw_name : "");
}

static void gid_absent(const char *what, gid_t gid)
{
	struct group gr;
	int err = 0;
	enum nss_status st = getgrgid_r(gid, &gr, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_NOTFOUND && err == ENOENT,
	      "getgrgid_r(%s): NOTFOUND, errno ENOENT (status %d, errno %d%s%s)",
	      what, st, err, st == NSS_STATUS_SUCCESS ? ", answered " : "",
	      st == NSS_STATUS_SUCCESS ? gr.gr_name : "");
}

/* Every name and id the module enumerates, for the hostile checks. */
static int walk_has_root_or_invalid(char *what, size_t len)
{
	struct passwd pw;
	struct group gr;
	int err;
	setpwent(0);
	while (getpwent_r(&pw, big, sizeof(big), &err) == NSS_STATUS_SUCCESS)
		if (pw.pw_uid == 0 || pw.pw_uid == (uid_t)-1 ||
		    pw.pw_gid == 0 || pw.pw_gid == (gid_t)-1 ||
		    !strcmp(pw.pw_name, "root")) {
			snprintf(what, len, "passwd %s:%u:%u", pw.pw_name,
				 (unsigned)pw.pw_uid, (unsigned)pw.pw_gid);
			endpwent();
			return 1;
		}
	endpwent();
	setgrent(0);
	while (getgrent_r(&gr, big, sizeof(big), &err) == NSS_STATUS_SUCCESS)
		if (gr.gr_gid == 0 || gr.gr_gid == (gid_t)-1 ||
		    !strcmp(gr.gr_name, "root")) {
			snprintf(what, len, "group %s:%u", gr.gr_name,
				 (unsigned)gr.gr_gid);
			endgrent();
			return 1;
		}
	endgrent();
	return 0;
}

/* Rows a snapshot must never answer with (tests/nss/run.sh adds them). */
static void hostile(const char *user)
{
	pw_absent("toor, a row with uid 0", "toor");
	pw_absent("minus1, a row with uid (uid_t)-1", "minus1");
	pw_absent("wheelie, a row with primary gid 0", "wheelie");
	pw_absent("root, a row named root with another uid", "root");
	uid_absent("0, held by a row", 0);
	uid_absent("(uid_t)-1, held by a row", (uid_t)-1);
	uid_absent("4294967290, the row named root", 4294967290u);
	gid_absent("0, held by a row", 0);
	gid_absent("(gid_t)-1, held by a row", (gid_t)-1);
	gid_absent("4294967291, the group named root", 4294967291u);
	gr_absent("wheel0, a row with gid 0", "wheel0");
	gr_absent("gm1, a row with gid (gid_t)-1", "gm1");
	gr_absent("root, a row named root with another gid", "root");
	char what[256] = "";
	CHECK(!walk_has_root_or_invalid(what, sizeof(what)),
	      "enumeration lists no root name and no id 0 or -1 %s", what);

	struct passwd pw;
	int err = 0;
	getpwnam_r(user, &pw, big, sizeof(big), &err);
	long start = 1, size = 4;
	gid_t *groups = malloc(4 * sizeof(gid_t));
	groups[0] = pw.pw_gid;
	enum nss_status st =
		initgroups(user, pw.pw_gid, &start, &size, &groups, -1, &err);
	int bad = 0;
	for (long i = 1; i < start; i++)
		bad |= groups[i] == 0 || groups[i] == (gid_t)-1 ||
		       groups[i] == 4294967291u;
	CHECK(st == NSS_STATUS_SUCCESS && start > 1 && !bad,
	      "initgroups_dyn(%s) adds neither gid 0 nor (gid_t)-1 nor the group named root (%ld gids)",
	      user, start);
	free(groups);
}

/* Every entry point when the snapshot is unusable: UNAVAIL, so that glibc
 * goes on to the next source even under [NOTFOUND=return]. */
static void unavail(const char *user)
{
	struct passwd pw;
	struct group gr;
	int err = 0;
	enum nss_status st = getpwnam_r(user, &pw, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_UNAVAIL && err == ENOENT,
	      "unusable snapshot: getpwnam_r UNAVAIL, errno ENOENT (status %d, errno %d)", st, err);
	err = 0;
	st = getpwuid_r(100001, &pw, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_UNAVAIL, "unusable snapshot: getpwuid_r UNAVAIL (status %d)", st);
	err = 0;
	st = getgrnam_r("g00001", &gr, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_UNAVAIL, "unusable snapshot: getgrnam_r UNAVAIL (status %d)", st);
	err = 0;
	st = getgrgid_r(200001, &gr, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_UNAVAIL, "unusable snapshot: getgrgid_r UNAVAIL (status %d)", st);
	setpwent(0);
	err = 0;
	st = getpwent_r(&pw, big, sizeof(big), &err);
	endpwent();
	CHECK(st == NSS_STATUS_UNAVAIL, "unusable snapshot: getpwent_r UNAVAIL (status %d)", st);
	setgrent(0);
	err = 0;
	st = getgrent_r(&gr, big, sizeof(big), &err);
	endgrent();
	CHECK(st == NSS_STATUS_UNAVAIL, "unusable snapshot: getgrent_r UNAVAIL (status %d)", st);
	long start = 1, size = 1;
	gid_t *groups = malloc(sizeof(gid_t));
	groups[0] = 1;
	err = 0;
	st = initgroups(user, 1, &start, &size, &groups, -1, &err);
	CHECK(st == NSS_STATUS_UNAVAIL && start == 1,
	      "unusable snapshot: initgroups_dyn UNAVAIL, adds nothing (status %d)", st);
	free(groups);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The group walk as a list of gids, with a buffer of len bytes first and
 * a large one on ERANGE (as glibc retries). */
static size_t group_walk(gid_t *out, size_t max, size_t len)
{
	struct group gr;
	size_t n = 0;
	int err;
	setgrent(0);
	for (;;) {
		err = 0;
		enum nss_status st = getgrent_r(&gr, big, len, &err);
		if (st == NSS_STATUS_TRYAGAIN && err == ERANGE)
			st = getgrent_r(&gr, big, sizeof(big), &err);
		if (st != NSS_STATUS_SUCCESS)
			break;
		if (n < max)
			out[n] = gr.gr_gid;
		n++;
	}
	endgrent();
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: nss_direct MODULE USER [hostile|unavail|repeat N]\n");
		return 64;
	}
	const char *user = argv[2];
	const char *mode = argc > 3 ? argv[3] : "";
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("FAIL: dlopen: %s\n", dlerror());
		return 1;
	}
	getpwnam_r = (pwnam_fn)sym(h, "_nss_scim_getpwnam_r");
	getpwuid_r = (pwuid_fn)sym(h, "_nss_scim_getpwuid_r");
	getgrnam_r = (grnam_fn)sym(h, "_nss_scim_getgrnam_r");
	getgrgid_r = (grgid_fn)sym(h, "_nss_scim_getgrgid_r");
	getpwent_r = (pwent_fn)sym(h, "_nss_scim_getpwent_r");
	getgrent_r = (grent_fn)sym(h, "_nss_scim_getgrent_r");
	setpwent = (setent_fn)sym(h, "_nss_scim_setpwent");
	endpwent = (endent_fn)sym(h, "_nss_scim_endpwent");
	setgrent = (setent_fn)sym(h, "_nss_scim_setgrent");
	endgrent = (endent_fn)sym(h, "_nss_scim_endgrent");
	initgroups = (initgroups_fn)sym(h, "_nss_scim_initgroups_dyn");
	char tiny[4];

	if (!strcmp(mode, "hostile") || !strcmp(mode, "unavail")) {
		if (mode[0] == 'h')
			hostile(user);
		else
			unavail(user);
		dlclose(h);
		return failures ? 1 : 0;
	}
	if (!strcmp(mode, "repeat") && argc > 4) {
		long n = atol(argv[4]);
		struct passwd pw;
		int err;
		double t0 = now_s();
		for (long i = 0; i < n; i++)
			getpwnam_r(user, &pw, big, sizeof(big), &err);
		printf("elapsed %.3f\n", now_s() - t0);
		dlclose(h);
		return 0;
	}
	if (!strcmp(mode, "recover") && argc > 5) {
		struct passwd pw;
		int err = 0;
		enum nss_status st = getpwnam_r(user, &pw, big, sizeof(big), &err);
		enum nss_status st2 = getpwnam_r(user, &pw, big, sizeof(big), &err);
		CHECK(st == NSS_STATUS_UNAVAIL && st2 == NSS_STATUS_UNAVAIL,
		      "unusable file: UNAVAIL, twice (status %d, %d)", st, st2);
		if (rename(argv[4], argv[5]) != 0) {
			perror("rename");
			return 1;
		}
		err = 0;
		st = getpwnam_r(user, &pw, big, sizeof(big), &err);
		CHECK(st == NSS_STATUS_SUCCESS && !strcmp(pw.pw_name, user),
		      "a good snapshot renamed over it answers at the next lookup (status %d)", st);
		dlclose(h);
		return failures ? 1 : 0;
	}
	if (mode[0]) {
		fprintf(stderr, "nss_direct: unknown mode %s\n", mode);
		return 64;
	}
	int err;

	/* Statuses and errno. */
	struct passwd pw, pw0;
	memset(&pw, 0x5A, sizeof(pw));
	memcpy(&pw0, &pw, sizeof(pw));
	err = 0;
	enum nss_status st = getpwnam_r(user, &pw, tiny, sizeof(tiny), &err);
	CHECK(st == NSS_STATUS_TRYAGAIN && err == ERANGE &&
		      !memcmp(&pw, &pw0, sizeof(pw)),
	      "small buffer: TRYAGAIN, errno ERANGE, result untouched (status %d, errno %d)",
	      st, err);
	err = 0;
	st = getpwnam_r(user, &pw, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_SUCCESS && !strcmp(pw.pw_name, user),
	      "getpwnam_r(%s): SUCCESS", user);
	gid_t primary = pw.pw_gid;
	err = 0;
	st = getpwnam_r("no-such-user", &pw, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_NOTFOUND && err == ENOENT,
	      "unknown user: NOTFOUND, errno ENOENT (status %d, errno %d)", st, err);

	/* Enumeration: an ERANGE retry returns the same entry, and the walk
	 * lists each user once. */
	setpwent(0);
	long n = 0, retried_ok = 0;
	char last[256] = "";
	for (;;) {
		err = 0;
		st = getpwent_r(&pw, tiny, sizeof(tiny), &err);
		if (st == NSS_STATUS_NOTFOUND)
			break;
		if (st != NSS_STATUS_TRYAGAIN || err != ERANGE) {
			printf("FAIL: getpwent_r with 4 bytes: status %d errno %d\n", st, err);
			failures++;
			break;
		}
		st = getpwent_r(&pw, big, sizeof(big), &err);
		if (st != NSS_STATUS_SUCCESS)
			break;
		n++;
		/* Every entry must follow the previous one (uid order). */
		if (strcmp(last, "") != 0 && strcmp(pw.pw_name, last) == 0)
			break;
		retried_ok++;
		snprintf(last, sizeof(last), "%s", pw.pw_name);
	}
	endpwent();
	CHECK(n > 0 && n == retried_ok,
	      "getpwent_r: ERANGE then retry gives the next entry, never a repeat (%ld entries)", n);

	/* The user's groups as the module's own group walk lists them. */
	gid_t want[4096];
	size_t nwant = 0;
	setgrent(0);
	struct group gr;
	while (getgrent_r(&gr, big, sizeof(big), &err) == NSS_STATUS_SUCCESS)
		for (char **m = gr.gr_mem; *m; m++)
			if (!strcmp(*m, user) && gr.gr_gid != primary && nwant < 4096)
				want[nwant++] = gr.gr_gid;
	endgrent();
	CHECK(nwant >= 3, "%s is in %zu groups besides the primary one", user, nwant);

	/* initgroups_dyn: starts from glibc's array holding the primary gid
	 * and one gid another module already added (a duplicate of ours). */
	long start = 2, size = 2;
	gid_t *groups = malloc(2 * sizeof(gid_t));
	groups[0] = primary;
	groups[1] = want[0];
	err = 0;
	st = initgroups(user, primary, &start, &size, &groups, 0, &err);
	int same = st == NSS_STATUS_SUCCESS && (size_t)start == nwant + 1 &&
		   size >= start;
	for (size_t i = 0; same && i < nwant; i++)
		same = groups[i + 1] == want[i];
	CHECK(same, "initgroups_dyn: grows the array, skips the primary gid and a gid already present (%ld gids)", start);
	free(groups);

	start = 1, size = 1;
	groups = malloc(sizeof(gid_t));
	groups[0] = primary;
	st = initgroups(user, primary, &start, &size, &groups, 3, &err);
	CHECK(st == NSS_STATUS_SUCCESS && start == 3 && size == 3 &&
		      groups[1] == want[0] && groups[2] == want[1],
	      "initgroups_dyn: limit 3 stops at 3 gids (got %ld, size %ld)", start, size);
	free(groups);

	start = 0, size = 1;
	groups = malloc(sizeof(gid_t));
	st = initgroups("no-such-user", 0, &start, &size, &groups, 0, &err);
	CHECK(st == NSS_STATUS_NOTFOUND && start == 0,
	      "initgroups_dyn: unknown user is NOTFOUND and adds nothing");
	free(groups);

	/* limit -1 (getgrouplist's): no cap; the array grows from full. */
	start = 1, size = 1;
	groups = malloc(sizeof(gid_t));
	groups[0] = primary;
	st = initgroups(user, primary, &start, &size, &groups, -1, &err);
	same = st == NSS_STATUS_SUCCESS && (size_t)start == nwant + 1 &&
	       size >= start;
	for (size_t i = 0; same && i < nwant; i++)
		same = groups[i + 1] == want[i];
	CHECK(same, "initgroups_dyn: limit -1 grows *size from full and adds every group (%ld gids, size %ld)",
	      start, size);
	free(groups);

	/* Already at the limit: nothing added, no write past the array. */
	start = 2, size = 2;
	groups = malloc(2 * sizeof(gid_t));
	groups[0] = primary;
	groups[1] = 4242;
	st = initgroups(user, primary, &start, &size, &groups, 2, &err);
	CHECK(st == NSS_STATUS_SUCCESS && start == 2 && size == 2 && groups[1] == 4242,
	      "initgroups_dyn: at the limit already, adds nothing (start %ld, size %ld)", start, size);
	free(groups);

	/* The primary gid passed is one of the user's groups: skipped; the
	 * array holding every group already: nothing added twice. */
	start = 1 + (long)nwant, size = start;
	groups = malloc((size_t)size * sizeof(gid_t));
	groups[0] = want[0];
	for (size_t i = 1; i < nwant; i++)
		groups[i] = want[i];
	groups[nwant] = primary;
	st = initgroups(user, want[0], &start, &size, &groups, -1, &err);
	CHECK(st == NSS_STATUS_SUCCESS && start == 1 + (long)nwant,
	      "initgroups_dyn: skips the group passed as primary and gids already present (start %ld, want %zu)",
	      start, nwant + 1);
	free(groups);

	/* buflen 0 (and no buffer at all): ERANGE for a user that exists,
	 * NOTFOUND for one that does not. */
	err = 0;
	st = getpwnam_r(user, &pw, NULL, 0, &err);
	CHECK(st == NSS_STATUS_TRYAGAIN && err == ERANGE,
	      "getpwnam_r with buflen 0: TRYAGAIN, errno ERANGE (status %d, errno %d)", st, err);
	struct group grz;
	err = 0;
	st = getgrgid_r(want[0], &grz, NULL, 0, &err);
	CHECK(st == NSS_STATUS_TRYAGAIN && err == ERANGE,
	      "getgrgid_r with buflen 0: TRYAGAIN, errno ERANGE (status %d, errno %d)", st, err);
	pw_absent("no-such-user with buflen 0 is still NOTFOUND", "no-such-user");
	err = 0;
	st = getpwnam_r("no-such-user", &pw, NULL, 0, &err);
	CHECK(st == NSS_STATUS_NOTFOUND && err == ENOENT,
	      "getpwnam_r(no-such-user) with buflen 0: NOTFOUND, errno ENOENT (status %d, errno %d)", st, err);

	/* Names that are not the user's: case, SQL LIKE wildcards, empty,
	 * long, white space and control characters next to it. */
	char v[8192];
	snprintf(v, sizeof(v), "%s", user);
	for (char *p = v; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	pw_absent("the name in upper case", v);
	snprintf(v, sizeof(v), "%c%s", user[0] >= 'a' && user[0] <= 'z' ? user[0] - 'a' + 'A' : user[0], user + 1);
	pw_absent("the name capitalised", v);
	size_t ulen = strlen(user);
	snprintf(v, sizeof(v), "%s", user);
	v[ulen - 1] = '%';
	pw_absent("the name with its last letter as %", v);
	v[ulen - 1] = '_';
	pw_absent("the name with its last letter as _", v);
	snprintf(v, sizeof(v), "%s", user);
	v[0] = '_';
	pw_absent("the name with its first letter as _", v);
	pw_absent("%", "%");
	pw_absent("_", "_");
	pw_absent("empty name", "");
	snprintf(v, sizeof(v), "%s ", user);
	pw_absent("the name and a space", v);
	snprintf(v, sizeof(v), "%s\n", user);
	pw_absent("the name and a newline", v);
	snprintf(v, sizeof(v), "\x01%s", user);
	pw_absent("a control character and the name", v);
	memset(v, 'a', sizeof(v) - 1);
	v[sizeof(v) - 1] = '\0';
	pw_absent("8,191 letters", v);
	gr_absent("empty group name", "");
	gr_absent("%", "%");
	gr_absent("group _", "_");

	/* Ids root and (uid_t)-1 have; a number that is only a gid. */
	uid_absent("0", 0);
	uid_absent("(uid_t)-1", (uid_t)-1);
	gid_absent("0", 0);
	gid_absent("(gid_t)-1", (gid_t)-1);
	uid_absent("a gid no user has as uid", want[0]);

	/* The end of the walk: NOTFOUND with ENOENT, and again after it. */
	setpwent(0);
	while (getpwent_r(&pw, big, sizeof(big), &err) == NSS_STATUS_SUCCESS)
		;
	err = 0;
	st = getpwent_r(&pw, big, sizeof(big), &err);
	enum nss_status st2 = getpwent_r(&pw, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_NOTFOUND && err == ENOENT && st2 == NSS_STATUS_NOTFOUND,
	      "getpwent_r after the last user: NOTFOUND, errno ENOENT, and again (status %d, errno %d)", st, err);
	setgrent(0);
	while (getgrent_r(&gr, big, sizeof(big), &err) == NSS_STATUS_SUCCESS)
		;
	err = 0;
	st = getgrent_r(&gr, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_NOTFOUND && err == ENOENT,
	      "getgrent_r after the last group: NOTFOUND, errno ENOENT (status %d, errno %d)", st, err);
	endgrent();

	/* setpwent restarts, also mid-walk; endpwent then getpwent restarts. */
	char first[256], second[256];
	setpwent(0);
	getpwent_r(&pw, big, sizeof(big), &err);
	snprintf(first, sizeof(first), "%s", pw.pw_name);
	getpwent_r(&pw, big, sizeof(big), &err);
	snprintf(second, sizeof(second), "%s", pw.pw_name);
	setpwent(0);
	st = getpwent_r(&pw, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_SUCCESS && !strcmp(pw.pw_name, first) && strcmp(first, second),
	      "a second setpwent restarts the walk (%s, then %s)", first, pw.pw_name);
	endpwent();
	st = getpwent_r(&pw, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_SUCCESS && !strcmp(pw.pw_name, first),
	      "endpwent then getpwent_r restarts the walk (%s)", pw.pw_name);
	endpwent();
	setgrent(0);
	getgrent_r(&gr, big, sizeof(big), &err);
	gid_t gfirst = gr.gr_gid;
	getgrent_r(&gr, big, sizeof(big), &err);
	endgrent();
	st = getgrent_r(&gr, big, sizeof(big), &err);
	CHECK(st == NSS_STATUS_SUCCESS && gr.gr_gid == gfirst,
	      "endgrent then getgrent_r restarts the walk (%u)", (unsigned)gr.gr_gid);
	endgrent();

	/* getgrent_r: an ERANGE (glibc then retries larger) skips nothing. */
	static gid_t walk_big[100000], walk_small[100000];
	size_t nb = group_walk(walk_big, 100000, sizeof(big));
	size_t ns = group_walk(walk_small, 100000, 16);
	CHECK(nb > 0 && nb == ns && !memcmp(walk_big, walk_small, nb * sizeof(gid_t)),
	      "getgrent_r: ERANGE then a larger buffer lists the same %zu groups as one large buffer (%zu)",
	      nb, ns);

	/* Group results in a buffer that starts unaligned: gr_mem aligned,
	 * inside the buffer, and the same members. */
	struct group ref;
	static char refbuf[1 << 20];
	err = 0;
	getgrgid_r(want[0], &ref, refbuf, sizeof(refbuf), &err);
	int aligned_ok = 1;
	for (size_t off = 1; off < 2 * sizeof(char *) && aligned_ok; off++) {
		size_t len = 64;
		for (;;) {
			err = 0;
			st = getgrgid_r(want[0], &gr, big + off, len, &err);
			if (st != NSS_STATUS_TRYAGAIN || len >= sizeof(big) / 2)
				break;
			len += len / 4;
		}
		size_t i = 0;
		aligned_ok = st == NSS_STATUS_SUCCESS &&
			     (uintptr_t)gr.gr_mem % _Alignof(char *) == 0 &&
			     (char *)gr.gr_mem >= big + off &&
			     (char *)gr.gr_mem < big + off + len;
		for (; aligned_ok && ref.gr_mem[i]; i++)
			aligned_ok = gr.gr_mem[i] && !strcmp(gr.gr_mem[i], ref.gr_mem[i]);
		aligned_ok = aligned_ok && gr.gr_mem[i] == NULL;
	}
	CHECK(aligned_ok, "getgrgid_r into buffers starting 1..%zu bytes past alignment: gr_mem aligned, same members",
	      2 * sizeof(char *) - 1);

	dlclose(h);
	return failures ? 1 : 0;
}
