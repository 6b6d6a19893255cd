/*
 * nss_bench.c - passwd/group lookups through glibc, NSS backends side by side.
 *
 * Every call goes through the public API a program uses (getpwnam_r, ...,
 * getgrouplist), so a number includes glibc's NSS dispatch, the module and
 * the copy into the caller's buffer. The backend is chosen per call batch
 * with __nss_configure_lookup (exported by glibc, in no header); it also
 * stops glibc re-reading nsswitch.conf, so no backend pays that stat.
 *
 * It runs inside tests/lib.sh's scim_ns (see nss_bench.sh), where
 *   /etc/passwd, /etc/group       host entries + the snapshot's ("files")
 *   /etc/scimbridge/reader.conf   points libnss_scim at the snapshot
 * and libnss-cache's passwd.cache, group.cache and .ix* indexes (nsscache's
 * format) are in -c DIR, or in /etc without -c. The expected answers are
 * read from those passwd.cache and group.cache (mk_nsscache.py dumps them
 * from the snapshot) with a parser of our own, not glibc's. Every answer
 * of every backend is checked; one wrong answer fails the run (exit 1).
 * Run it under scim_ns only: it trusts that /etc.
 *
 * Fairness: for each call the backends take turns in rounds, so a change
 * in machine load hits all of them; every backend sees the same key
 * sequence (fixed seed). A slow backend gets a time budget per call and
 * fewer samples (the table says how many).
 */
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <nss.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern int __nss_configure_lookup(const char *db, const char *service_line);

/* ---- counting libnss-cache's file opens ------------------------------
 * libnss_cache.so.2 calls fopen and fseek through the PLT; this program is
 * linked with these two symbols exported, so they bind here first. The
 * counts prove it used its indexes: an index hit opens the .ix file, then
 * the data file and fseek()s to the offset; a stale or unusable index
 * makes it re-open the data file and scan it without any fseek. glibc's
 * own files backend calls its internal fopen, not this one. */
static unsigned long n_ixopen, n_dataopen, n_seek;

static int ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && memcmp(s + a - b, suf, b) == 0;
}

FILE *fopen(const char *path, const char *mode)
{
	static FILE *(*real)(const char *, const char *);
	if (!real)
		real = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen");
	if (strstr(path, ".cache.ix"))
		n_ixopen++;
	else if (ends_with(path, "passwd.cache") || ends_with(path, "group.cache"))
		n_dataopen++;
	return real(path, mode);
}

int fseek(FILE *f, long off, int whence)
{
	static int (*real)(FILE *, long, int);
	if (!real)
		real = (int (*)(FILE *, long, int))dlsym(RTLD_NEXT, "fseek");
	n_seek++;
	return real(f, off, whence);
}

/* libnss_scim.so.2's preads (and __pread_chk, its fortified calls), counted
 * the same way (the symbols are exported too): the fresh-program rows
 * report how many a random lookup makes. Single-threaded use only reads
 * the count (the fresh child); other rows only add to it. */
static unsigned long n_pread;

