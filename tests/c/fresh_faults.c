/*
 * fresh_faults - the page faults of a new program's second lookup.
 *
 *   fresh_faults USER1 USER2      (inside scim_ns, exec'd anew)
 *
 * getpwnam_r of USER1 through glibc (scim only: __nss_configure_lookup,
 * so no other source's files are read), then of USER2, and prints the
 * minor page faults (getrusage) the second one made: "faults N". A new
 * program's lookups after the first are one pread of the snapshot each
 * (c/nssindex.c, win_cold) into pages the process already has (answer.c,
 * memo_page): a page fault costs a short-lived program 4-20 us on a VM,
 * several times the lookup. Exits 1 if either user is not found.
 */
#include <nss.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/resource.h>

extern int __nss_configure_lookup(const char *db, const char *service_line);

static char buf[1 << 16];

static long minflt(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : -1;
}

int main(int argc, char **argv)
{
	struct passwd pw, *r = NULL;
	if (argc != 3 || __nss_configure_lookup("passwd", "scim") != 0)
		return 2;
	if (getpwnam_r(argv[1], &pw, buf, sizeof(buf), &r) != 0 || !r) {
		printf("%s: not found\n", argv[1]);
		return 1;
	}
	long f0 = minflt();
	r = NULL;
	int e = getpwnam_r(argv[2], &pw, buf, sizeof(buf), &r);
	long f1 = minflt();
	if (e != 0 || !r) {
		printf("%s: not found\n", argv[2]);
		return 1;
	}
	printf("faults %ld\n", f1 - f0);
	return 0;
}
