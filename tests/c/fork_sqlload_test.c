/*
 * fork_sqlload_test - fork while another thread makes the process's first
 * SQL call, i.e. while libnss_scim.so.2 dlopens its private SQLite
 * (c/sqlite_api.h), and look up and enumerate in every child.
 *
 *   fork_sqlload_test -u USER [-c ROUNDS] [-T TIMEOUT_S]
 *
 * Each round is a new process P (so SQLite is not loaded yet): P looks
 * USER up once (the module is loaded, answering from the NSS index), starts
 * a thread that enumerates (getpwent_r: the first SQL call, which loads
 * SQLite, with the reader's lock let go: c/sql.c), and forks a child C at once, a little
 * later each round (a spin of 0 to 49 steps) so that the fork falls before,
 * during and after the load. C looks USER up through glibc and enumerates
 * through the module's own entry points (it must find USER there too): not
 * through glibc's getpwent, whose own lock (getXXent_r.c) a child forked
 * while another thread enumerates inherits held, and hangs on with any
 * NSS service, files included (gdb: __lll_lock_wait_private <- setpwent).
 * C and P are killed by SIGALRM after TIMEOUT_S: a hang.
 * Through glibc: run it inside scim_ns. Prints PASS:/FAIL: lines; exits 1
 * on any failure.
 */
#include <dlfcn.h>
#include <nss.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *user;
static int direct; /* enumerate through the module's entry points */

/* 0: USER found by getpwnam_r and (if enumerate) by getpwent_r. */
static int check(int enumerate)
{
	char buf[4096];
	struct passwd pw, *r = NULL;
	if (getpwnam_r(user, &pw, buf, sizeof(buf), &r) != 0 || !r ||
	    strcmp(r->pw_name, user) != 0)
		return 1;
	if (!enumerate)
		return 0;
	int seen = 0;
	if (direct) {
		void *h = dlopen("libnss_scim.so.2", RTLD_LAZY | RTLD_NOLOAD);
		enum nss_status (*set)(int) = h ? (enum nss_status (*)(int))dlsym(h, "_nss_scim_setpwent") : NULL;
		enum nss_status (*get)(struct passwd *, char *, size_t, int *) =
			h ? (enum nss_status (*)(struct passwd *, char *, size_t, int *))dlsym(h, "_nss_scim_getpwent_r")
			  : NULL;
		int err = 0;
		if (!set || !get || set(0) != NSS_STATUS_SUCCESS)
			return 1;
		for (int i = 0; i < 1000000 && get(&pw, buf, sizeof(buf), &err) == NSS_STATUS_SUCCESS; i++)
			seen |= strcmp(pw.pw_name, user) == 0;
		return seen ? 0 : 1;
	}
	setpwent();
	for (int i = 0; i < 1000000 && getpwent_r(&pw, buf, sizeof(buf), &r) == 0; i++)
		seen |= strcmp(r->pw_name, user) == 0;
	endpwent();
	return seen ? 0 : 1;
}

/* 1 if this process maps the module's SQLite (the parent had begun
 * loading it, at least, when it forked). */
static int sqlite_mapped(void)
{
	char line[4096];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, "libscimbridge-sqlite") != NULL;
	if (f)
		fclose(f);
	return found;
}

static void *enum_thread(void *arg)
{
	(void)arg;
	check(1);
	return NULL;
}

/* 0 ok, 1 wrong, 2 hung, 3 crashed, 4 ok with SQLite mapped at the
 * fork: from a wait status. */
static int outcome(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st) <= 4 ? WEXITSTATUS(st) : 1;
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? 2 : 3;
}

static int round_once(int n, unsigned timeout)
{
	alarm(timeout * 2);
	if (check(0))
		return 1;
	pthread_t t;
	if (pthread_create(&t, NULL, enum_thread, NULL))
		return 1;
	for (volatile int k = 0; k < (n % 50) * 20000; k++)
		;
	pid_t c = fork();
	if (c == 0) {
		alarm(timeout);
		int mapped = sqlite_mapped();
		direct = 1;
		_exit(check(1) ? 1 : mapped ? 4 : 0);
	}
	int st = 0;
	if (c < 0 || waitpid(c, &st, 0) != c)
		return 1;
	pthread_join(t, NULL);
	return outcome(st);
}

int main(int argc, char **argv)
{
	int rounds = 200, opt;
	unsigned timeout = 20;
	while ((opt = getopt(argc, argv, "u:c:T:")) != -1)
		switch (opt) {
		case 'u': user = optarg; break;
		case 'c': rounds = atoi(optarg); break;
		case 'T': timeout = (unsigned)atoi(optarg); break;
		default: user = NULL;
		}
	if (!user || rounds < 1 || rounds > 100000) {
		fprintf(stderr, "usage: fork_sqlload_test -u USER [-c ROUNDS] [-T TIMEOUT_S]\n");
		return 2;
	}
	int n[5] = {0};
	for (int i = 0; i < rounds; i++) {
		fflush(NULL);
		pid_t p = fork();
		if (p == 0)
			_exit(round_once(i, timeout));
		int st = 0;
		if (p < 0 || waitpid(p, &st, 0) != p)
			n[1]++;
		else
			n[outcome(st)]++;
	}
	int ok = n[0] + n[4] == rounds;
	printf("%s: fork while another thread loads the module's SQLite: %d rounds, %d right "
	       "(%d forked before it was mapped, %d after), %d wrong, %d hung, %d crashed\n",
	       ok ? "PASS" : "FAIL", rounds, n[0] + n[4], n[0], n[4], n[1], n[2], n[3]);
	return ok ? 0 : 1;
}