ssize_t pread(int fd, void *b, size_t n, off_t off)
{
	static ssize_t (*real)(int, void *, size_t, off_t);
	if (!real)
		real = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
	__atomic_store_n(&n_pread, __atomic_load_n(&n_pread, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	return real(fd, b, n, off);
}

ssize_t __pread_chk(int fd, void *b, size_t n, off_t off, size_t blen)
{
	static ssize_t (*real)(int, void *, size_t, off_t, size_t);
	if (!real)
		real = (ssize_t (*)(int, void *, size_t, off_t, size_t))dlsym(RTLD_NEXT, "__pread_chk");
	__atomic_store_n(&n_pread, __atomic_load_n(&n_pread, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	return real(fd, b, n, off, blen);
}

/* ---- expected answers ------------------------------------------------ */
struct user {
	char *name, *gecos, *dir, *shell;
	uid_t uid;
	gid_t gid;
	gid_t *groups; /* supplementary, ascending */
	size_t ngroups;
};
struct grent {
	char *name;
	gid_t gid;
	char **mem; /* sorted by strcmp */
	size_t nmem;
};
static struct user *users;
static size_t nusers;
static struct grent *grps;
static size_t ngrps;
static struct user **users_by_name;

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("nss_bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		die("%s: %s", path, strerror(errno));
	size_t cap = 1 << 20, n = 0;
	char *s = malloc(cap);
	size_t r;
	while (s && (r = fread(s + n, 1, cap - n - 1, f)) > 0)
		if ((n += r) == cap - 1)
			s = realloc(s, cap *= 2);
	if (!s)
		die("out of memory");
	s[n] = 0;
	fclose(f);
	return s;
}

/* Splits line at sep into at most max fields, in place. */
static size_t split(char *line, char sep, char **f, size_t max)
{
	size_t n = 0;
	f[n++] = line;
	for (char *p = line; *p && n < max; p++)
		if (*p == sep) {
			*p = 0;
			f[n++] = p + 1;
		}
	return n;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}
static int cmp_user_name(const void *a, const void *b)
{
	return strcmp((*(struct user *const *)a)->name, (*(struct user *const *)b)->name);
}
static int cmp_gid(const void *a, const void *b)
{
	gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;
	return x < y ? -1 : x > y;
}

static struct user *user_named(const char *name)
{
	struct user key = {.name = (char *)name}, *kp = &key;
	struct user **u = bsearch(&kp, users_by_name, nusers, sizeof(*users_by_name), cmp_user_name);
	return u ? *u : NULL;
}

static void load_oracle(const char *pwpath, const char *grpath)
{
	char *pw = slurp(pwpath), *gr = slurp(grpath), *save;
	for (char *p = pw; *p; p++)
		nusers += *p == '\n';
	for (char *p = gr; *p; p++)
		ngrps += *p == '\n';
	users = calloc(nusers, sizeof(*users));
	grps = calloc(ngrps, sizeof(*grps));
	users_by_name = calloc(nusers, sizeof(*users_by_name));
	if (!users || !grps || !users_by_name)
		die("out of memory");
	size_t i = 0;
	for (char *l = strtok_r(pw, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *f[7];
		if (split(l, ':', f, 7) != 7)
			die("%s: bad line %zu", pwpath, i + 1);
		users[i] = (struct user){f[0], f[4], f[5], f[6], strtoul(f[2], NULL, 10),
					 strtoul(f[3], NULL, 10), NULL, 0};
		users_by_name[i] = &users[i];
		i++;
	}
	nusers = i;
	qsort(users_by_name, nusers, sizeof(*users_by_name), cmp_user_name);

	i = 0;
	size_t nmemb = 0;
	for (char *l = strtok_r(gr, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *f[4];
		if (split(l, ':', f, 4) != 4)
			die("%s: bad line %zu", grpath, i + 1);
		struct grent *g = &grps[i++];
		g->name = f[0];
		g->gid = strtoul(f[2], NULL, 10);
		for (char *p = f[3]; *p; p++)
			g->nmem += *p == ',';
		g->nmem += *f[3] != 0;
		g->mem = calloc(g->nmem + 1, sizeof(char *));
		if (g->nmem)
			split(f[3], ',', g->mem, g->nmem);
		qsort(g->mem, g->nmem, sizeof(char *), cmp_str);
		nmemb += g->nmem;
	}
	ngrps = i;
	/* Each user's supplementary groups, from the member lists. */
	for (size_t g = 0; g < ngrps; g++)
		for (size_t m = 0; m < grps[g].nmem; m++) {
			struct user *u = user_named(grps[g].mem[m]);
			if (!u)
				die("group %s lists unknown user %s", grps[g].name, grps[g].mem[m]);
			u->ngroups++;
		}
	gid_t *flat = malloc((nmemb + 1) * sizeof(gid_t));
	if (!flat)
		die("out of memory");
	for (size_t u = 0; u < nusers; u++) {
		users[u].groups = flat;
		flat += users[u].ngroups;
		users[u].ngroups = 0;
	}
	for (size_t g = 0; g < ngrps; g++)
		for (size_t m = 0; m < grps[g].nmem; m++) {
			struct user *u = user_named(grps[g].mem[m]);
			u->groups[u->ngroups++] = grps[g].gid;
		}
	for (size_t u = 0; u < nusers; u++)
		qsort(users[u].groups, users[u].ngroups, sizeof(gid_t), cmp_gid);
}

/* ---- the calls ------------------------------------------------------- */
enum op { OP_PWNAM, OP_PWNAM_MISS, OP_PWUID, OP_GRNAM, OP_GRGID, OP_GROUPLIST };
static const char *const op_name[] = {"getpwnam_r", "getpwnam_r", "getpwuid_r",
				      "getgrnam_r", "getgrgid_r", "getgrouplist"};

/* sss: SSSD's client library, answering from its memory cache (the
 * mmap'ed /var/lib/sss/mc files) once a key has been looked up through
 * sssd; nss_bench.sh starts sssd in the namespace and every key of a row
 * is looked up once, untimed, before the row (see run_row). */
enum { NB = 4, SSS = 3 };
static const char *const be_service[NB] = {"scim", "cache", "files", "sss"};
static const char *const be_label[NB] = {"scim", "libnss-cache", "files", "SSSD memcache"};
static const char *const be_module[NB] = {"libnss_scim.so.2", "libnss_cache.so.2", NULL,
					  "libnss_sss.so.2"};
static int be_on[NB];

/* libnss-cache reads /etc/passwd.cache and /etc/group.cache. Under
 * scim_ns those would sit on the /etc overlay, which costs about 1.3 µs
 * per open+stat here and libnss-cache does two opens per lookup; the
 * snapshot is on the plain file system. So, with -c DIR, the cache files
 * are read from DIR on the same file system as the snapshot, through the
 * path setters libnss-cache exports for its own tests. glibc's later
 * dlopen of the same soname gets this copy, with the paths set. */
static const char *cache_dir;

static void cache_paths(void)
{
	static int done;
	if (done++ || !cache_dir)
		return;
	void *h = dlopen("libnss_cache.so.2", RTLD_NOW);
	char *(*setpw)(const char *) = h ? dlsym(h, "_nss_cache_setpwent_path") : NULL;
	char *(*setgr)(const char *) = h ? dlsym(h, "_nss_cache_setgrent_path") : NULL;
	if (!setpw || !setgr)
		die("libnss_cache.so.2: %s", dlerror());
	char p[4096];
	snprintf(p, sizeof(p), "%s/passwd.cache", cache_dir);
	setpw(p);
	snprintf(p, sizeof(p), "%s/group.cache", cache_dir);
	setgr(p);
}

static void select_backend(int b)
{
	if (b == 1)
		cache_paths();
	/* initgroups: getgrouplist consults it first; without an entry glibc
	 * would fall back to the group line nsswitch.conf had. */
	static const char *const dbs[] = {"passwd", "group", "initgroups"};
	for (size_t i = 0; i < 3; i++)
		if (__nss_configure_lookup(dbs[i], be_service[b]) != 0)
			die("__nss_configure_lookup(%s, %s) failed", dbs[i], be_service[b]);
}

/* The caller's buffer for the _r calls. It grows on ERANGE and is kept,
 * as glibc's own getgrgid() keeps its buffer: libnss-cache's getgrgid_r
 * refuses any buffer under 1 MiB with ERANGE, so a fixed smaller buffer
 * would make it fail where real programs retry and succeed. The retry is
 * inside the timed call, as it is for those programs. */
static char *buf;
static size_t buflen = 1 << 16;
static unsigned long n_erange[NB];
static gid_t glist[1 << 16];
static unsigned long wrong;

static void grow(int b)
{
	n_erange[b]++;
	if (buflen >= (64u << 20) || !(buf = realloc(buf, buflen *= 2)))
		fprintf(stderr, "nss_bench: ERANGE with a %zu byte buffer\n", buflen), exit(2);
}
#define RETRY(b, expr) while ((e = (expr)) == ERANGE) grow(b)

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static void bad(int b, const char *fmt, ...)
{
	va_list ap;
	if (wrong++ < 20) {
		fprintf(stderr, "WRONG ANSWER (%s): ", be_label[b]);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
}

static int pw_ok(int b, const char *call, int e, struct passwd *res, const struct user *u)
{
	if (e || !res) {
		bad(b, "%s %s: %s", call, u->name, e ? strerror(e) : "not found");
		return 0;
	}
	if (strcmp(res->pw_name, u->name) || res->pw_uid != u->uid || res->pw_gid != u->gid ||
	    strcmp(res->pw_gecos, u->gecos) || strcmp(res->pw_dir, u->dir) ||
	    strcmp(res->pw_shell, u->shell)) {
		bad(b, "%s %s: got %s:%u:%u:%s:%s:%s", call, u->name, res->pw_name,
		    (unsigned)res->pw_uid, (unsigned)res->pw_gid, res->pw_gecos, res->pw_dir,
		    res->pw_shell);
		return 0;
	}
	return 1;
}

static int gr_ok(int b, const char *call, int e, struct group *res, const struct grent *g)
{
	if (e || !res) {
		bad(b, "%s %s: %s", call, g->name, e ? strerror(e) : "not found");
		return 0;
	}
	size_t n = 0;
	while (res->gr_mem[n])
		n++;
	if (strcmp(res->gr_name, g->name) || res->gr_gid != g->gid || n != g->nmem) {
		bad(b, "%s %s: got %s:%u with %zu members, want %zu", call, g->name,
		    res->gr_name, (unsigned)res->gr_gid, n, g->nmem);
		return 0;
	}
	/* Order is not part of the contract: compare as sets. */
	qsort(res->gr_mem, n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < n; i++)
		if (strcmp(res->gr_mem[i], g->mem[i])) {
			bad(b, "%s %s: member %s, want %s", call, g->name, res->gr_mem[i], g->mem[i]);
			return 0;
		}
	return 1;
}

static int grouplist_ok(int b, int r, int n, const struct user *u)
{
	if (r < 0) {
		bad(b, "getgrouplist %s: more than %zu groups", u->name, sizeof(glist) / sizeof(*glist));
		return 0;
	}
	gid_t want[u->ngroups + 1];
	size_t nw = 0;
	want[nw++] = u->gid;
	for (size_t i = 0; i < u->ngroups; i++)
		want[nw++] = u->groups[i];
	qsort(want, nw, sizeof(gid_t), cmp_gid);
	qsort(glist, n, sizeof(gid_t), cmp_gid);
	size_t a = 0, c = 0;
	for (size_t i = 0; i < nw; i++)
		if (i == 0 || want[i] != want[i - 1])
			want[a++] = want[i];
	for (int i = 0; i < n; i++)
		if (i == 0 || glist[i] != glist[i - 1])
			glist[c++] = glist[i];
	if (a != c || memcmp(want, glist, a * sizeof(gid_t))) {
		bad(b, "getgrouplist %s: %zu distinct groups, want %zu", u->name, c, a);
		return 0;
	}
	return 1;
}

/* One timed call of op on key k (a user or group index; a number for
 * OP_PWNAM_MISS); checks the answer outside the timed span. */
/* The key's bytes read before the clock starts: users[] and grps[] are
 * megabytes of this program's own heap, and a random entry and its name
 * are a cache miss, and after a system call (scim's pread in a new
 * program empties the TLB on this VM) TLB misses too, that no backend
 * makes. Timed inside, they added 0.3-0.8 us to the fresh-program p90
 * (Dec 2: 3.58 against 3.32 us, 4.17 against 3.38, the same programs
 * alternating). */
static volatile size_t key_sink;

static uint64_t call(int b, enum op op, size_t k)
{
	struct passwd pw, *pr = NULL;
	struct group gr, *grr = NULL;
	char miss[32];
	uint64_t t0, t1;
	int e, n;
	const char *uname = NULL, *gname = NULL;
	uid_t uid = 0;
	gid_t ugid = 0, gid = 0;
	if (op == OP_GRNAM || op == OP_GRGID) {
		gname = grps[k].name;
		gid = grps[k].gid;
		key_sink = strlen(gname);
	} else if (op != OP_PWNAM_MISS) {
		uname = users[k].name;
		uid = users[k].uid;
		ugid = users[k].gid;
		key_sink = strlen(uname);
	}

	switch (op) {
	case OP_PWNAM:
		t0 = now_ns();
		RETRY(b, getpwnam_r(uname, &pw, buf, buflen, &pr));
		t1 = now_ns();
		pw_ok(b, "getpwnam_r", e, pr, &users[k]);
		break;
	case OP_PWNAM_MISS:
		snprintf(miss, sizeof(miss), "nosuch%06zu", k);
		t0 = now_ns();
		RETRY(b, getpwnam_r(miss, &pw, buf, buflen, &pr));
		t1 = now_ns();
		if (e || pr)
			bad(b, "getpwnam_r %s: %s", miss, e ? strerror(e) : "found");
		break;
	case OP_PWUID:
		t0 = now_ns();
		RETRY(b, getpwuid_r(uid, &pw, buf, buflen, &pr));
		t1 = now_ns();
		pw_ok(b, "getpwuid_r", e, pr, &users[k]);
		break;
	case OP_GRNAM:
		t0 = now_ns();
		RETRY(b, getgrnam_r(gname, &gr, buf, buflen, &grr));
		t1 = now_ns();
		gr_ok(b, "getgrnam_r", e, grr, &grps[k]);
		break;
	case OP_GRGID:
		t0 = now_ns();
		RETRY(b, getgrgid_r(gid, &gr, buf, buflen, &grr));
		t1 = now_ns();
		gr_ok(b, "getgrgid_r", e, grr, &grps[k]);
		break;
	case OP_GROUPLIST:
	default:
		n = sizeof(glist) / sizeof(*glist);
		t0 = now_ns();
		e = getgrouplist(uname, ugid, glist, &n);
		t1 = now_ns();
		grouplist_ok(b, e, n, &users[k]);
		break;
	}
	return t1 - t0;
}

/* ---- keys ------------------------------------------------------------- */
static uint64_t rng_state;
static uint64_t rng(void) /* splitmix64: fixed seed, same keys every run */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

struct row {
	enum op op;
	char keys[64];   /* what the keys are, for the table */
	size_t hot;      /* the one key, or SIZE_MAX for random keys */
	size_t space;    /* random keys are drawn from [0, space) */
	int no_sss;      /* SSSD not measured (see main) */
	uint32_t *ns[NB];
	size_t n[NB];
	uint64_t ix[NB], data[NB], seek[NB]; /* libnss-cache file activity */
};

static double pct(uint32_t *v, size_t n, double p)
{
	if (!n)
		return -1;
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i] / 1000.0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* SSSD's warm-up of one row may take this long; past it the row is not
 * measured for SSSD (its calls would go to sssd, not its memory cache). */
#define WARM_MAX_NS (400ull * 1000000000ull)

/* Runs row r: rounds, each backend in turn doing its share of keys or
 * its share of the time budget, whichever ends first. */
static void run_row(struct row *r, size_t iters, double budget_s, unsigned seed)
{
	enum { ROUNDS = 10 };
	size_t *keys = malloc(iters * sizeof(size_t));
	if (!keys)
		die("out of memory");
	rng_state = seed;
	for (size_t i = 0; i < iters; i++)
		keys[i] = r->hot != SIZE_MAX ? r->hot : rng() % r->space;
	uint64_t round_ns = (uint64_t)(budget_s * 1e9 / ROUNDS);
	int sss_on = be_on[SSS];
	if (r->no_sss)
		be_on[SSS] = 0;
	/* SSSD: every key once through sssd first, so that the timed calls
	 * measure its memory cache (a miss there goes to sssd over a socket).
	 * Misses are never cached: no warm-up for them. */
	if (be_on[SSS] && r->op != OP_PWNAM_MISS) {
		uint64_t t0 = now_ns();
		size_t distinct = 0;
		unsigned char *seen = calloc(r->space ? r->space : 1, 1);
		if (!seen)
			die("out of memory");
		select_backend(SSS);
		for (size_t i = 0; i < iters; i++) {
			size_t k = keys[i];
			if (r->hot == SIZE_MAX && seen[k])
				continue;
			if (r->hot == SIZE_MAX)
				seen[k] = 1;
			call(SSS, r->op, k);
			distinct++;
			if (now_ns() - t0 > WARM_MAX_NS)
				break;
			if (r->hot != SIZE_MAX)
				break;
		}
		free(seen);
		fprintf(stderr, "nss_bench: sssd warm-up: %zu keys through sssd in %.1f s\n",
			distinct, (double)(now_ns() - t0) / 1e9);
		if (now_ns() - t0 > WARM_MAX_NS) {
			fprintf(stderr, "nss_bench: sssd warm-up too slow: SSSD not measured for this row\n");
			be_on[SSS] = 0; /* its timed calls would be socket misses */
		}
	}
	for (int b = 0; b < NB; b++)
		if (be_on[b] && !(r->ns[b] = malloc(iters * sizeof(uint32_t))))
			die("out of memory");
	for (int round = 0; round < ROUNDS; round++) {
		size_t end = iters * (round + 1) / ROUNDS;
		for (int b = 0; b < NB; b++) {
			if (!be_on[b])
				continue;
			select_backend(b);
			unsigned long ix0 = n_ixopen, d0 = n_dataopen, s0 = n_seek;
			uint64_t spent = 0;
			size_t done = 0;
			while (r->n[b] < end && (done == 0 || spent < round_ns)) {
				uint64_t t = call(b, r->op, keys[r->n[b]]);
				r->ns[b][r->n[b]++] = t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
				spent += t;
				done++;
			}
			r->ix[b] += n_ixopen - ix0;
			r->data[b] += n_dataopen - d0;
			r->seek[b] += n_seek - s0;
		}
	}
	for (int b = 0; b < NB; b++)
		if (be_on[b])
			qsort(r->ns[b], r->n[b], sizeof(uint32_t), cmp_u32);
	be_on[SSS] = sss_on;
	free(keys);
}

/* ---- cold start: first lookup and memory, in a fresh child ----------- */
struct cold {
	double first_us, second_us;
	long rss0, rss1, rss2, anon0, anon2; /* KiB */
	size_t warm_calls;
};

static void rss(long *rss_kb, long *anon_kb)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	*rss_kb = *anon_kb = -1;
	while (f && fgets(line, sizeof(line), f)) {
		sscanf(line, "VmRSS: %ld", rss_kb);
		sscanf(line, "RssAnon: %ld", anon_kb);
	}
	if (f)
		fclose(f);
}

/* A child with a pipe p from it (p[1] its end): fork's answer. */
static pid_t fork_piped(int p[2])
{
	if (pipe(p))
		die("pipe: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	return pid;
}

/* The child has done no lookup before: its first call pays for loading
 * the module and opening its files. "Warm" is then up to 2,000 random
 * keys of each call (0.5 s each at most), after which RSS includes
 * whatever the module keeps (SQLite's page cache for scim). */
static void cold_child(int b, int fd, unsigned seed)
{
	struct cold c = {0};
	long dummy;
	rng_state = seed;
	rss(&c.rss0, &c.anon0);
	size_t k = rng() % nusers;
	uint64_t t0 = now_ns();
	select_backend(b); /* for libnss-cache with -c: its dlopen, counted */
	call(b, OP_PWNAM, k);
	c.first_us = (now_ns() - t0) / 1000.0;
	rss(&c.rss1, &dummy);
	c.second_us = call(b, OP_PWNAM, rng() % nusers) / 1000.0;
	const enum op ops[] = {OP_PWNAM, OP_PWUID, OP_GRNAM, OP_GRGID, OP_GROUPLIST};
	for (size_t o = 0; o < sizeof(ops) / sizeof(*ops); o++) {
		uint64_t spent = 0;
		size_t space = ops[o] == OP_GRNAM || ops[o] == OP_GRGID ? ngrps : nusers;
		for (int i = 0; i < 2000 && spent < 500000000u; i++, c.warm_calls++)
			spent += call(b, ops[o], rng() % space);
	}
	rss(&c.rss2, &c.anon2);
	if (write(fd, &c, sizeof(c)) != sizeof(c) || wrong)
		_exit(1);
	_exit(0);
}

/* First lookup in a fresh process, FIRST_SAMPLES times per backend (a
 * fork of this process, which has never looked anything up, per sample):
 * with the module already loaded (its dlopen timed on its own), and
 * including the load, as a new `id` or sshd child pays it. */
enum { FIRST_SAMPLES = 41 };
struct first {
	double load_us, first_us, all_us; /* medians; -1 when not measured */
};

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One child: mode 0 first lookup including the module's load, 1 the
 * module's dlopen alone, 2 the first lookup after that dlopen. */
static double first_sample(int b, int mode, size_t k)
{
	int p[2];
	double us = -1;
	pid_t pid = fork_piped(p);
	if (pid == 0) {
		close(p[0]);
		double t[2] = {0, 0};
		uint64_t t0 = now_ns();
		if (mode) {
			/* RTLD_LAZY, as glibc's NSS loads modules. */
			if (!dlopen(be_module[b], RTLD_LAZY))
				_exit(1);
			t[1] = (now_ns() - t0) / 1000.0;
			t0 = now_ns();
		}
		select_backend(b);
		call(b, OP_PWNAM, k);
		t[0] = (now_ns() - t0) / 1000.0;
		if (write(p[1], t, sizeof(t)) != sizeof(t) || wrong)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	double t[2];
	ssize_t got = read(p[0], t, sizeof(t));
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	if (got == sizeof(t) && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		us = mode == 1 ? t[1] : t[0];
	return us;
}

static int run_first(int b, size_t k, struct first *f)
{
	double v[3][FIRST_SAMPLES];
	f->load_us = f->first_us = f->all_us = -1;
	for (int mode = 0; mode < 3; mode++) {
		if (mode && !be_module[b])
			break;
		for (int i = 0; i < FIRST_SAMPLES; i++) {
			/* mode 1 and 2 are one child: the dlopen, then the lookup */
			if (mode == 2)
				break;
			if (mode == 0) {
				if ((v[0][i] = first_sample(b, 0, k)) < 0)
					return 0;
			} else {
				if ((v[1][i] = first_sample(b, 1, k)) < 0 ||
				    (v[2][i] = first_sample(b, 2, k)) < 0)
					return 0;
			}
		}
	}
	double *out[3] = {&f->all_us, &f->load_us, &f->first_us};
	for (int mode = 0; mode < 3; mode++) {
		if (mode && !be_module[b])
			break;
		qsort(v[mode], FIRST_SAMPLES, sizeof(double), cmp_dbl);
		*out[mode] = v[mode][FIRST_SAMPLES / 2];
	}
	return 1;
}

static int run_cold(int b, unsigned seed, struct cold *c)
{
	int p[2];
	pid_t pid = fork_piped(p);
	if (pid == 0) {
		close(p[0]);
		cold_child(b, p[1], seed);
	}
	close(p[1]);
	ssize_t got = read(p[0], c, sizeof(*c));
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	return got == sizeof(*c) && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* ---- threads: one process, N threads, random getpwuid_r ------------------
 * The same keys as the "getpwuid_r random" row (so SSSD's memory cache
 * holds them), N threads for THR_SECS each, every answer checked; the
 * backends and thread counts take turns for THR_ROUNDS rounds and the
 * median throughput is reported. */
enum { THR_ROUNDS = 5, THR_MAX = 4 };
#define THR_SECS 0.4
static const int thr_n[] = {1, 2, 4};
static unsigned long thr_wrong;

/* What a threads row runs per step: a getpwuid_r through glibc, the
 * module's _nss_*_getpwuid_r called directly, the machine's own work
 * alone (no lookup), or glibc's dispatch done step by step with glibc's
 * own functions (THR_PRIV, THR_PRIV_STORE, below), then the module. */
enum thr_kind { THR_GLIBC, THR_DIRECT, THR_MACH, THR_PRIV, THR_PRIV_STORE, THR_KINDS };

/* The module that answers at once (nss_null.c, libnss_scimnull.so.2,
 * staged beside libnss_scim.so.2 by nss_bench.sh): rows with backend
 * NULLMOD measure glibc's dispatch alone. */
enum { NULLMOD = -1 };
static const char null_service[] = "scimnull", null_module[] = "libnss_scimnull.so.2";

/* glibc's getpwuid_r (2.33 and later, nss/getXXbyYY_r.c) finds its
 * module with __nss_passwd_lookup2 (nss/XXX-lookup.c), which is
 *   __nss_database_get (nss_database_passwd, &__nss_passwd_database);
 *   *ni = __nss_passwd_database;
 *   return __nss_lookup (ni, "getpwuid_r", NULL, &fct);
 * __nss_database_get stores the action list into its second argument:
 * here a process-wide variable of libc's (its .bss), written by every
 * lookup of every thread, the same value each time. THR_PRIV_STORE calls
 * __nss_passwd_lookup2 itself; THR_PRIV makes the same two calls with a
 * local of the thread's as that argument. Nothing else differs, so
 * their difference is what that one store costs. glibc exports these as
 * GLIBC_PRIVATE: found with dlsym, only read, never written; the rows are
 * not measured if they are missing or do not give getpwuid_r's answer
 * (passwd's index and the module's function are checked first). Upstream
 * dropped the variable after 2.42 (commit cdb0e9dc70, "nss: Remove
 * effectively unused __nss_*_database variables"). */
static struct {
	_Bool (*get)(int, void **);
	int (*lookup)(void **, const char *, const char *, void **);
	int (*lookup2)(void **, const char *, const char *, void **);
} gpriv;
enum { GLIBC_DB_PASSWD = 9 }; /* nss/databases.def, in order: aliases .. passwd */

/* -P: a plain program's threads (plain_threads): glibc reads nsswitch.conf
 * itself, no __nss_configure_lookup. */
static int plain;

/* Each thread's state on cache lines of its own, its counters kept in
 * locals while it runs: an array of these on one stack put two threads'
 * per-lookup writes (the key position, the count) on one line, a
 * bouncing line of the harness's own that each lookup paid for. */
struct thr {
	const size_t *keys;
	size_t nkeys, at;
	int *stop;
	unsigned long n;
	uint64_t cpu_ns; /* the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) */
	long waits; /* its voluntary context switches (RUSAGE_THREAD) */
	/* What each step does (kind): a getpwuid_r through glibc, the
	 * module's _nss_*_getpwuid_r called directly (direct), the machine's
	 * own work alone (mach, MACH_READS reads of one random page of the
	 * snapshot, no lookup), or glibc's dispatch step by step (gpriv).
	 * null: the module that answers at once (its answer is checked
	 * against its fixed entry). */
	enum thr_kind kind;
	int null;
	enum nss_status (*direct)(uid_t, struct passwd *, char *, size_t, int *);
	const unsigned char *mach;
	size_t mach_pages;
	uint64_t sink;
} __attribute__((aligned(64)));

/* The machine's baseline (thr_mach): per step, MACH_READS dependent
 * reads of cache lines in one random 4 KiB page of the snapshot's own
 * mapping, as a warm random lookup reads its bucket's page (the count
 * and tags, an entry's offset, the record), without any lookup code:
 * how this access pattern alone scales from 1 to 2 and 4 threads on
 * this machine (shared L3, TLB misses of 4 KiB pages, the host's
 * placement of the vCPUs). */
enum { MACH_READS = 3 };
static struct {
	const unsigned char *base;
	size_t pages;
} mach;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static void *thr_run(void *arg)
{
	struct thr *t = arg;
	size_t len = 1 << 16;
	char *b = malloc(len);
	if (!b)
		die("out of memory");
	size_t at = t->at;
	unsigned long n = 0, bad = 0;
	uint64_t sink = 0;
	uint64_t c0 = thread_cpu_ns();
	struct rusage ru0, ru1;
	getrusage(RUSAGE_THREAD, &ru0);
	while (!__atomic_load_n(t->stop, __ATOMIC_RELAXED)) {
		for (int j = 0; j < 64; j++) {
			size_t k = t->keys[at];
			if (++at == t->nkeys)
				at = 0;
			n++;
			if (t->mach) {
				/* A page from the key, then lines picked by what
				 * was read (dependent, as a lookup's are). */
				const unsigned char *pg = t->mach +
					((k * 0x9E3779B97F4A7C15ull) >> 20) % t->mach_pages * 4096;
				unsigned v = pg[k & 63];
				for (int r = 1; r < MACH_READS; r++)
					v = pg[((v + k + (unsigned)r * 17) & 63) * 64 + r];
				sink += v;
				continue;
			}
			const struct user *u = &users[k];
			struct passwd pw, *pr = NULL;
			int e, err = 0;
			if (t->kind == THR_GLIBC) {
				e = getpwuid_r(u->uid, &pw, b, len, &pr);
			} else {
				enum nss_status (*f)(uid_t, struct passwd *, char *, size_t, int *) =
					t->direct;
				void *ni, *fp = NULL;
				int r = 0;
				if (t->kind == THR_PRIV)
					r = gpriv.get(GLIBC_DB_PASSWD, &ni)
						? gpriv.lookup(&ni, "getpwuid_r", NULL, &fp) : -1;
				else if (t->kind == THR_PRIV_STORE)
					r = gpriv.lookup2(&ni, "getpwuid_r", NULL, &fp);
				if (fp)
					f = (enum nss_status (*)(uid_t, struct passwd *, char *,
								 size_t, int *))fp;
				enum nss_status st = r == 0 ? f(u->uid, &pw, b, len, &err)
							    : NSS_STATUS_UNAVAIL;
				e = st == NSS_STATUS_SUCCESS ? 0 : err ? err : ENOENT;
				pr = e ? NULL : &pw;
			}
			if (e || !pr || pr->pw_uid != u->uid)
				bad++;
			else if (t->null ? strcmp(pr->pw_name, null_service)
					 : strcmp(pr->pw_name, u->name) || pr->pw_gid != u->gid ||
						   strcmp(pr->pw_dir, u->dir))
				bad++;
		}
	}
	t->cpu_ns = thread_cpu_ns() - c0;
	getrusage(RUSAGE_THREAD, &ru1);
	t->waits = ru1.ru_nvcsw - ru0.ru_nvcsw;
	t->n = n;
	t->at = at;
	t->sink = sink;
	if (bad)
		__atomic_add_fetch(&thr_wrong, bad, __ATOMIC_RELAXED);
	free(b);
	return NULL;
}

/* Lookups per second of n threads on backend b; *cpu_ns gets the CPU
 * time per lookup summed over the threads: unchanged with more threads
 * when they do not contend (a shared lock or cache line would raise it),
 * whatever the machine's load does to the wall-clock rate. */
/* BENCH_THREADS_RT=1 (nss_bench.sh passes the environment through): the
 * threads rows' lookup threads run at real-time priority (SCHED_FIFO 1),
 * so that on a machine busy with other work the n threads do run at once
 * (with other work they mostly take turns, and a shared cache line costs
 * nothing while they do), and this thread above them (2), so it always
 * wakes to stop them; children start at normal priority
 * (SCHED_RESET_ON_FORK), and the kernel keeps 5% of each second for other
 * work (sched_rt_runtime_us). Off by default. 1 if on. */
static int thr_rt(void)
{
	static int rt = -1;
	if (rt < 0) {
		const char *e = getenv("BENCH_THREADS_RT");
		struct sched_param sp = {.sched_priority = 2};
		rt = e && *e && strcmp(e, "0") &&
		     sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0;
	}
	return rt;
}

static void thr_rt_end(void)
{
	struct sched_param sp = {.sched_priority = 0};
	if (thr_rt())
		sched_setscheduler(0, SCHED_OTHER, &sp);
}

/* What thr_once runs: b's lookups (b NULLMOD: the module that answers
 * at once) as kind says, or the machine baseline (b ignored). -1 if the
 * row cannot be measured (a module or glibc's functions missing). */
static double thr_once(int b, enum thr_kind kind, int n, const size_t *keys,
		       size_t nkeys, double *cpu_ns, unsigned long *waits,
		       unsigned long *lookups)
{
	pthread_t th[THR_MAX];
	static struct thr t[THR_MAX];
	static int stop __attribute__((aligned(64)));
	void *direct = NULL;
	const char *svc = b == NULLMOD ? null_service : be_service[b];
	const char *mod = b == NULLMOD ? null_module : be_module[b];
	if (plain && kind != THR_GLIBC)
		return -1;
	if ((kind == THR_GLIBC && !plain) || kind == THR_PRIV || kind == THR_PRIV_STORE) {
		if (b != NULLMOD)
			select_backend(b);
		else if (__nss_configure_lookup("passwd", null_service) != 0)
			return -1;
	}
	if (kind == THR_DIRECT || kind == THR_PRIV || kind == THR_PRIV_STORE) {
		char sym[64];
		void *h = mod ? dlopen(mod, RTLD_NOW) : NULL;
		snprintf(sym, sizeof(sym), "_nss_%s_getpwuid_r", svc);
		if (!h || !(direct = dlsym(h, sym)))
			return -1;
	}
	if (kind == THR_PRIV || kind == THR_PRIV_STORE) {
		/* glibc's steps give what getpwuid_r would use: passwd's action
		 * list (the same list both ways) and this module's function. */
		void *ni = NULL, *ni2 = NULL, *f = NULL;
		if (!gpriv.get || !gpriv.lookup || !gpriv.lookup2 ||
		    !gpriv.get(GLIBC_DB_PASSWD, &ni) || gpriv.lookup2(&ni2, "getpwuid_r", NULL, &f) ||
		    ni != ni2 || f != direct)
			return -1;
	}
	stop = 0;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (thr_rt()) {
		struct sched_param sp = {.sched_priority = 1};
		pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
		pthread_attr_setschedparam(&attr, &sp);
	}
	uint64_t t0 = now_ns();
	for (int i = 0; i < n; i++) {
		t[i] = (struct thr){keys, nkeys, nkeys * (size_t)i / (size_t)n, &stop, 0, 0, 0,
				    kind, b == NULLMOD,
				    (enum nss_status (*)(uid_t, struct passwd *, char *, size_t,
							 int *))direct,
				    kind == THR_MACH ? mach.base : NULL, mach.pages, 0};
		if (pthread_create(&th[i], &attr, thr_run, &t[i]))
			die("pthread_create failed");
	}
	struct timespec ts = {0, (long)(THR_SECS * 1e9)};
	nanosleep(&ts, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	unsigned long total = 0;
	uint64_t cpu = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		total += t[i].n;
		cpu += t[i].cpu_ns;
		*waits += (unsigned long)t[i].waits;
	}
	pthread_attr_destroy(&attr);
	*cpu_ns = total ? (double)cpu / (double)total : -1;
	*lookups += total;
	return (double)total / ((double)(now_ns() - t0) / 1e9);
}

/* One row of the threads table: lookups/s of 1, 2, 4 threads (med), CPU
 * ns per lookup (cpu), waits per million lookups (w). */
static void thr_print_row(const char *label, const double med[3], const double cpu[3],
			  const double w[3])
{
	if (med[0] <= 0 || med[1] <= 0 || med[2] <= 0) {
		printf("| %s | not measured | | | | |\n", label);
		return;
	}
	printf("| %s | %.0f | %.0f (%.2f×) | %.0f (%.2f×) | %.0f / %.0f / %.0f | %.1f / %.1f / %.1f |\n",
	       label, med[0], med[1], med[1] / med[0], med[2], med[2] / med[0], cpu[0], cpu[1],
	       cpu[2], w[0], w[1], w[2]);
}

/* The threads rows' keys (the getpwuid_r random row's: seed + 3), iters
 * of them, malloc'd. */
static size_t *thr_keys(size_t iters, unsigned seed)
{
	size_t *keys = malloc(iters * sizeof(size_t));
	if (!keys)
		die("out of memory");
	rng_state = seed + 3;
	for (size_t i = 0; i < iters; i++)
		keys[i] = rng() % nusers;
	return keys;
}

/* The median of one row's THR_ROUNDS rounds (sorts v). */
static double thr_median(double v[THR_ROUNDS])
{
	qsort(v, THR_ROUNDS, sizeof(double), cmp_dbl);
	return v[THR_ROUNDS / 2];
}

/* -P SERVICE: the threads row of a plain program, one table row on
 * stdout. nss_bench.sh runs it in a namespace whose nsswitch.conf says
 * "passwd: SERVICE" (scim or scimnull), so glibc takes the path every
 * program takes: before each call it stats /etc/nsswitch.conf and takes
 * its NSS lock to see whether the file changed, and, with no nscd
 * running, counts calls in a process-wide variable and tries nscd's
 * socket every 100th call. The same keys, rounds and answer checks as
 * the main table. */
static int plain_threads(const char *svc, size_t iters, unsigned seed)
{
	int b = strcmp(svc, null_service) == 0 ? NULLMOD : strcmp(svc, "scim") == 0 ? 0 : -2;
	if (b == -2)
		die("-P %s: scim or %s", svc, null_service);
	plain = 1;
	size_t *keys = thr_keys(iters, seed); /* the main table's keys */
	double thr[3][THR_ROUNDS], cpu[3][THR_ROUNDS], med[3], cmed[3], w[3];
	unsigned long waits[3] = {0}, lookups[3] = {0};
	for (int round = 0; round < THR_ROUNDS; round++)
		for (int i = 0; i < 3; i++)
			thr[i][round] = thr_once(b, THR_GLIBC, thr_n[i], keys, iters, &cpu[i][round],
						 &waits[i], &lookups[i]);
	for (int i = 0; i < 3; i++) {
		med[i] = thr_median(thr[i]);
		cmed[i] = thr_median(cpu[i]);
		w[i] = lookups[i] ? 1e6 * (double)waits[i] / (double)lookups[i] : -1;
	}
	free(keys);
	thr_rt_end();
	char label[160];
	snprintf(label, sizeof(label), "a plain program, nsswitch.conf `passwd: %s`%s%s", svc,
		 b == NULLMOD ? " (the module that answers at once)" : "",
		 thr_rt() ? ", threads at real-time priority" : "");
	thr_print_row(label, med, cmed, w);
	if (thr_wrong)
		fprintf(stderr, "nss_bench: -P %s: %lu wrong answers\n", svc, thr_wrong);
	return thr_wrong ? 1 : 0;
}

/* The snapshot reader.conf names (its cache_path), mapped whole and
 * read-only: its whole 4 KiB pages in *np, its descriptor in *fdp (-1 if
 * it cannot be opened). MAP_FAILED if it cannot be mapped. */
static void *snapshot_map(size_t *np, int *fdp)
{
	char line[4200], path[4096] = "";
	FILE *f = fopen("/etc/scimbridge/reader.conf", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, " cache_path = %4095s", path) == 1)
			break;
	if (f)
		fclose(f);
	int fd = path[0] ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : 0;
	*np = (size_t)(size / 4096);
	*fdp = fd;
	return *np ? mmap(NULL, *np * 4096, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
}

/* The snapshot reader.conf names, mapped for the machine baseline (every
 * page read once first: no page fault is timed). 0 if it cannot be. */
static int mach_map(void)
{
	size_t np;
	int fd;
	void *m = snapshot_map(&np, &fd);
	if (fd >= 0)
		close(fd);
	if (m == MAP_FAILED)
		return 0;
	volatile unsigned char sink = 0;
	for (size_t i = 0; i < np; i++)
		sink += ((const unsigned char *)m)[i * 4096];
	(void)sink;
	mach.base = m;
	mach.pages = np;
	return 1;
}

/* ---- a freshly exec'd program (nss_bench -X): first lookup, then random --
 * What a new `id`, sshd child or Slurm step pays: nothing of the module
 * loaded or mapped before, no page of the snapshot in the process (a fork
 * would inherit the parent's). The child prints the first getpwnam_r
 * (module load included) and FRESH_CALLS more random ones, in ns; then a
 * second line: the preads (see pread above) and minor page faults of
 * those random calls, and for scim FRESH_CALLS null system calls
 * (fresh_syscall); scim's child then a third line: FRESH_CALLS preads of
 * one 4 KiB page of the snapshot (fresh_pread). */
enum { FRESH_SAMPLES = 21, FRESH_CALLS = 100 };

/* The system call a random scim lookup makes in a new program, alone:
 * pread of one 4 KiB page at a random page of the snapshot (the file
 * reader.conf names) that is in the page cache (mincore; a page the
 * lookups never need may be on disk), into the same buffer each time, in
 * ns. Prints nothing if the file cannot be read so. */
static void fresh_pread(void)
{
	size_t np;
	int fd;
	void *m = snapshot_map(&np, &fd);
	unsigned char *vec = m != MAP_FAILED ? malloc(np) : NULL;
	static unsigned char page[4096];
	size_t got = 0;
	uint64_t t[FRESH_CALLS];
	if (vec && mincore(m, np * 4096, vec) == 0)
		for (int tries = 0; got < FRESH_CALLS && tries < 100000; tries++) {
			size_t p = rng() % np;
			if (!(vec[p] & 1))
				continue;
			uint64_t t0 = now_ns();
			if (pread(fd, page, sizeof(page), (off_t)p * 4096) != (ssize_t)sizeof(page))
				break;
			t[got++] = now_ns() - t0;
		}
	if (got == FRESH_CALLS)
		for (size_t i = 0; i < got; i++)
			printf("%s%" PRIu64, i ? " " : "", t[i]);
	printf("\n");
	free(vec);
	if (m != MAP_FAILED)
		munmap(m, np * 4096);
	if (fd >= 0)
		close(fd);
}

/* The least a system call costs in a new program on this machine: getppid
 * (no work in the kernel), FRESH_CALLS times, in ns, after the counts. */
static void fresh_syscall(void)
{
	for (int i = 0; i < FRESH_CALLS; i++) {
		uint64_t t0 = now_ns();
		(void)getppid();
		printf(" %" PRIu64, now_ns() - t0);
	}
}

static long minflt(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : 0;
}

static int fresh_child(int b, unsigned seed, size_t iters, size_t sample)
{
	size_t *keys = malloc(iters * sizeof(size_t));
	if (!keys)
		die("out of memory");
	rng_state = seed; /* row 0's keys (getpwnam_r random): SSSD holds them */
	for (size_t i = 0; i < iters; i++)
		keys[i] = rng() % nusers;
	size_t at = sample * (FRESH_CALLS + 1) % iters;
	uint64_t t0 = now_ns();
	select_backend(b);
	call(b, OP_PWNAM, keys[at]);
	printf("%" PRIu64, now_ns() - t0);
	/* Counted around the random calls only: the stdio buffer they print
	 * into is written before (the first call's figure). */
	unsigned long p0 = n_pread;
	long f0 = minflt();
	uint64_t t[FRESH_CALLS];
	for (int i = 0; i < FRESH_CALLS; i++)
		t[i] = call(b, OP_PWNAM, keys[(at + 1 + (size_t)i) % iters]);
	long f1 = minflt();
	unsigned long p1 = n_pread;
	for (int i = 0; i < FRESH_CALLS; i++)
		printf(" %" PRIu64, t[i]);
	printf("\n%lu %ld", p1 - p0, f1 - f0);
	if (b == 0)
		fresh_syscall();
	printf("\n");
	if (b == 0)
		fresh_pread();
	return wrong ? 1 : 0;
}

struct fresh {
	double first_us, p50_us, p90_us; /* -1: not measured */
	double pread_p50_us, pread_p90_us; /* scim: fresh_pread; -1 none */
	double sys_p50_us, sys_p90_us; /* scim: fresh_syscall; -1 none */
	double preads, faults; /* per random call, all programs (-1 none) */
};

/* FRESH_SAMPLES exec'd children of backend b: the median first lookup,
 * and p50/p90 of every child's random calls pooled. */
static int run_fresh(int b, char **argv0_args, struct fresh *f)
{
	double first[FRESH_SAMPLES];
	static uint32_t calls[FRESH_SAMPLES * FRESH_CALLS];
	static uint32_t preads[FRESH_SAMPLES * FRESH_CALLS];
	static uint32_t sys[FRESH_SAMPLES * FRESH_CALLS];
	size_t nc = 0, npr = 0, nsys = 0;
	unsigned long cpreads = 0;
	long cfaults = 0;
	int ncounts = 0;
	f->first_us = f->p50_us = f->p90_us = -1;
	f->pread_p50_us = f->pread_p90_us = -1;
	f->sys_p50_us = f->sys_p90_us = -1;
	f->preads = f->faults = -1;
	for (int s = 0; s < FRESH_SAMPLES; s++) {
		int p[2];
		pid_t pid = fork_piped(p);
		if (pid == 0) {
			char bs[16], ss[16];
			snprintf(bs, sizeof(bs), "%d", b);
			snprintf(ss, sizeof(ss), "%d", s);
			dup2(p[1], 1);
			close(p[0]);
			close(p[1]);
			/* argv0_args: this program's options, then -X b -S sample */
			char *args[32];
			int n = 0;
			for (; argv0_args[n] && n < 26; n++)
				args[n] = argv0_args[n];
			args[n++] = "-X";
			args[n++] = bs;
			args[n++] = "-S";
			args[n++] = ss;
			args[n] = NULL;
			execv("/proc/self/exe", args);
			_exit(127);
		}
		close(p[1]);
		char line[8192], line2[8192], line3[8192];
		FILE *in = fdopen(p[0], "r");
		int ok = in && fgets(line, sizeof(line), in);
		int ok3 = ok && fgets(line3, sizeof(line3), in);
		int ok2 = ok3 && fgets(line2, sizeof(line2), in);
		if (in)
			fclose(in);
		int st;
		waitpid(pid, &st, 0);
		if (!ok || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 0;
		char *q = line, *end;
		first[s] = strtod(q, &end) / 1000.0;
		for (int i = 0; i < FRESH_CALLS; i++) {
			q = end;
			double v = strtod(q, &end);
			if (end == q)
				return 0;
			calls[nc++] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
		}
		unsigned long np_;
		long nf_;
		int used = 0;
		if (ok3 && sscanf(line3, "%lu %ld%n", &np_, &nf_, &used) == 2) {
			cpreads += np_;
			cfaults += nf_;
			ncounts++;
			for (char *e, *q3 = line3 + used;; q3 = e) {
				double v = strtod(q3, &e);
				if (e == q3 || nsys == FRESH_SAMPLES * FRESH_CALLS)
					break;
				sys[nsys++] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
			}
		}
		for (char *e, *q2 = line2; ok2; q2 = e) {
			double v = strtod(q2, &e);
			if (e == q2 || npr == FRESH_SAMPLES * FRESH_CALLS)
				break;
			preads[npr++] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
		}
	}
	qsort(first, FRESH_SAMPLES, sizeof(double), cmp_dbl);
	qsort(calls, nc, sizeof(uint32_t), cmp_u32);
	f->first_us = first[FRESH_SAMPLES / 2];
	f->p50_us = pct(calls, nc, 0.5);
	f->p90_us = pct(calls, nc, 0.9);
	if (npr == FRESH_SAMPLES * FRESH_CALLS) {
		qsort(preads, npr, sizeof(uint32_t), cmp_u32);
		f->pread_p50_us = pct(preads, npr, 0.5);
		f->pread_p90_us = pct(preads, npr, 0.9);
	}
	if (nsys == FRESH_SAMPLES * FRESH_CALLS) {
		qsort(sys, nsys, sizeof(uint32_t), cmp_u32);
		f->sys_p50_us = pct(sys, nsys, 0.5);
		f->sys_p90_us = pct(sys, nsys, 0.9);
	}
	if (ncounts == FRESH_SAMPLES) {
		f->preads = (double)cpreads / (FRESH_SAMPLES * FRESH_CALLS);
		f->faults = (double)cfaults / (FRESH_SAMPLES * FRESH_CALLS);
	}
	return 1;
}

/* ---- output ------------------------------------------------------------ */
static const char *fmt_us(double us, char *out, size_t n)
{
	if (us < 0)
		snprintf(out, n, "-");
	else if (us < 10)
		snprintf(out, n, "%.2f", us);
	else if (us < 100)
		snprintf(out, n, "%.1f", us);
	else {
		/* thousands separators: 281,204 */
		char d[32];
		int len = snprintf(d, sizeof(d), "%.0f", us), o = 0;
		for (int i = 0; i < len && o + 2 < (int)n; i++) {
			if (i && (len - i) % 3 == 0)
				out[o++] = ',';
			out[o++] = d[i];
		}
		out[o] = 0;
	}
	return out;
}

static double med(struct row *r, int b)
{
	return be_on[b] ? pct(r->ns[b], r->n[b], 0.5) : -1;
}

int main(int argc, char **argv)
{
	const char *pwpath = NULL, *grpath = NULL;
	size_t iters = 20000;
	double budget = 1.0;
	unsigned seed = 42;
	const char *backends = "scim,cache,files";
	int opt, xb = -1;
	size_t xsample = 0;
	const char *plain_svc = NULL;
	while ((opt = getopt(argc, argv, "c:p:g:n:t:s:b:X:S:P:")) != -1)
		switch (opt) {
		case 'c': cache_dir = optarg; break;
		case 'p': pwpath = optarg; break;
		case 'g': grpath = optarg; break;
		case 'n': iters = strtoul(optarg, NULL, 10); break;
		case 't': budget = strtod(optarg, NULL); break;
		case 's': seed = strtoul(optarg, NULL, 10); break;
		case 'b': backends = optarg; break;
		case 'X': xb = atoi(optarg); break; /* a fresh child (run_fresh) */
		case 'S': xsample = strtoul(optarg, NULL, 10); break;
		case 'P': plain_svc = optarg; break; /* a plain program's threads row */
		default:
			fprintf(stderr, "usage: nss_bench [-c libnss-cache dir] [-p passwd.cache] [-g group.cache]\n"
					"       (-X backend -S sample: one freshly exec'd sample, see run_fresh)\n"
					"       [-n iters] [-t budget seconds per call and backend] [-s seed]\n"
					"       [-b scim,cache,files,sss]\n"
					"       (-P scim|scimnull: only the threads row of a plain program)\n");
			return 2;
		}
	if (iters < 10)
		iters = 10;
	for (int b = 0; b < NB; b++) {
		const char *p = strstr(backends, be_service[b]);
		size_t l = strlen(be_service[b]);
		be_on[b] = p && (p == backends || p[-1] == ',') && (p[l] == 0 || p[l] == ',');
	}
	char pwbuf[4096], grbuf[4096];
	snprintf(pwbuf, sizeof(pwbuf), "%s/passwd.cache", cache_dir ? cache_dir : "/etc");
	snprintf(grbuf, sizeof(grbuf), "%s/group.cache", cache_dir ? cache_dir : "/etc");
	buf = malloc(buflen);
	load_oracle(pwpath ? pwpath : pwbuf, grpath ? grpath : grbuf);
	if (!nusers || !ngrps)
		die("no users or no groups in %s / %s", pwpath, grpath);
	if (xb >= 0 && xb < NB)
		return fresh_child(xb, seed, iters, xsample);
	if (plain_svc)
		return plain_threads(plain_svc, iters, seed);

	/* The hot keys and the two large cases, found in the data. */
	size_t hot_user = nusers / 2, big_group = 0, many_user = 0;
	for (size_t g = 1; g < ngrps; g++)
		if (grps[g].nmem > grps[big_group].nmem)
			big_group = g;
	for (size_t u = 1; u < nusers; u++)
		if (users[u].ngroups > users[many_user].ngroups)
			many_user = u;

	/* Cold start first, in children of a process that has not looked
	 * anything up yet. */
	struct cold cold[NB] = {0};
	struct first first[NB] = {0};
	int cold_ok[NB] = {0};
	for (int b = 0; b < NB; b++) {
		if (be_on[b] && !(cold_ok[b] = run_cold(b, seed, &cold[b])))
			fprintf(stderr, "nss_bench: %s: cold-start child failed\n", be_label[b]);
	}

	/* Each backend really answers: root exists only in /etc/passwd. */
	for (int b = 0; b < NB; b++) {
		if (!be_on[b])
			continue;
		struct passwd pw, *pr = NULL;
		select_backend(b);
		getpwnam_r("root", &pw, buf, buflen, &pr);
		if ((pr != NULL) != (b == 2))
			die("backend selection does not work: root %s through %s",
			    pr ? "found" : "not found", be_label[b]);
	}

	struct row rows[10] = {
		{.op = OP_PWNAM, .hot = SIZE_MAX, .space = nusers},
		{.op = OP_PWNAM, .hot = hot_user},
		{.op = OP_PWNAM_MISS, .hot = SIZE_MAX, .space = 1000000},
		{.op = OP_PWUID, .hot = SIZE_MAX, .space = nusers},
		{.op = OP_PWUID, .hot = hot_user},
		{.op = OP_GRNAM, .hot = SIZE_MAX, .space = ngrps},
		{.op = OP_GRGID, .hot = SIZE_MAX, .space = ngrps},
		{.op = OP_GRGID, .hot = big_group},
		{.op = OP_GROUPLIST, .hot = many_user},
		/* SSSD: its warm-up (one initgroups through sssd per key)
		 * took about a second per user through the proxy provider,
		 * hours for this row's keys: not measured. */
		{.op = OP_GROUPLIST, .hot = SIZE_MAX, .space = nusers, .no_sss = 1},
	};
	const size_t nrows = sizeof(rows) / sizeof(*rows);
	for (size_t i = 0; i < nrows; i++) {
		struct row *r = &rows[i];
		if (r->op == OP_PWNAM_MISS)
			snprintf(r->keys, sizeof(r->keys), "missing name");
		else if (r->op == OP_GRGID && r->hot != SIZE_MAX)
			snprintf(r->keys, sizeof(r->keys), "%zu-member group", grps[r->hot].nmem);
		else if (r->op == OP_GROUPLIST && r->hot != SIZE_MAX)
			snprintf(r->keys, sizeof(r->keys), "user in %zu groups",
				 users[r->hot].ngroups);
		else if (r->hot != SIZE_MAX)
			snprintf(r->keys, sizeof(r->keys), "hot (one key)");
		else
			snprintf(r->keys, sizeof(r->keys), "random of %zu", r->space);
		fprintf(stderr, "nss_bench: %s %s ...\n", op_name[r->op], r->keys);
		run_row(r, iters, budget, seed + (unsigned)i);
	}

	/* Threads, after the rows (SSSD holds the keys of the getpwuid_r
	 * random row), scim and SSSD only. */
	/* The rows of the threads table: each backend through glibc and
	 * its module called directly (scim also through glibc's dispatch
	 * steps without and with its global store), the module that
	 * answers at once the same four ways, then the machine's baseline. */
	enum { TR_MAX = 11 };
	struct { int b; enum thr_kind kind; } tr[TR_MAX];
	int ntr = 0;
	gpriv.get = (_Bool (*)(int, void **))dlsym(RTLD_DEFAULT, "__nss_database_get");
	gpriv.lookup = (int (*)(void **, const char *, const char *, void **))dlsym(
		RTLD_DEFAULT, "__nss_lookup");
	gpriv.lookup2 = (int (*)(void **, const char *, const char *, void **))dlsym(
		RTLD_DEFAULT, "__nss_passwd_lookup2");
	for (int b = 0; b < NB; b++)
		if (be_on[b] && (b == 0 || b == SSS)) {
			tr[ntr++] = (typeof(tr[0])){b, THR_GLIBC};
			tr[ntr++] = (typeof(tr[0])){b, THR_DIRECT};
			if (b == 0) {
				tr[ntr++] = (typeof(tr[0])){b, THR_PRIV};
				tr[ntr++] = (typeof(tr[0])){b, THR_PRIV_STORE};
			}
		}
	if (dlopen(null_module, RTLD_NOW | RTLD_NOLOAD) || dlopen(null_module, RTLD_NOW))
		for (enum thr_kind k = THR_GLIBC; k < THR_KINDS; k++)
			if (k != THR_MACH)
				tr[ntr++] = (typeof(tr[0])){NULLMOD, k};
	if (mach_map())
		tr[ntr++] = (typeof(tr[0])){0, THR_MACH};
	double thr[TR_MAX][3][THR_ROUNDS] = {{{0}}}, thr_med[TR_MAX][3] = {{0}};
	double thr_cpu[TR_MAX][3][THR_ROUNDS] = {{{0}}}, thr_cpu_med[TR_MAX][3] = {{0}};
	unsigned long thr_waits[TR_MAX][3] = {{0}}, thr_lookups[TR_MAX][3] = {{0}};
	size_t *tkeys = thr_keys(iters, seed); /* rows[3]'s keys */
	fprintf(stderr, "nss_bench: threads ...\n");
	/* The load when the threads rows start and end: a second busy CPU
	 * (other jobs) is what these rows feel most. */
	char load0[64] = "?", load1[64] = "?";
	FILE *lf = fopen("/proc/loadavg", "r");
	if (lf && fscanf(lf, "%63s", load0) != 1)
		snprintf(load0, sizeof(load0), "?");
	if (lf)
		fclose(lf);
	for (int round = 0; round < THR_ROUNDS; round++)
		for (int i = 0; i < 3; i++)
			for (int r = 0; r < ntr; r++)
				thr[r][i][round] = thr_once(tr[r].b, tr[r].kind, thr_n[i], tkeys,
							    iters, &thr_cpu[r][i][round],
							    &thr_waits[r][i], &thr_lookups[r][i]);
	for (int r = 0; r < ntr; r++)
		for (int i = 0; i < 3; i++) {
			thr_med[r][i] = thr_median(thr[r][i]);
			thr_cpu_med[r][i] = thr_median(thr_cpu[r][i]);
		}
	free(tkeys);
	int rt = thr_rt();
	thr_rt_end();
	wrong += thr_wrong;
	if ((lf = fopen("/proc/loadavg", "r"))) {
		if (fscanf(lf, "%63s", load1) != 1)
			snprintf(load1, sizeof(load1), "?");
		fclose(lf);
	}

	/* Freshly exec'd programs: this program again, with its options. */
	struct fresh fresh[NB];
	int fresh_ok[NB] = {0};
	char *xargs[26];
	for (int i = 0; i < argc && i < 25; i++)
		xargs[i] = argv[i];
	xargs[argc < 25 ? argc : 25] = NULL;
	for (int b = 0; b < NB; b++)
		if (be_on[b] && !(fresh_ok[b] = run_fresh(b, xargs, &fresh[b])))
			fprintf(stderr, "nss_bench: %s: fresh-process child failed\n", be_label[b]);

	/* First lookups after the rows: SSSD's memory cache then holds the
	 * hot user, as it would for a user who logs in repeatedly. */
	for (int b = 0; b < NB; b++)
		if (be_on[b] && cold_ok[b] && !(cold_ok[b] = run_first(b, hot_user, &first[b])))
			fprintf(stderr, "nss_bench: %s: first-lookup child failed\n", be_label[b]);

	char a[32], c[32];
	printf("### NSS lookups: median / p90 in µs per call\n\n");
	printf("%zu users, %zu groups; same keys for every backend (seed %u);"
	       " backends take turns in 10 rounds per call.\n\n", nusers, ngrps, seed);
	printf("| call | keys |");
	for (int b = 0; b < NB; b++)
		if (be_on[b])
			printf(" %s |", be_label[b]);
	printf(" speedup vs cache | samples |\n|---|---|");
	for (int b = 0; b < NB; b++)
		if (be_on[b])
			printf("---:|");
	printf("---:|---:|\n");
	for (size_t i = 0; i < nrows; i++) {
		struct row *r = &rows[i];
		printf("| %s | %s |", op_name[r->op], r->keys);
		for (int b = 0; b < NB; b++)
			if (be_on[b] && r->n[b])
				printf(" %s / %s |", fmt_us(med(r, b), a, sizeof(a)),
				       fmt_us(pct(r->ns[b], r->n[b], 0.9), c, sizeof(c)));
			else if (be_on[b])
				printf(" not measured |");
		double s = med(r, 0), k = med(r, 1);
		if (s > 0 && k > 0)
			printf(" %.*f× |", k / s < 10 ? 1 : 0, k / s);
		else
			printf(" - |");
		for (int b = 0, first = 1; b < NB; b++)
			if (be_on[b]) {
				printf("%s%zu", first ? " " : "/", r->n[b]);
				first = 0;
			}
		printf(" |\n");
	}
	printf("\nSpeedup: libnss-cache median / scim median. Samples: per backend, in column"
	       " order; a slow backend stops at its budget of %.1f s per call.\n", budget);
	for (int b = 0; b < NB; b++)
		if (be_on[b] && n_erange[b])
			printf("%s answered ERANGE %lu times: the bench then doubles its buffer and"
			       " keeps it, like glibc's getgrgid() (final size %zu KiB).\n",
			       be_label[b], n_erange[b], buflen >> 10);

	/* libnss-cache used its indexes on every keyed lookup? */
	int ix_bad = 0;
	if (be_on[1]) {
		uint64_t calls = 0, hits = 0, ix = 0, data = 0, seek = 0;
		for (size_t i = 0; i < nrows; i++) {
			struct row *r = &rows[i];
			if (r->op == OP_GROUPLIST)
				continue;
			calls += r->n[1];
			hits += r->op == OP_PWNAM_MISS ? 0 : r->n[1];
			ix += r->ix[1];
			data += r->data[1];
			seek += r->seek[1];
		}
		ix_bad = ix != calls || data != hits || seek != hits;
		printf("\nlibnss-cache index check: %" PRIu64 " keyed lookups opened an index %" PRIu64
		       " times, its data file %" PRIu64 " times and seeked %" PRIu64
		       " times (want %" PRIu64 "/%" PRIu64 "/%" PRIu64 "): %s.\n",
		       calls, ix, data, seek, calls, hits, hits,
		       ix_bad ? "INDEXES NOT USED, the comparison is unfair" : "indexes used");
	}

	printf("\n### Cold start and memory (fresh process per backend)\n\n");
	printf("| backend | first getpwnam_r µs | second µs | RSS before KiB | RSS after first "
	       "lookup | RSS after warm-up | RSS growth | anon growth |\n"
	       "|---|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int b = 0; b < NB; b++) {
		if (!be_on[b])
			continue;
		struct cold *k = &cold[b];
		if (!cold_ok[b]) {
			printf("| %s | failed | | | | | | |\n", be_label[b]);
			continue;
		}
		printf("| %s | %s | %s | %ld | %ld | %ld | +%ld | +%ld |\n", be_label[b],
		       fmt_us(k->first_us, a, sizeof(a)), fmt_us(k->second_us, c, sizeof(c)),
		       k->rss0, k->rss1, k->rss2, k->rss2 - k->rss0, k->anon2 - k->anon0);
	}
	printf("\nWarm-up: up to 2,000 random keys of each call (at most 0.5 s per call).\n");

	printf("\n### First lookup in a new process (median of %d, one fork per sample)\n\n",
	       FIRST_SAMPLES);
	printf("| backend | module load (dlopen) µs | first getpwnam_r, module loaded µs | "
	       "first getpwnam_r, load included µs |\n|---|---:|---:|---:|\n");
	for (int b = 0; b < NB; b++) {
		if (!be_on[b] || !cold_ok[b])
			continue;
		char d[32];
		printf("| %s | %s | %s | %s |\n", be_label[b],
		       fmt_us(first[b].load_us, a, sizeof(a)), fmt_us(first[b].first_us, c, sizeof(c)),
		       fmt_us(first[b].all_us, d, sizeof(d)));
	}
	printf("\nThe hot user of the table above each time (SSSD: from its warm memory cache). \"load "
	       "included\" is what a new `id`, sshd child or Slurm step pays; files has no "
	       "module (glibc's own).\n");

	printf("\n### Threads: random getpwuid_r, one process (median of %d rounds of %.1f s)\n\n",
	       THR_ROUNDS, THR_SECS);
	printf("| backend | 1 thread, lookups/s | 2 threads | 4 threads | CPU ns per lookup, 1 / 2 / 4 threads "
	       "| waits per million lookups, 1 / 2 / 4 threads |\n"
	       "|---|---:|---:|---:|---:|---:|\n");
	for (int r = 0; r < ntr; r++) {
		double w[3];
		for (int i = 0; i < 3; i++)
			w[i] = thr_lookups[r][i] ? 1e6 * (double)thr_waits[r][i] /
							   (double)thr_lookups[r][i]
						 : -1;
		char label[160];
		static const char *const how[THR_KINDS] = {
			[THR_DIRECT] = ", module called directly",
			[THR_PRIV] = ", glibc's dispatch steps without its global store",
			[THR_PRIV_STORE] = ", glibc's dispatch steps with its global store "
					   "(__nss_passwd_lookup2)"};
		if (tr[r].kind == THR_MACH)
			snprintf(label, sizeof(label), "machine alone: %d dependent line reads in a random "
				 "page of the snapshot", (int)MACH_READS);
		else if (tr[r].b == NULLMOD && tr[r].kind == THR_GLIBC)
			snprintf(label, sizeof(label), "glibc's dispatch alone (a module that answers at once)");
		else
			snprintf(label, sizeof(label), "%s%s",
				 tr[r].b == NULLMOD ? "a module that answers at once" : be_label[tr[r].b],
				 how[tr[r].kind] ? how[tr[r].kind] : "");
		thr_print_row(label, thr_med[r], thr_cpu_med[r], w);
	}
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	char loadstr[160];
	snprintf(loadstr, sizeof(loadstr), "%s when these rows started, %s when they ended", load0,
		 load1);
	printf("\nThe keys of the getpwuid_r random row, every answer checked (%lu wrong). "
	       "%ld CPUs online, load average %s: n threads can be at most min(n, CPUs)× one "
	       "thread, less what the machine's other processes take. CPU ns per lookup: the "
	       "threads' CPU time (CLOCK_THREAD_CPUTIME_ID) over their lookups; threads that "
	       "contend (a lock, a shared cache line) spend more per lookup as they are added, "
	       "threads that do not spend the same whatever the load. Waits: the threads' "
	       "voluntary context switches (getrusage RUSAGE_THREAD), i.e. times a lookup "
	       "blocked (a contended lock sleeps in futex), over all rounds; preemption by "
	       "the machine's other processes is involuntary and not counted. \"module called "
	       "directly\": its _nss_*_getpwuid_r through dlsym, without glibc's dispatch. "
	       "\"machine alone\": no lookup, only %d dependent reads of cache lines in one "
	       "4 KiB page of the snapshot's mapping per step, the page picked from the step's key "
	       "(as many pages as the row has keys; the memory access of a warm random lookup, "
	       "its bucket's page, without the lookup's work): how far this machine, with its "
	       "other load, scales a loop that shares nothing.\n",
	       thr_wrong, ncpu, loadstr, (int)MACH_READS);
	printf("\nWhere glibc's path loses (glibc %s): this program picks the service with "
	       "__nss_configure_lookup, which turns off glibc's reload check of nsswitch.conf "
	       "(no stat, no lock per call) and its nscd attempts; what is left of glibc's "
	       "path is getpwuid_r, __nss_passwd_lookup2 and __nss_lookup. \"A module that "
	       "answers at once\" (libnss_scimnull.so.2, built by the bench) copies one fixed "
	       "entry and returns: its rows are glibc's dispatch alone. \"glibc's dispatch steps\": "
	       "__nss_passwd_lookup2 (with its global store: every call of every thread writes "
	       "the action list into libc's process-wide __nss_passwd_database) or the same two "
	       "calls it makes, __nss_database_get and __nss_lookup, with a local of the "
	       "thread's in place of that variable (without), then the module's function; "
	       "glibc's own functions, through dlsym, nothing of glibc's written by this "
	       "program. A plain program (nsswitch.conf read by glibc) is measured in its own "
	       "table below.%s\n", gnu_get_libc_version(),
	       rt ? " Run with BENCH_THREADS_RT=1: the lookup threads at real-time priority "
		    "(SCHED_FIFO), so n threads ran at once whatever else the machine ran." : "");

	printf("\n### A freshly exec'd program (median of %d programs, %d random calls each after the first)\n\n",
	       FRESH_SAMPLES, FRESH_CALLS);
	printf("| backend | first getpwnam_r µs (module load included) | then random getpwnam_r p50 µs | p90 µs "
	       "| preads / call | page faults / call |\n"
	       "|---|---:|---:|---:|---:|---:|\n");
	for (int b = 0; b < NB; b++) {
		if (!be_on[b])
			continue;
		if (!fresh_ok[b]) {
			printf("| %s | failed | | | | |\n", be_label[b]);
			continue;
		}
		char d[32], e[32], g[32];
		if (fresh[b].preads >= 0) {
			snprintf(e, sizeof(e), "%.2f", fresh[b].preads);
			snprintf(g, sizeof(g), "%.2f", fresh[b].faults);
		} else {
			snprintf(e, sizeof(e), "-");
			snprintf(g, sizeof(g), "-");
		}
		printf("| %s | %s | %s | %s | %s | %s |\n", be_label[b], fmt_us(fresh[b].first_us, a, sizeof(a)),
		       fmt_us(fresh[b].p50_us, c, sizeof(c)), fmt_us(fresh[b].p90_us, d, sizeof(d)), e, g);
	}
	printf("\nEach sample is this program exec'd anew: no module loaded, no page of the snapshot "
	       "mapped in it (a fork would inherit them). Keys of the getpwnam_r random row (SSSD: from "
	       "its memory cache).\n");
	if (be_on[0] && fresh_ok[0] && fresh[0].pread_p50_us >= 0) {
		char d[32];
		printf("\nscim's system call alone, in the same programs after their lookups: pread of one "
		       "4 KiB page of the snapshot (random pages in the page cache) p50 %s µs, p90 %s µs. "
		       "Each random scim lookup above is one such pread (a page of a new program's own, "
		       "not yet read: a 64 KiB stretch is mapped only at its fourth use) and the lookup "
		       "around it.\n", fmt_us(fresh[0].pread_p50_us, c, sizeof(c)),
		       fmt_us(fresh[0].pread_p90_us, d, sizeof(d)));
	}
	if (be_on[0] && fresh_ok[0] && fresh[0].sys_p50_us >= 0) {
		char d[32];
		printf("\nA system call that does nothing (getppid), in the same programs: p50 %s µs, "
		       "p90 %s µs: what entering the kernel costs on this machine (a lookup's pread is "
		       "that, the page cache lookup and the 4 KiB copy; see c/nssindex.c, WIN_SHIFT). "
		       "Preads and page faults per call: counted over each program's random calls "
		       "(the module's preads through this program's pread; minor faults from "
		       "getrusage).\n", fmt_us(fresh[0].sys_p50_us, c, sizeof(c)),
		       fmt_us(fresh[0].sys_p90_us, d, sizeof(d)));
	}

	/* The targets. */
	if (be_on[0]) {
		printf("\n### Targets\n\n");
		struct {
			const char *what;
			double got, want;
			int ratio;
		} t[] = {
			{"getpwnam_r random, median speedup vs libnss-cache >= 20×",
			 be_on[1] ? med(&rows[0], 1) / med(&rows[0], 0) : -1, 20, 1},
			{"getpwuid_r random, median speedup vs libnss-cache >= 20×",
			 be_on[1] ? med(&rows[3], 1) / med(&rows[3], 0) : -1, 20, 1},
			{"getgrouplist, user in many groups, median <= 10 µs", med(&rows[8], 0), 10, 0},
			{"getgrgid_r, largest group, median <= 100 µs", med(&rows[7], 0), 100, 0},
		};
		if (be_on[SSS])
			for (size_t i = 0; i < nrows; i++) {
				struct row *r = &rows[i];
				if (r->op == OP_PWNAM_MISS || !r->n[SSS])
					continue;
				double sc = med(r, 0), ss = med(r, SSS);
				printf("- %s %s: scim %.2f µs <= SSSD memcache %.2f µs: %s\n",
				       op_name[r->op], r->keys, sc, ss, sc <= ss ? "met" : "MISSED");
			}
		if (be_on[SSS] && fresh_ok[0] && fresh_ok[SSS])
			printf("- first getpwnam_r in a freshly exec'd program <= SSSD memcache: scim %.0f µs, "
			       "SSSD %.0f µs: %s\n", fresh[0].first_us, fresh[SSS].first_us,
			       fresh[0].first_us <= fresh[SSS].first_us ? "met" : "MISSED");
		if (fresh_ok[0])
			printf("- random getpwnam_r in a freshly exec'd program, p90 <= 2 µs: %.2f µs, %s"
			       " (its pread alone: p90 %.2f µs)\n",
			       fresh[0].p90_us, fresh[0].p90_us <= 2 ? "met" : "MISSED",
			       fresh[0].pread_p90_us);
		/* Rows of the threads table: scim through glibc is row 0. */
		int tsss = -1, tmach = -1, tnull = -1, tpriv = -1;
		for (int r = 0; r < ntr; r++) {
			if (tr[r].kind == THR_GLIBC && tr[r].b == SSS)
				tsss = r;
			if (tr[r].kind == THR_MACH)
				tmach = r;
			if (tr[r].kind == THR_GLIBC && tr[r].b == NULLMOD && thr_med[r][0] > 0)
				tnull = r;
			if (tr[r].kind == THR_PRIV && tr[r].b == 0 && thr_med[r][0] > 0)
				tpriv = r;
		}
		if (thr_med[0][0] > 0) {
			double two = thr_med[0][1] / thr_med[0][0], four = thr_med[0][2] / thr_med[0][0];
			char s2[200] = "", s4[200] = "";
			if (tsss >= 0) {
				snprintf(s2, sizeof(s2), "SSSD %.2f×", thr_med[tsss][1] / thr_med[tsss][0]);
				snprintf(s4, sizeof(s4), "SSSD %.2f×", thr_med[tsss][2] / thr_med[tsss][0]);
			}
			if (tmach >= 0) {
				size_t l2 = strlen(s2), l4 = strlen(s4);
				snprintf(s2 + l2, sizeof(s2) - l2, "%sthe machine alone %.2f×", l2 ? ", " : "",
					 thr_med[tmach][1] / thr_med[tmach][0]);
				snprintf(s4 + l4, sizeof(s4) - l4, "%sthe machine alone %.2f×", l4 ? ", " : "",
					 thr_med[tmach][2] / thr_med[tmach][0]);
			}
			char g2[200] = "";
			if (tnull >= 0 || tpriv >= 0)
				snprintf(g2, sizeof(g2), "; glibc with a module that answers at once %.2f×, "
					 "scim through glibc's dispatch steps without its one global store %.2f×",
					 tnull >= 0 ? thr_med[tnull][1] / thr_med[tnull][0] : 0,
					 tpriv >= 0 ? thr_med[tpriv][1] / thr_med[tpriv][0] : 0);
			printf("- 2 threads >= 1.8× one thread: scim %.2f× (%s%s%s): %s\n", two, s2,
			       s2[0] ? "" : "-", g2, two >= 1.8 ? "met" : "MISSED");
			printf("- 4 threads >= 3× one thread: scim %.2f× (%s): %s\n", four, s4[0] ? s4 : "-",
			       ncpu < 4 ? "not measurable here (fewer than 4 CPUs)" : four >= 3 ? "met" : "MISSED");
		}
		printf("- first getpwnam_r in a new process, module loaded, <= 300 µs: %.0f µs, %s\n",
		       first[0].first_us, first[0].first_us >= 0 && first[0].first_us <= 300 ? "met" : "MISSED");
		printf("- module load (dlopen of libnss_scim.so.2) <= 300 µs: %.0f µs, %s\n",
		       first[0].load_us, first[0].load_us >= 0 && first[0].load_us <= 300 ? "met" : "MISSED");
		for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
			if (t[i].got < 0)
				printf("- %s: not measured\n", t[i].what);
			else
				printf("- %s: %.1f%s, %s\n", t[i].what, t[i].got, t[i].ratio ? "×" : " µs",
				       (t[i].ratio ? t[i].got >= t[i].want : t[i].got <= t[i].want)
					   ? "met" : "MISSED");
		}
	}
	if (wrong)
		printf("\n**%lu WRONG ANSWERS: this run is invalid** (details on stderr).\n", wrong);
	for (int b = 0; b < NB; b++)
		if (be_on[b] && !cold_ok[b])
			wrong++;
	return wrong || ix_bad ? 1 : 0;
}
