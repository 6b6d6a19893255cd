/*
 * host_sqlite_test - a host program that uses SQLite itself, in another
 * thread, while it forks children that look users up through glibc (and so
 * through libnss_scim.so.2). Issue 10: with the modules linking the shared
 * libsqlite3, a child forked while the host thread held one of its global
 * mutexes hung on its first lookup (20 of 20, in sqlite3_free <-
 * sqlite3_finalize <- close_db); the module now carries its own SQLite.
 *
 *   host_sqlite_test -f CACHE [-c FORKS] [-j PARALLEL] [-h HOST_THREADS]
 *                    [-T TIMEOUT_S] [-l LABEL]
 *
 * Run it inside tests/lib.sh's scim_ns (nsswitch.conf "files scim",
 * reader.conf -> CACHE). The host threads use the system libsqlite3 this
 * program is linked with: open a ":memory:" database, create, insert,
 * select, close, in a loop, for the whole run. The expected answers are
 * read from CACHE with plain SQL through that same library before the
 * threads start (not through the reader). The parent looks a user up once
 * before forking, so every child inherits an open module connection and
 * must replace it (the path that hung). Each child checks getpwnam_r,
 * getpwuid_r and getgrouplist of one user and exits; SIGALRM after
 * TIMEOUT_S kills a child that hangs. PASS needs 0 hung, 0 wrong, 0
 * unavailable, and host threads that really ran during the forks.
 */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NREF 64
#define MAXG 4096

struct ref {
	char name[64];
	char line[512]; /* name:*:uid:gid:gecos:home:shell */
	uid_t uid;
	gid_t gid;
	int ng; /* getgrouplist: primary first, then the others ascending */
	gid_t g[MAXG];
};

static struct ref refs[NREF];
static int nrefs;
static atomic_int stop;
static atomic_long host_loops;

static void die(const char *what, sqlite3 *db)
{
	printf("FAIL: %s: %s\n", what, db ? sqlite3_errmsg(db) : "error");
	exit(1);
}

/* Up to NREF users spread over the snapshot, with their groups, by SQL. */
static void load_refs(const char *path)
{
	sqlite3 *db;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		die("open snapshot", db);
	sqlite3_stmt *u, *m;
	if (sqlite3_prepare_v2(db,
			       "SELECT name, uid, gid, gecos, home, shell FROM users "
			       "WHERE uid % ((SELECT count(*) FROM users) / 60 + 1) = 1 "
			       "ORDER BY uid LIMIT 64", -1, &u, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "SELECT gid FROM memberships WHERE user_name = ?1 "
			       "ORDER BY gid", -1, &m, NULL) != SQLITE_OK)
		die("prepare", db);
	while (nrefs < NREF && sqlite3_step(u) == SQLITE_ROW) {
		struct ref *r = &refs[nrefs++];
		snprintf(r->name, sizeof(r->name), "%s", sqlite3_column_text(u, 0));
		r->uid = (uid_t)sqlite3_column_int64(u, 1);
		r->gid = (gid_t)sqlite3_column_int64(u, 2);
		char line[sizeof(r->line)];
		snprintf(line, sizeof(line), "%s:*:%u:%u:%s:%s:%s",
			 sqlite3_column_text(u, 0), (unsigned)r->uid,
			 (unsigned)r->gid, sqlite3_column_text(u, 3),
			 sqlite3_column_text(u, 4), sqlite3_column_text(u, 5));
		memcpy(r->line, line, sizeof(line));
		r->g[r->ng++] = r->gid;
		sqlite3_bind_text(m, 1, r->name, -1, SQLITE_STATIC);
		while (sqlite3_step(m) == SQLITE_ROW && r->ng < MAXG) {
			gid_t g = (gid_t)sqlite3_column_int64(m, 0);
			if (g != r->gid)
				r->g[r->ng++] = g;
		}
		sqlite3_reset(m);
	}
	sqlite3_finalize(u);
	sqlite3_finalize(m);
	sqlite3_close(db);
	if (nrefs == 0)
		die("no users in the snapshot", NULL);
}

/* The host's own use of SQLite: allocations, its global mutexes (memory,
 * VFS, PRNG), a database created and dropped each time. */
static void *host_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		sqlite3 *db = NULL;
		if (sqlite3_open(":memory:", &db) == SQLITE_OK) {
			sqlite3_exec(db,
				     "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT);"
				     "INSERT INTO t (v) VALUES (hex(randomblob(64)));"
				     "INSERT INTO t (v) SELECT v FROM t;"
				     "SELECT count(*), max(v) FROM t;",
				     NULL, NULL, NULL);
		}
		sqlite3_close(db);
		atomic_fetch_add(&host_loops, 1);
	}
	return NULL;
}

