/*
 * scimlookup - query a scimbridge snapshot through the C reader, the way
 * the modules do, and print getent-style lines.
 *
 *   scimlookup [-f CACHE] passwd [NAME|UID]     (no key: every user)
 *   scimlookup [-f CACHE] group [NAME|GID]      (no key: every group)
 *   scimlookup [-f CACHE] initgroups USER       ("USER gid gid ...")
 *   scimlookup [-f CACHE] keys USER             (authorized_keys lines)
 *   scimlookup [-f CACHE] assoc USER            (account|qos|default_qos|is_default|blocked)
 *   scimlookup [-f CACHE] active USER           (1 or 0)
 *   scimlookup [-f CACHE] meta [KEY]            (no key: the standard keys as key=value)
 *   scimlookup [-f CACHE] check                 (is the snapshot usable?)
 *
 * Without -f the modules' path is used (reader.conf or the default).
 * Exit status: 0 found, 2 not found, 3 unavailable (reason on stderr),
 * 64 usage. Buffers start small and grow on ERANGE, so every run also
 * exercises the reader's retry path.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scimcache.h"

#define MAXBUF (64u << 20)

static struct scim_cache *cache;
static char *buf;
static size_t buflen = 64;

#ifndef SCIM_VERSION
#define SCIM_VERSION "unknown"
#endif

/* Shipped as /usr/bin/scim-lookup (scim-lookup(1)); the build tree and
 * the tests call it scimlookup. */
static const char usage_text[] =
	"usage: scim-lookup [-f CACHE] passwd|group|initgroups|keys|assoc|active|meta|check [KEY]\n"
	"Answers from the scimbridge snapshot through the reader the modules use.\n"
	"  -f, --file CACHE  snapshot to read (default: reader.conf's, else /var/lib/scimbridge/cache.db)\n"
	"  -h, --help        this text\n"
	"      --version     print the version\n"
	"Exit status: 0 found, 2 not found, 3 snapshot unavailable, 64 usage. See scim-lookup(1).\n";

static int usage(void)
{
	fputs(usage_text, stderr);
	return 64;
}

/* Grows buf; 0 when it may not grow further. */
static int grow(void)
{
	if (buflen >= MAXBUF)
		return 0;
	char *nb = realloc(buf, buflen * 2);
	if (!nb)
		return 0;
	buf = nb;
	buflen *= 2;
	return 1;
}

static int exit_code(int st)
{
	switch (st) {
	case SCIM_OK:
		return 0;
	case SCIM_NOTFOUND:
		return 2;
	default:
		fprintf(stderr, "scimlookup: %s\n",
			st == SCIM_ERANGE ? "result too large"
					  : scim_cache_error(cache));
		return 3;
	}
}

/* A key that is all digits is a number (like getent). */
static int numeric(const char *s, uint32_t *out)
{
	if (!*s || strspn(s, "0123456789") != strlen(s))
		return 0;
	errno = 0;
	unsigned long long v = strtoull(s, NULL, 10);
	if (errno || v > UINT32_MAX)
		return 0;
	*out = (uint32_t)v;
	return 1;
}

static void print_pw(const struct passwd *pw)
{
	printf("%s:%s:%u:%u:%s:%s:%s\n", pw->pw_name, pw->pw_passwd,
	       (unsigned)pw->pw_uid, (unsigned)pw->pw_gid, pw->pw_gecos,
	       pw->pw_dir, pw->pw_shell);
}

static void print_gr(const struct group *gr)
{
	printf("%s:%s:%u:", gr->gr_name, gr->gr_passwd, (unsigned)gr->gr_gid);
	for (char **m = gr->gr_mem; *m; m++)
		printf("%s%s", m == gr->gr_mem ? "" : ",", *m);
	putchar('\n');
}

static int cmd_passwd(const char *key)
{
	struct passwd pw;
	int st;
	if (key) {
		uint32_t uid;
		int num = numeric(key, &uid);
		do
			st = num ? scim_getpwuid(cache, uid, &pw, buf, buflen)
				 : scim_getpwnam(cache, key, &pw, buf, buflen);
		while (st == SCIM_ERANGE && grow());
		if (st == SCIM_OK)
			print_pw(&pw);
		return exit_code(st);
	}
	int64_t pos = -1;
	for (;;) {
		st = scim_nextpw(cache, &pos, &pw, buf, buflen);
		if (st == SCIM_ERANGE && grow())
			continue;
		if (st != SCIM_OK)
			break;
		print_pw(&pw);
	}
	return st == SCIM_NOTFOUND ? 0 : exit_code(st);
}

