/*
 * swap_test - lookups from many threads while the snapshot is replaced by
 * rename, the way syncd publishes one. Every answer must come whole from
 * the old or the new file, and no lookup may fail.
 *
 *   swap_test -a A.db -b B.db -l LIVE [-t THREADS] [-n LOOKUPS] [-s SWAPS]
 *             [-p]
 *
 * A and B are gensnap snapshots built with VARIANT=A and VARIANT=B (users
 * u<i> have GECOS "User <i> A" or "User <i> B"), B possibly with fewer users
 * (then a user missing from B may be "not found", never anything else).
 * LIVE (same directory) is switched between them SWAPS times with
 * link + rename, spread over the run; each thread does at least LOOKUPS
 * lookups and keeps going until the swaps are done. -p: one handle per
 * thread instead of one shared handle (as the NSS module has).
 *
 * A handle looks at the path at most once a second by itself, so every
 * CHECK_EVERY-th lookup of each thread is preceded by scim_cache_check()
 * (as spank_scim does before each decision): the reopen then races with
 * the renames and with the other threads' lookups hundreds of times per
 * run, not twice. The run also lasts long enough for the handles' own
 * once-a-second checks to happen.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scimcache.h"

static const char *a_path, *b_path, *live;
static long users_a, users_b, groups_n, lookups = 100000;
static int per_thread;
static struct scim_cache *shared;
static atomic_int swaps_done;
static atomic_long total, errors, seen_a, seen_b;
static atomic_int workers_started;

#define CHECK_EVERY 16

static long meta_long(struct scim_cache *c, const char *key)
{
	char v[64];
	return scim_meta(c, key, v, sizeof(v)) == SCIM_OK ? atol(v) : -1;
}

static void report_error(const char *what, long i, int st, const char *got,
			 struct scim_cache *c)
{
	/* The error text lives in the handle: another thread may be
	 * rewriting a shared one, so it is read only from private ones. */
	if (atomic_fetch_add(&errors, 1) < 5)
		fprintf(stderr, "swap_test: %s %ld: status %d (%s) got '%s'\n",
			what, i, st,
			st == SCIM_UNAVAIL && per_thread ? scim_cache_error(c) : "",
			got);
}