static void fmt_pw(const struct passwd *pw, char *out, size_t n)
{
	snprintf(out, n, "%s:%s:%u:%u:%s:%s:%s", pw->pw_name, pw->pw_passwd,
		 (unsigned)pw->pw_uid, (unsigned)pw->pw_gid, pw->pw_gecos,
		 pw->pw_dir, pw->pw_shell);
}

/* The child: 0 right, 1 wrong, 2 unavailable. */
static int child(const struct ref *r)
{
	static char buf[1 << 16];
	char line[512];
	struct passwd pw, *res = NULL;
	if (getpwnam_r(r->name, &pw, buf, sizeof(buf), &res) != 0 || !res)
		return 2;
	fmt_pw(&pw, line, sizeof(line));
	if (strcmp(line, r->line) != 0)
		return 1;
	res = NULL;
	if (getpwuid_r(r->uid, &pw, buf, sizeof(buf), &res) != 0 || !res)
		return 2;
	fmt_pw(&pw, line, sizeof(line));
	if (strcmp(line, r->line) != 0)
		return 1;
	static gid_t g[MAXG + 8];
	int n = MAXG + 8;
	if (getgrouplist(r->name, r->gid, g, &n) < 0)
		return 1;
	if (n != r->ng)
		return 1;
	/* glibc puts the primary first; the module's gids follow in order
	 * (files adds none for these users). */
	return memcmp(g, r->g, (size_t)n * sizeof(gid_t)) != 0;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *label = "host thread on the system libsqlite3";
	int forks = 1000, par = 4, hosts = 1, timeout = 10, opt;
	while ((opt = getopt(argc, argv, "f:c:j:h:T:l:")) != -1) {
		switch (opt) {
		case 'f': path = optarg; break;
		case 'c': forks = atoi(optarg); break;
		case 'j': par = atoi(optarg); break;
		case 'h': hosts = atoi(optarg); break;
		case 'T': timeout = atoi(optarg); break;
		case 'l': label = optarg; break;
		default: return 64;
		}
	}
	if (!path || forks < 1 || par < 1 || hosts < 1 || hosts > 16) {
		fprintf(stderr, "usage: host_sqlite_test -f CACHE [-c N] [-j N] [-h N] [-T S] [-l LABEL]\n");
		return 64;
	}
	load_refs(path);
	/* Module loaded and its connection open before any child exists. */
	if (child(&refs[0]) != 0) {
		printf("FAIL: %s: the parent's own lookup of %s is wrong or "
		       "unavailable (is this running under scim_ns?)\n", label,
		       refs[0].name);
		return 1;
	}
	pthread_t tid[16];
	for (int i = 0; i < hosts; i++)
		pthread_create(&tid[i], NULL, host_thread, NULL);
	while (atomic_load(&host_loops) < 10)
		usleep(1000);

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long loops0 = atomic_load(&host_loops);
	int hung = 0, wrong = 0, unavail = 0, crashed = 0, running = 0, done = 0;
	for (int i = 0; i < forks || running > 0;) {
		while (i < forks && running < par) {
			const struct ref *r = &refs[i % nrefs];
			pid_t pid = fork();
			if (pid == 0) {
				alarm((unsigned)timeout);
				_exit(child(r));
			}
			if (pid < 0) {
				printf("FAIL: %s: fork: %s\n", label, strerror(errno));
				atomic_store(&stop, 1);
				return 1;
			}
			i++;
			running++;
		}
		int st;
		pid_t w = wait(&st);
		if (w < 0)
			break;
		running--;
		done++;
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
			hung++;
		else if (WIFSIGNALED(st))
			crashed++;
		else if (WEXITSTATUS(st) == 1)
			wrong++;
		else if (WEXITSTATUS(st) != 0)
			unavail++;
	}
	long loops = atomic_load(&host_loops) - loops0;
	atomic_store(&stop, 1);
	for (int i = 0; i < hosts; i++)
		pthread_join(tid[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	int ok = hung == 0 && wrong == 0 && unavail == 0 && crashed == 0 &&
		 done == forks && loops > 0;
	printf("%s: %s: %d children (%d at a time) each checked getpwnam_r, "
	       "getpwuid_r, getgrouplist of one of %d users: %d hung, %d wrong, "
	       "%d unavailable, %d crashed; %d host thread(s) ran %ld SQLite "
	       "open/exec/close loops meanwhile (%.1f s)\n",
	       ok ? "PASS" : "FAIL", label, done, par, nrefs, hung, wrong,
	       unavail, crashed, hosts, loops, s);
	return ok ? 0 : 1;
}
