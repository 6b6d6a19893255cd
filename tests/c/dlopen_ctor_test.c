/*
 * dlopen_ctor_test - the lock order of the module's lazy SQLite load
 * against the dynamic loader's own lock (issue 22).
 *
 *   dlopen_ctor_test -u USER -l CTOR_LIB [-T TIMEOUT_S]
 *
 * libnss_scim.so.2 dlopens its private SQLite on its first SQL call
 * (c/sql.c, sqlite_load). dlopen holds the loader's lock while it runs
 * the constructors of what it loads, and a constructor may look a user
 * up. So: thread A dlopens CTOR_LIB (this file built with
 * -DDLOPEN_CTOR_LIB), whose constructor (holding the loader's lock) waits
 * until the main thread has started its first SQL call (getpwent_r: the
 * enumeration, which loads SQLite), then makes a lookup that takes the
 * reader's lock (getpwuid_r(0): a reserved id, answered under the lock).
 * Had the main thread kept the reader's lock while it waited in dlopen
 * for the loader's, each thread would wait for the other forever. Both
 * must finish, with the right answers, within TIMEOUT_S (SIGALRM: a
 * hang). Run inside scim_ns (through glibc; the test selects "scim" for
 * passwd). Prints PASS:/FAIL: lines; exits 1 on any failure.
 */
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef DLOPEN_CTOR_LIB
/* The test's hook, in the executable (linked with -rdynamic). */
extern void dlopen_ctor_hook(void);

__attribute__((constructor)) static void ctor(void)
{
	dlopen_ctor_hook();
}
#else
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

extern int __nss_configure_lookup(const char *db, const char *service_line);

static const char *user, *lib;
static int in_ctor, enum_started, ctor_status = -1;

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Called by CTOR_LIB's constructor, inside dlopen (the loader's lock
 * held): once the main thread's enumeration has begun (and had time to
 * reach its SQLite load), a lookup under the reader's lock. */
__attribute__((visibility("default"))) void dlopen_ctor_hook(void)
{
	__atomic_store_n(&in_ctor, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 5000 && !__atomic_load_n(&enum_started, __ATOMIC_SEQ_CST); i++)
		sleep_ms(1);
	sleep_ms(300);
	char buf[4096];
	struct passwd pw, *r = NULL;
	int e = getpwuid_r(0, &pw, buf, sizeof(buf), &r);
	/* root is never the module's to answer: not found, not an error. */
	__atomic_store_n(&ctor_status, e == 0 && r == NULL ? 0 : 1, __ATOMIC_SEQ_CST);
}

static void *loader(void *arg)
{
	(void)arg;
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fprintf(stderr, "dlopen %s: %s\n", lib, dlerror());
	return h;
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "FAIL: dlopen constructor lookup during the first SQL call: hung "
				"(the reader's lock held across dlopen)\n";
	ssize_t w = write(1, m, sizeof(m) - 1);
	(void)w;
	_exit(1);
}

int main(int argc, char **argv)
{
	unsigned timeout = 30;
	int o;
	while ((o = getopt(argc, argv, "u:l:T:")) != -1)
		switch (o) {
		case 'u': user = optarg; break;
		case 'l': lib = optarg; break;
		case 'T': timeout = (unsigned)atoi(optarg); break;
		default: return 64;
		}
	if (!user || !lib) {
		fprintf(stderr, "usage: dlopen_ctor_test -u USER -l CTOR_LIB [-T TIMEOUT_S]\n");
		return 64;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	if (__nss_configure_lookup("passwd", "scim") != 0) {
		printf("FAIL: __nss_configure_lookup(passwd, scim)\n");
		return 1;
	}
	signal(SIGALRM, on_alarm);
	alarm(timeout);
	char buf[4096];
	struct passwd pw, *r = NULL;
	/* The module loaded and the snapshot open (the NSS index: no SQL). */
	if (getpwnam_r(user, &pw, buf, sizeof(buf), &r) != 0 || !r) {
		printf("FAIL: %s not found before the test\n", user);
		return 1;
	}
	pthread_t th;
	if (pthread_create(&th, NULL, loader, NULL) != 0) {
		printf("FAIL: pthread_create\n");
		return 1;
	}
	for (int i = 0; i < 10000 && !__atomic_load_n(&in_ctor, __ATOMIC_SEQ_CST); i++)
		sleep_ms(1);
	__atomic_store_n(&enum_started, 1, __ATOMIC_SEQ_CST);
	/* The process's first SQL call: the module dlopens its SQLite. */
	int seen = 0;
	setpwent();
	while (getpwent_r(&pw, buf, sizeof(buf), &r) == 0 && r)
		seen |= strcmp(r->pw_name, user) == 0;
	endpwent();
	void *h = NULL;
	pthread_join(th, &h);
	alarm(0);
	int fails = 0;
	if (!h) {
		printf("FAIL: dlopen of %s\n", lib);
		fails++;
	}
	if (ctor_status != 0) {
		printf("FAIL: getpwuid_r(0) in the constructor: %s\n",
		       ctor_status < 0 ? "never ran" : "answered or failed");
		fails++;
	} else {
		printf("PASS: a dlopen constructor's lookup during the first SQL call (the SQLite load) finished\n");
	}
	if (!seen) {
		printf("FAIL: enumeration during a dlopen did not list %s\n", user);
		fails++;
	} else {
		printf("PASS: enumeration that loaded SQLite during another thread's dlopen listed %s\n", user);
	}
	return fails ? 1 : 0;
}
#endif