static int cmd_group(const char *key)
{
	struct group gr;
	int st;
	if (key) {
		uint32_t gid;
		int num = numeric(key, &gid);
		do
			st = num ? scim_getgrgid(cache, gid, &gr, buf, buflen)
				 : scim_getgrnam(cache, key, &gr, buf, buflen);
		while (st == SCIM_ERANGE && grow());
		if (st == SCIM_OK)
			print_gr(&gr);
		return exit_code(st);
	}
	int64_t pos = -1;
	for (;;) {
		st = scim_nextgr(cache, &pos, &gr, buf, buflen);
		if (st == SCIM_ERANGE && grow())
			continue;
		if (st != SCIM_OK)
			break;
		print_gr(&gr);
	}
	return st == SCIM_NOTFOUND ? 0 : exit_code(st);
}

static int cmd_initgroups(const char *user)
{
	size_t max = 4, n = 0;
	gid_t *gids = NULL;
	int st;
	for (int tries = 0; tries < 8; tries++) {
		gid_t *ng = realloc(gids, max * sizeof(*gids));
		if (!ng)
			break;
		gids = ng;
		st = scim_user_groups(cache, user, gids, max, &n);
		if (st != SCIM_ERANGE)
			break;
		max = n + 1;
	}
	if (st == SCIM_OK) {
		printf("%s", user);
		for (size_t i = 0; i < n; i++)
			printf(" %u", (unsigned)gids[i]);
		putchar('\n');
	}
	free(gids);
	return exit_code(st);
}

static int cmd_keys(const char *user)
{
	int st;
	while ((st = scim_user_keys(cache, user, buf, buflen)) == SCIM_ERANGE &&
	       grow())
		;
	if (st == SCIM_OK)
		fputs(buf, stdout);
	return exit_code(st);
}

static int cmd_assoc(const char *user)
{
	struct scim_assoc a;
	char after[4096] = "";
	int st, n = 0;
	for (;;) {
		st = scim_next_assoc(cache, user, after, &a, buf, buflen);
		if (st == SCIM_ERANGE && grow())
			continue;
		if (st != SCIM_OK)
			break;
		printf("%s|%s|%s|%d|%d\n", a.account, a.qos, a.default_qos,
		       a.is_default, a.blocked);
		n++;
		if (strlen(a.account) >= sizeof(after))
			return exit_code(SCIM_ERANGE);
		strcpy(after, a.account);
	}
	if (st == SCIM_NOTFOUND)
		return n ? 0 : 2;
	return exit_code(st);
}

static int cmd_active(const char *user)
{
	int active = 0;
	int st = scim_user_active(cache, user, &active);
	if (st == SCIM_OK)
		printf("%d\n", active);
	return exit_code(st);
}

static int meta_one(const char *key, int prefix)
{
	int st;
	while ((st = scim_meta(cache, key, buf, buflen)) == SCIM_ERANGE && grow())
		;
	if (st == SCIM_OK)
		printf("%s%s%s\n", prefix ? key : "", prefix ? "=" : "", buf);
	return st;
}

static int cmd_meta(const char *key)
{
	static const char *const keys[] = {
		"schema_version", "serial", "created_at", "source", "users",
		"groups", "memberships", "ssh_keys", "associations",
		"slurm_synced_at",
	};
	if (key)
		return exit_code(meta_one(key, 0));
	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++) {
		int st = meta_one(keys[i], 1);
		if (st != SCIM_OK && st != SCIM_NOTFOUND)
			return exit_code(st);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	int opt;
	static const struct option longopts[] = {
		{"file", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	while ((opt = getopt_long(argc, argv, "f:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			path = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf("scim-lookup %s\n", SCIM_VERSION);
			return 0;
		default:
			return usage();
		}
	}
	if (optind >= argc || argc - optind > 2)
		return usage();
	const char *cmd = argv[optind];
	const char *key = argc - optind == 2 ? argv[optind + 1] : NULL;

	cache = scim_cache_new(path);
	buf = malloc(buflen);
	if (!cache || !buf) {
		fprintf(stderr, "scimlookup: out of memory\n");
		return 3;
	}
	int rc;
	if (!strcmp(cmd, "passwd"))
		rc = cmd_passwd(key);
	else if (!strcmp(cmd, "group"))
		rc = cmd_group(key);
	else if (!strcmp(cmd, "meta"))
		rc = cmd_meta(key);
	else if (!strcmp(cmd, "check"))
		rc = key ? usage() : exit_code(scim_cache_check(cache));
	else if (!key)
		rc = usage();
	else if (!strcmp(cmd, "initgroups"))
		rc = cmd_initgroups(key);
	else if (!strcmp(cmd, "keys"))
		rc = cmd_keys(key);
	else if (!strcmp(cmd, "assoc"))
		rc = cmd_assoc(key);
	else if (!strcmp(cmd, "active"))
		rc = cmd_active(key);
	else
		rc = usage();
	if (fflush(stdout) != 0 && rc == 0)
		rc = 3;
	scim_cache_free(cache);
	free(buf);
	return rc;
}
