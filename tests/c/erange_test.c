/*
 * erange_test - every buffer size from 1 byte up gives ERANGE until the
 * result fits, then exactly the right result; the result struct is left
 * alone on ERANGE; every string lies inside the caller's buffer and gr_mem
 * is aligned. Each buffer is malloc'ed at exactly its size, so ASan and
 * valgrind see a one-byte overrun.
 *
 *   erange_test -f CACHE -u USER -g GROUP      through the reader
 *   erange_test -n -f CACHE -u USER -g GROUP   through glibc NSS
 *                                              (run inside scim_ns)
 * In -n mode CACHE only provides the reference answers.
 * Prints PASS:/FAIL: lines; exits 1 on any failure.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scimcache.h"

#define SLACK 64 /* sizes past the first fit that are also checked */
#define MAXLEN (1u << 20)

static struct scim_cache *cache;
static int use_nss;
static const char *user, *group;
static int failures;

enum kind { K_PW, K_GR, K_TEXT, K_ASSOC };

union out {
	struct passwd pw;
	struct group gr;
	struct scim_assoc as;
	unsigned char raw[64];
};

struct tcase {
	const char *name;
	enum kind kind;
	/* returns SCIM_OK/NOTFOUND/ERANGE/UNAVAIL */
	int (*call)(union out *o, char *buf, size_t len);
};

static int nss_status(int rc, void *result)
{
	if (rc == ERANGE)
		return SCIM_ERANGE;
	if (rc != 0)
		return SCIM_UNAVAIL;
	return result ? SCIM_OK : SCIM_NOTFOUND;
}

static int c_pwnam(union out *o, char *b, size_t n)
{
	if (use_nss) {
		struct passwd *r = NULL;
		int rc = getpwnam_r(user, &o->pw, b, n, &r);
		return nss_status(rc, r);
	}
	return scim_getpwnam(cache, user, &o->pw, b, n);
}

static uid_t the_uid;
static gid_t the_gid;

static int c_pwuid(union out *o, char *b, size_t n)
{
	if (use_nss) {
		struct passwd *r = NULL;
		int rc = getpwuid_r(the_uid, &o->pw, b, n, &r);
		return nss_status(rc, r);
	}
	return scim_getpwuid(cache, the_uid, &o->pw, b, n);
}

static int c_nextpw(union out *o, char *b, size_t n)
{
	int64_t pos = (int64_t)the_uid - 1;
	int64_t before = pos;
	int st = scim_nextpw(cache, &pos, &o->pw, b, n);
	if (st != SCIM_OK && pos != before) {
		printf("FAIL: nextpw moved its cursor on status %d\n", st);
		failures++;
	}
	return st;
}

static int c_grnam(union out *o, char *b, size_t n)
{
	if (use_nss) {
		struct group *r = NULL;
		int rc = getgrnam_r(group, &o->gr, b, n, &r);
		return nss_status(rc, r);
	}
	return scim_getgrnam(cache, group, &o->gr, b, n);
}

static int c_grgid(union out *o, char *b, size_t n)
{
	if (use_nss) {
		struct group *r = NULL;
		int rc = getgrgid_r(the_gid, &o->gr, b, n, &r);
		return nss_status(rc, r);
	}
	return scim_getgrgid(cache, the_gid, &o->gr, b, n);
}

static int c_nextgr(union out *o, char *b, size_t n)
{
	int64_t pos = (int64_t)the_gid - 1;
	return scim_nextgr(cache, &pos, &o->gr, b, n);
}

static int c_keys(union out *o, char *b, size_t n)
{
	(void)o;
	return scim_user_keys(cache, user, b, n);
}

static int c_meta(union out *o, char *b, size_t n)
{
	(void)o;
	return scim_meta(cache, "created_at", b, n);
}

static int c_assoc(union out *o, char *b, size_t n)
{
	return scim_next_assoc(cache, user, "", &o->as, b, n);
}