/* Checks one random user, group or meta lookup. */
static void one(struct scim_cache *c, unsigned *seed, char *buf, size_t len)
{
	long i = 1 + rand_r(seed) % users_a;
	int kind = rand_r(seed) % 4;
	char name[32], want_a[64], want_b[64];
	if (kind <= 1) {
		struct passwd pw;
		snprintf(name, sizeof(name), "u%06ld", i);
		int st = kind == 0 ? scim_getpwnam(c, name, &pw, buf, len)
				   : scim_getpwuid(c, (uid_t)(100000 + i), &pw, buf, len);
		snprintf(want_a, sizeof(want_a), "User %ld A", i);
		snprintf(want_b, sizeof(want_b), "User %ld B", i);
		if (st == SCIM_OK && !strcmp(pw.pw_name, name) &&
		    pw.pw_uid == (uid_t)(100000 + i) && !strcmp(pw.pw_gecos, want_a))
			atomic_fetch_add(&seen_a, 1);
		else if (st == SCIM_OK && !strcmp(pw.pw_name, name) &&
			 pw.pw_uid == (uid_t)(100000 + i) &&
			 !strcmp(pw.pw_gecos, want_b) && i <= users_b)
			atomic_fetch_add(&seen_b, 1);
		else if (!(st == SCIM_NOTFOUND && i > users_b))
			report_error("user", i, st, st == SCIM_OK ? pw.pw_gecos : "", c);
	} else if (kind == 2) {
		/* g00001's members differ in size between the versions only
		 * if the user counts do; the group must be internally whole. */
		struct group gr;
		long j = 1 + rand_r(seed) % groups_n;
		int st = scim_getgrgid(c, (gid_t)(200000 + j), &gr, buf, len);
		snprintf(name, sizeof(name), "g%05ld", j);
		int whole = st == SCIM_OK && !strcmp(gr.gr_name, name);
		for (char **m = whole ? gr.gr_mem : NULL; m && *m; m++)
			whole &= (*m)[0] == 'u' && strlen(*m) == 7;
		if (!whole)
			report_error("group", j, st, st == SCIM_OK ? gr.gr_name : "", c);
	} else {
		long serial = meta_long(c, "serial");
		if (serial != 1 && serial != 2)
			report_error("meta serial", serial, SCIM_OK, "", c);
	}
	atomic_fetch_add(&total, 1);
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct scim_cache *c = per_thread ? scim_cache_new(live) : shared;
	size_t len = 1 << 16;
	char *buf = malloc(len);
	atomic_fetch_add(&workers_started, 1);
	for (long n = 0; n < lookups || atomic_load(&swaps_done) == 0; n++) {
		if (n % CHECK_EVERY == 0) {
			int st = scim_cache_check(c);
			if (st != SCIM_OK)
				report_error("check", n, st, "", c);
		}
		one(c, &seed, buf, len);
	}
	free(buf);
	if (per_thread)
		scim_cache_free(c);
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int threads = 8, swaps = 1000, opt;
	while ((opt = getopt(argc, argv, "a:b:l:t:n:s:p")) != -1) {
		switch (opt) {
		case 'a': a_path = optarg; break;
		case 'b': b_path = optarg; break;
		case 'l': live = optarg; break;
		case 't': threads = atoi(optarg); break;
		case 'n': lookups = atol(optarg); break;
		case 's': swaps = atoi(optarg); break;
		case 'p': per_thread = 1; break;
		default: return 64;
		}
	}
	if (!a_path || !b_path || !live || threads < 1 || threads > 256 || swaps < 1) {
		fprintf(stderr, "usage: swap_test -a A -b B -l LIVE [-t threads] "
				"[-n lookups] [-s swaps] [-p]\n");
		return 64;
	}
	struct scim_cache *ca = scim_cache_new(a_path), *cb = scim_cache_new(b_path);
	users_a = meta_long(ca, "users");
	users_b = meta_long(cb, "users");
	groups_n = meta_long(ca, "groups");
	if (users_a < 1 || users_b < 1 || users_b > users_a || groups_n < 1 ||
	    meta_long(ca, "serial") != 1 || meta_long(cb, "serial") != 2) {
		printf("FAIL: swap: A and B must be gensnap snapshots with serial 1 "
		       "and 2 and B no larger than A\n");
		return 1;
	}
	scim_cache_free(ca);
	scim_cache_free(cb);

	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.swap-tmp", live);
	unlink(tmp);
	unlink(live);
	if (link(a_path, tmp) != 0 || rename(tmp, live) != 0) {
		printf("FAIL: swap: cannot link %s to %s: %s\n", a_path, live,
		       strerror(errno));
		return 1;
	}
	shared = scim_cache_new(live);
	pthread_t tid[256];
	double t0 = now();
	for (int i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	while (atomic_load(&workers_started) < threads)
		usleep(1000);

	/* Spread the swaps over roughly the time the lookups take: measure
	 * the lookup rate for a moment, then pace. */
	usleep(200000);
	double rate = (double)atomic_load(&total) / (now() - t0);
	double expect = rate > 0 ? (double)threads * (double)lookups / rate : 1;
	useconds_t gap = (useconds_t)(expect / swaps * 1e6 * 0.8);
	if (gap > 20000)
		gap = 20000;
	if (gap < (useconds_t)(1500000 / swaps)) /* >= 1.5 s: the handles check */
		gap = (useconds_t)(1500000 / swaps);
	int swap_errors = 0;
	for (int s = 0; s < swaps; s++) {
		const char *src = s % 2 == 0 ? b_path : a_path;
		if (link(src, tmp) != 0 || rename(tmp, live) != 0)
			swap_errors++;
		unlink(tmp); /* left behind if both names were one inode */
		usleep(gap);
	}
	atomic_store(&swaps_done, 1);
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	double dt = now() - t0;
	scim_cache_free(shared);

	long n = atomic_load(&total), e = atomic_load(&errors);
	long sa = atomic_load(&seen_a), sb = atomic_load(&seen_b);
	printf("swap: %d threads (%s handle), %ld lookups in %.1f s (%.0f/s) across "
	       "%d renames; user answers from A %ld, from B %ld\n", threads,
	       per_thread ? "one per thread" : "one shared", n, dt, (double)n / dt,
	       swaps, sa, sb);
	int fail = 0;
	if (e == 0 && swap_errors == 0)
		printf("PASS: swap: %ld lookups during %d renames, every answer from "
		       "the old or the new snapshot\n", n, swaps);
	else {
		printf("FAIL: swap: %ld wrong or failed lookups, %d failed renames\n",
		       e, swap_errors);
		fail = 1;
	}
	if (sa > 0 && sb > 0)
		printf("PASS: swap: readers saw both versions (the renames were "
		       "noticed)\n");
	else {
		printf("FAIL: swap: answers only from one version (A %ld, B %ld)\n",
		       sa, sb);
		fail = 1;
	}
	return fail;
}
