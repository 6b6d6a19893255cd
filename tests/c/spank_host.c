/*
 * spank_host - asks spank_scim.so what sbatch would be told, without Slurm.
 *
 *   spank_host PLUGIN.so USER|UID [plugin args...]
 *
 * Loads the real plugin, plays the allocator context (sbatch/salloc) for
 * USER, and runs slurm_spank_init_post_opt exactly as sbatch does: with
 * the plugstack.conf arguments and the user's real uid. The few SPANK
 * symbols the plugin takes from its host are defined here. Prints the
 * plugin's messages as sbatch would and exits 0 (job allowed) or 1
 * (denied). Needs root to take the user's uid; used by `make demo` and the
 * tests, inside a namespace whose nsswitch.conf lists scim.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

/* The host side of the SPANK API that spank_scim uses. */
spank_context_t spank_context(void) { return S_CTX_ALLOCATOR; }
int spank_remote(spank_t sp) { (void) sp; return 0; }

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
	(void) sp;
	(void) item;
	return ESPANK_NOT_AVAIL; /* as in sbatch: no job items yet */
}

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
	(void) sp;
	const char *v = getenv(var);
	if (!v)
		return ESPANK_ENV_NOEXIST;
	if ((int) strlen(v) >= len)
		return ESPANK_NOSPACE;
	strcpy(buf, v);
	return ESPANK_SUCCESS;
}

void slurm_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("sbatch: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s PLUGIN.so USER|UID [plugin args...]\n", argv[0]);
		return 2;
	}
	char *end;
	errno = 0;
	unsigned long n = strtoul(argv[2], &end, 10);
	uid_t uid;
	if (!errno && *end == '\0' && end != argv[2]) {
		uid = (uid_t) n;
	} else {
		struct passwd *pw = getpwnam(argv[2]);
		if (!pw) {
			fprintf(stderr, "spank_host: no such user %s\n", argv[2]);
			return 2;
		}
		uid = pw->pw_uid;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "spank_host: %s\n", dlerror());
		return 2;
	}
	int (*post_opt)(spank_t, int, char **) =
		(int (*)(spank_t, int, char **)) dlsym(h, "slurm_spank_init_post_opt");
	if (!post_opt) {
		fprintf(stderr, "spank_host: %s has no slurm_spank_init_post_opt\n", argv[1]);
		return 2;
	}
	if (uid != 0 && setresuid(uid, uid, uid) != 0) {
		perror("spank_host: setresuid");
		return 2;
	}
	int rc = post_opt(NULL, argc - 3, argv + 3);
	if (rc != 0) {
		fprintf(stderr, "sbatch: error: spank: required plugin %s: init_post_opt() failed with rc=%d\n",
			argv[1], rc);
		return 1;
	}
	printf("spank_scim: job of uid %u allowed\n", (unsigned) uid);
	return 0;
}