static int inside(const char *p, const char *b, size_t n)
{
	return p >= b && p < b + n && strnlen(p, (size_t)(b + n - p)) <
					      (size_t)(b + n - p);
}

/* Checks that every pointer of o lies in b[0..n) and equals ref. */
static int same(enum kind k, const union out *o, const char *b, size_t n,
		const union out *ref, const char *refbuf)
{
	switch (k) {
	case K_PW: {
		const struct passwd *p = &o->pw, *r = &ref->pw;
		const char *s[] = {p->pw_name, p->pw_passwd, p->pw_gecos,
				   p->pw_dir, p->pw_shell};
		const char *t[] = {r->pw_name, r->pw_passwd, r->pw_gecos,
				   r->pw_dir, r->pw_shell};
		for (int i = 0; i < 5; i++)
			if (!inside(s[i], b, n) || strcmp(s[i], t[i]))
				return 0;
		return p->pw_uid == r->pw_uid && p->pw_gid == r->pw_gid;
	}
	case K_GR: {
		const struct group *g = &o->gr, *r = &ref->gr;
		if (!inside(g->gr_name, b, n) || strcmp(g->gr_name, r->gr_name) ||
		    !inside(g->gr_passwd, b, n) ||
		    strcmp(g->gr_passwd, r->gr_passwd) || g->gr_gid != r->gr_gid)
			return 0;
		if ((uintptr_t)g->gr_mem % _Alignof(char *) ||
		    (const char *)g->gr_mem < b ||
		    (const char *)g->gr_mem >= b + n)
			return 0;
		size_t i = 0;
		for (; r->gr_mem[i]; i++) {
			if ((const char *)(&g->gr_mem[i + 1] + 1) > b + n ||
			    !g->gr_mem[i] || !inside(g->gr_mem[i], b, n) ||
			    strcmp(g->gr_mem[i], r->gr_mem[i]))
				return 0;
		}
		return g->gr_mem[i] == NULL;
	}
	case K_TEXT:
		return inside(b, b, n) && strcmp(b, refbuf) == 0;
	case K_ASSOC: {
		const struct scim_assoc *a = &o->as, *r = &ref->as;
		return inside(a->account, b, n) && !strcmp(a->account, r->account) &&
		       inside(a->qos, b, n) && !strcmp(a->qos, r->qos) &&
		       inside(a->default_qos, b, n) &&
		       !strcmp(a->default_qos, r->default_qos) &&
		       a->is_default == r->is_default && a->blocked == r->blocked;
	}
	}
	return 0;
}

static void run(const struct tcase *tc)
{
	/* Reference: through the reader with a generous buffer. */
	int saved = use_nss;
	union out ref;
	char *refbuf = malloc(MAXLEN);
	use_nss = 0;
	int st = tc->call(&ref, refbuf, MAXLEN);
	use_nss = saved;
	if (st != SCIM_OK) {
		printf("FAIL: %s: reference lookup gave status %d (%s)\n",
		       tc->name, st, scim_cache_error(cache));
		failures++;
		free(refbuf);
		return;
	}
	size_t fit = 0, erange = 0;
	for (size_t n = 1; n < MAXLEN; n++) {
		char *b = malloc(n);
		union out o, sentinel;
		memset(&o, 0xA5, sizeof(o));
		memset(&sentinel, 0xA5, sizeof(sentinel));
		st = tc->call(&o, b, n);
		if (st == SCIM_ERANGE && !fit) {
			erange++;
			/* Through glibc, "files" parses its own lines into the
			 * struct first; tests/c/nss_direct.c checks the module. */
			if (!use_nss && memcmp(&o, &sentinel, sizeof(o)) != 0) {
				printf("FAIL: %s: ERANGE at %zu bytes changed the "
				       "result struct\n", tc->name, n);
				failures++;
				free(b);
				break;
			}
		} else if (st == SCIM_OK && same(tc->kind, &o, b, n, &ref, refbuf)) {
			if (!fit)
				fit = n;
		} else {
			printf("FAIL: %s: %zu bytes gave status %d%s\n", tc->name,
			       n, st, st == SCIM_OK ? " with a wrong result" : "");
			failures++;
			free(b);
			free(refbuf);
			return;
		}
		free(b);
		if (fit && n >= fit + SLACK)
			break;
	}
	if (!fit) {
		printf("FAIL: %s: never fit\n", tc->name);
		failures++;
	} else if (erange != fit - 1) {
		printf("FAIL: %s: %zu ERANGEs before the fit at %zu\n", tc->name,
		       erange, fit);
		failures++;
	} else {
		printf("PASS: %s%s: ERANGE for 1..%zu bytes, exact result from "
		       "%zu bytes on\n", use_nss ? "nss " : "", tc->name,
		       fit - 1, fit);
	}
	free(refbuf);
}

