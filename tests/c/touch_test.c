/*
 * touch_test - the reader's file identity and trust checks in one process.
 *
 *   touch_test LIVE NEW USER
 *
 * LIVE is a good snapshot holding USER (root-owned, in a root-owned
 * directory); NEW another good snapshot of a different size. Checks:
 *  - syncd's freshness touch (utimensat on the live file) moves the
 *    ctime, part of a file's identity (same_file): the handle reopens the
 *    same file and answers, and scim_cache_mtime reports the new mtime
 *    at once; a chown to nobody is refused at the next check;
 *  - a file renamed over the path is opened, and refused (UNAVAIL, reason
 *    named) when it is not root-owned;
 *  - a directory that becomes world-writable is refused at the next open;
 *  - a child forked (through glibc: the atfork handlers run) keeps its
 *    parent's open snapshot past a check, and a
 *    child made by the raw fork system call (no handlers) reopens
 *    (proved by making the directory world-writable: a reopen refuses
 *    it, a handle keeping its file does not look).
 * Prints PASS:/FAIL: lines; needs root (chown).
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scimcache.h"

static int fails;
static void check(int ok, const char *what, struct scim_cache *c)
{
	printf("%s: %s", ok ? "PASS" : "FAIL", what);
	if (!ok) {
		printf(" (reader: %s)", scim_cache_error(c));
		fails++;
	}
	printf("\n");
}

static int lookup(struct scim_cache *c, const char *user)
{
	struct passwd pw;
	char buf[8192];
	return scim_getpwnam(c, user, &pw, buf, sizeof(buf));
}

/* A forked child's check of the file (scim_cache_mtime: the identity
 * check, without SQL), then a lookup: SCIM_OK if both answered, else the
 * first status that did not. raw: the fork system call itself, which
 * runs no atfork handler (glibc's fork runs them). deeper: the child
 * forks (through glibc) and its child checks, as a daemon's double fork. */
static int child_check(struct scim_cache *c, const char *user, int raw,
		       int deeper)
{
	fflush(stdout);
	pid_t pid = raw ? (pid_t)syscall(SYS_fork) : fork();
	if (pid == 0 && deeper > 0) {
		int st = child_check(c, user, 0, deeper - 1);
		_exit(st == SCIM_OK ? 0 : 10 + st);
	}
	if (pid == 0) {
		struct timespec m;
		int st = scim_cache_mtime(c, &m);
		if (st == SCIM_OK)
			st = lookup(c, user);
		_exit(st == SCIM_OK ? 0 : 10 + st);
	}
	int ws;
	if (pid < 0 || waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws))
		return -100;
	return WEXITSTATUS(ws) == 0 ? SCIM_OK : WEXITSTATUS(ws) - 10;
}

static int copy(const char *from, const char *to)
{
	char cmd[16384];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0644 '%s'", from, to, to);
	return system(cmd);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: touch_test LIVE NEW USER\n");
		return 64;
	}
	const char *live = argv[1], *newf = argv[2], *user = argv[3];
	struct scim_cache *c = scim_cache_new(live);
	check(lookup(c, user) == SCIM_OK, "the live snapshot answers", c);
	/* A handle that never opened SQLite (a forked child keeps those),
	 * checked once here: the check records this process as its owner. */
	struct scim_cache *k = scim_cache_new(live);
	struct timespec km;
	check(lookup(k, user) == SCIM_OK && scim_cache_mtime(k, &km) == SCIM_OK,
	      "a second handle answers from the index", k);

	struct timespec want[2] = {{.tv_sec = 1700000000, .tv_nsec = 0},
				   {.tv_sec = 1700000000, .tv_nsec = 0}};
	struct timespec got = {0};
	if (utimensat(AT_FDCWD, live, want, 0) != 0) {
		perror("utimensat");
		return 1;
	}
	/* The ctime is part of a file's identity (same_file: a mirror may
	 * rewrite a spare inode and rename it back), so a touch costs one
	 * reopen of the same file. */
	check(scim_cache_check(c) == SCIM_OK && lookup(c, user) == SCIM_OK,
	      "after a touch (mtime and ctime changed, same inode and size) the handle answers (one reopen)", c);
	check(scim_cache_mtime(c, &got) == SCIM_OK && got.tv_sec == want[0].tv_sec,
	      "scim_cache_mtime reports the touched mtime at once", c);
	/* Twice: the reopen records no owner, the check after it records
	 * this process (as the first check above did). */
	check(scim_cache_mtime(k, &km) == SCIM_OK && km.tv_sec == want[0].tv_sec &&
	      scim_cache_mtime(k, &km) == SCIM_OK,
	      "the second handle checks the touched file", k);

	/* A directory others can write is refused at the next open, not by a
	 * handle that keeps its file: the proof of no reopen (it leaves the
	 * file's ctime alone). */
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", live);
	*strrchr(dir, '/') = '\0';
	struct stat ds;
	stat(dir, &ds);
	if (chmod(dir, 0777) != 0) {
		perror("chmod");
		return 1;
	}
	check(scim_cache_check(c) == SCIM_OK && lookup(c, user) == SCIM_OK,
	      "the same file, unchanged: the open snapshot is kept, no reopen", c);
	check(child_check(k, user, 0, 0) == SCIM_OK,
	      "a forked child checks and answers from its parent's open snapshot: no reopen", k);
	check(child_check(k, user, 0, 1) == SCIM_OK,
	      "so does the child of a forked child that never looked up (a daemon's double fork)", k);
	check(child_check(k, user, 1, 0) == SCIM_UNAVAIL,
	      "a child made without the atfork handlers reopens at its check (refused: the directory)", k);
	scim_cache_free(k);
	chmod(dir, ds.st_mode & 07777);

	if (chown(live, 65534, 65534) != 0) {
		perror("chown");
		return 1;
	}
	check(scim_cache_check(c) == SCIM_UNAVAIL && strstr(scim_cache_error(c), "owned by uid 65534"),
	      "a chown moves the ctime: the handle reopens at its next check (refused: owned by nobody)", c);
	struct scim_cache *fresh = scim_cache_new(live);
	check(scim_cache_check(fresh) == SCIM_UNAVAIL && strstr(scim_cache_error(fresh), "owned by uid 65534"),
	      "a new handle on the same file owned by nobody: unavailable, reason named", fresh);
	scim_cache_free(fresh);
	if (chown(live, 0, 0) != 0)
		return 1;

	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", live);
	if (copy(newf, tmp) || chown(tmp, 65534, 65534) || rename(tmp, live)) {
		perror("replace");
		return 1;
	}
	check(scim_cache_check(c) == SCIM_UNAVAIL && strstr(scim_cache_error(c), "must be owned by root"),
	      "a snapshot renamed over the path and owned by a user: unavailable at once, reason named", c);
	if (chown(live, 0, 0) != 0)
		return 1;
	check(scim_cache_check(c) == SCIM_OK, "the same file chowned to root: usable again", c);

	if (copy(newf, tmp) != 0)
		return 1;
	if (chmod(dir, 0777) != 0 || rename(tmp, live) != 0) {
		perror("chmod/rename");
		return 1;
	}
	struct scim_cache *d = scim_cache_new(live);
	check(scim_cache_check(d) == SCIM_UNAVAIL && strstr(scim_cache_error(d), "group or world writable"),
	      "a world-writable directory: unavailable, reason named", d);
	scim_cache_free(d);
	chmod(dir, ds.st_mode & 07777);
	scim_cache_free(c);
	return fails ? 1 : 0;
}
