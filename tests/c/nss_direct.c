/*
 * nss_direct - calls libnss_scim.so.2's entry points directly (dlopen), as
 * glibc does, to check what glibc cannot show from outside: statuses and
 * errno, that ERANGE leaves the result alone and does not move the
 * enumeration cursor, and initgroups_dyn's growth, limit, primary-group
 * skip and de-duplication.
 *
 *   nss_direct MODULE USER      (inside scim_ns, so reader.conf applies)
 *
 * USER must be in at least 3 groups of the snapshot. Expected values come
 * from the module's own getgrent walk, cross-checked by tests/nss/run.sh
 * against sqlite3. Prints PASS:/FAIL: lines; exits 1 on failure.
 */
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <nss.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum nss_status (*pwnam_fn)(const char *, struct passwd *, char *,
				    size_t, int *);
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

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: nss_direct MODULE USER\n");
		return 64;
	}
	const char *user = argv[2];
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("FAIL: dlopen: %s\n", dlerror());
		return 1;
	}
	pwnam_fn getpwnam_r = (pwnam_fn)sym(h, "_nss_scim_getpwnam_r");
	pwent_fn getpwent_r = (pwent_fn)sym(h, "_nss_scim_getpwent_r");
	grent_fn getgrent_r = (grent_fn)sym(h, "_nss_scim_getgrent_r");
	setent_fn setpwent = (setent_fn)sym(h, "_nss_scim_setpwent");
	endent_fn endpwent = (endent_fn)sym(h, "_nss_scim_endpwent");
	setent_fn setgrent = (setent_fn)sym(h, "_nss_scim_setgrent");
	endent_fn endgrent = (endent_fn)sym(h, "_nss_scim_endgrent");
	initgroups_fn initgroups =
		(initgroups_fn)sym(h, "_nss_scim_initgroups_dyn");
	static char big[1 << 20];
	char tiny[4];
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

	dlclose(h);
	return failures ? 1 : 0;
}