static void run_groups(void)
{
	size_t n = 0, total = 0;
	gid_t ref[4096];
	int st = scim_user_groups(cache, user, ref, 4096, &total);
	if (st != SCIM_OK || total == 0) {
		printf("FAIL: user_groups reference: status %d, %zu groups\n", st,
		       total);
		failures++;
		return;
	}
	for (size_t max = 0; max <= total + 2; max++) {
		gid_t *g = malloc((max ? max : 1) * sizeof(*g));
		st = scim_user_groups(cache, user, g, max, &n);
		int good = n == total &&
			   (max < total ? st == SCIM_ERANGE
					: st == SCIM_OK &&
						  !memcmp(g, ref, total * sizeof(*g)));
		free(g);
		if (!good) {
			printf("FAIL: user_groups with room for %zu: status %d, "
			       "count %zu of %zu\n", max, st, n, total);
			failures++;
			return;
		}
	}
	printf("PASS: user_groups: ERANGE with room for 0..%zu gids (count "
	       "still reported), exact list from %zu\n", total - 1, total);
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	int opt;
	while ((opt = getopt(argc, argv, "nf:u:g:")) != -1) {
		switch (opt) {
		case 'n': use_nss = 1; break;
		case 'f': path = optarg; break;
		case 'u': user = optarg; break;
		case 'g': group = optarg; break;
		default: return 64;
		}
	}
	if (!path || !user || !group) {
		fprintf(stderr, "usage: erange_test [-n] -f cache -u user -g group\n");
		return 64;
	}
	cache = scim_cache_new(path);
	struct passwd pw;
	struct group gr;
	static char b[MAXLEN];
	if (scim_getpwnam(cache, user, &pw, b, sizeof(b)) != SCIM_OK ||
	    (the_uid = pw.pw_uid, 0) ||
	    scim_getgrnam(cache, group, &gr, b, sizeof(b)) != SCIM_OK) {
		printf("FAIL: %s: user %s or group %s not found: %s\n", path,
		       user, group, scim_cache_error(cache));
		return 1;
	}
	the_gid = gr.gr_gid;

	static const struct tcase nss_cases[] = {
		{"getpwnam", K_PW, c_pwnam},
		{"getpwuid", K_PW, c_pwuid},
		{"getgrnam", K_GR, c_grnam},
		{"getgrgid", K_GR, c_grgid},
	};
	static const struct tcase reader_cases[] = {
		{"nextpw", K_PW, c_nextpw},
		{"nextgr", K_GR, c_nextgr},
		{"user_keys", K_TEXT, c_keys},
		{"meta", K_TEXT, c_meta},
		{"next_assoc", K_ASSOC, c_assoc},
	};
	for (size_t i = 0; i < sizeof(nss_cases) / sizeof(*nss_cases); i++)
		run(&nss_cases[i]);
	if (!use_nss) {
		for (size_t i = 0; i < sizeof(reader_cases) / sizeof(*reader_cases); i++)
			run(&reader_cases[i]);
		run_groups();
	}
	scim_cache_free(cache);
	return failures ? 1 : 0;
}
