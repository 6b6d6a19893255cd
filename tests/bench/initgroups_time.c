/*
 * initgroups_time USER GID EXPECTED [REPEATS]: getgrouplist(3) through glibc
 * for a user in very many groups (nss_bench.sh runs it in scim_ns): the
 * first call of the process (module load, open, one buffer growth) and the
 * median of REPEATS further calls, in ms. Exits 1 unless every call
 * returned EXPECTED gids.
 */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 64;
	gid_t gid = (gid_t)strtoul(argv[2], NULL, 10);
	int want = atoi(argv[3]), reps = argc > 4 ? atoi(argv[4]) : 21;
	static gid_t g[1 << 18];
	double t[256], first = 0;
	if (reps > 255)
		reps = 255;
	for (int i = 0; i <= reps; i++) {
		int n = (int)(sizeof(g) / sizeof(*g));
		double t0 = ms();
		int r = getgrouplist(argv[1], gid, g, &n);
		double d = ms() - t0;
		if (r < 0 || n != want) {
			printf("getgrouplist(%s): %d gids, want %d\n", argv[1], n, want);
			return 1;
		}
		if (i == 0)
			first = d;
		else
			t[i - 1] = d;
	}
	qsort(t, (size_t)reps, sizeof(double), cmp);
	printf("%.1f %.1f\n", first, t[reps / 2]);
	return 0;
}
