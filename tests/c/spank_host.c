/*
 * spank_host - asks spank_scim.so what a Slurm command or daemon would be
 * told, without Slurm.
 *
 *   spank_host [-c CONTEXT] PLUGIN.so USER|UID [plugin args...]
 *   spank_host -s PLUGIN.so
 *
 * Loads the real plugin and calls its callbacks in the order spank.h gives
 * for CONTEXT, with the plugstack.conf arguments:
 *
 *   allocator (default)  sbatch/salloc: init, init_post_opt, exit, as
 *                        USER's real uid (needs root to take it)
 *   local                srun: init, init_post_opt, local_user_init, exit
 *   remote               slurmstepd: init, init_post_opt, user_init,
 *                        task_init_privileged, task_init (as USER),
 *                        task_post_fork, task_exit, exit; S_JOB_UID is
 *                        USER, the job environment is this process's
 *                        (e.g. SLURM_JOB_ACCOUNT)
 *   slurmd               slurmd: init, slurmd_exit, exit (as root)
 *   job_script           slurmd's prolog/epilog: job_prolog, job_epilog
 *
 * Callbacks the plugin does not export are skipped, as Slurm skips them.
 * Prints the plugin's messages as the command would and, on failure,
 * Slurm's "required plugin ... failed" line. Exits 0 when every callback
 * returned 0 (job allowed), 1 when one failed (denied, or in slurmd and
 * job_script: the node would be drained), 2 on a usage or load error.
 *
 * -s prints the plugin's identity symbols (plugin_name, plugin_type,
 * plugin_version, spank_plugin_version) and whether plugin_version is the
 * SLURM_VERSION_NUMBER of the spank.h built against: Slurm refuses to load
 * a plugin of another version.
 *
 * Used by `make demo` and tests/c/run.sh, inside a namespace whose
 * nsswitch.conf lists scim when USER is a name.
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

static spank_context_t ctx = S_CTX_ALLOCATOR;
static uid_t job_uid;
static const char *prog = "sbatch";

/* The host side of the SPANK API that spank_scim uses. */
spank_context_t spank_context(void) { return ctx; }
int spank_remote(spank_t sp) { (void) sp; return ctx == S_CTX_REMOTE; }

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
	(void) sp;
	va_list ap;
	va_start(ap, item);
	spank_err_t rc = ESPANK_NOT_AVAIL; /* sbatch, srun, slurmd: no job yet */
	if ((ctx == S_CTX_REMOTE || ctx == S_CTX_JOB_SCRIPT) && item == S_JOB_UID) {
		uid_t *p = va_arg(ap, uid_t *);
		*p = job_uid;
		rc = ESPANK_SUCCESS;
	}
	va_end(ap);
	return rc;
}

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
	(void) sp;
	if (ctx != S_CTX_REMOTE)
		return ESPANK_NOT_REMOTE;
	const char *v = getenv(var);
	if (!v)
		return ESPANK_ENV_NOEXIST;
	if ((int) strlen(v) >= len)
		return ESPANK_NOSPACE;
	strcpy(buf, v);
	return ESPANK_SUCCESS;
}

/* slurm_error and slurm_info: one line on stderr, as the command would
 * print it. */
static void say(const char *level, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: %s", prog, level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void slurm_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say("error: ", fmt, ap);
	va_end(ap);
}

void slurm_info(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say("", fmt, ap);
	va_end(ap);
}

static const struct {
	const char *name;
	spank_context_t ctx;
	const char *prog;
	const char *calls[9];
} contexts[] = {
	{"allocator", S_CTX_ALLOCATOR, "sbatch", {"init", "init_post_opt", "exit"}},
	{"local", S_CTX_LOCAL, "srun", {"init", "init_post_opt", "local_user_init", "exit"}},
	{"remote", S_CTX_REMOTE, "slurmstepd",
	 {"init", "init_post_opt", "user_init", "task_init_privileged", "task_init",
	  "task_post_fork", "task_exit", "exit"}},
	{"slurmd", S_CTX_SLURMD, "slurmd", {"init", "slurmd_exit", "exit"}},
	{"job_script", S_CTX_JOB_SCRIPT, "slurmd", {"job_prolog", "job_epilog"}},
};

static int symbols(void *h)
{
	const char *name = dlsym(h, "plugin_name");
	const char *type = dlsym(h, "plugin_type");
	const unsigned int *version = dlsym(h, "plugin_version");
	const unsigned int *sversion = dlsym(h, "spank_plugin_version");
	printf("plugin_name=%s plugin_type=%s plugin_version=%s spank_plugin_version=%u\n",
	       name ? name : "(missing)", type ? type : "(missing)",
	       !version ? "(missing)" : *version == SLURM_VERSION_NUMBER ? "SLURM_VERSION_NUMBER" : "other",
	       sversion ? *sversion : 0);
	return name && type && version && sversion ? 0 : 1;
}

int main(int argc, char **argv)
{
	int a = 1, show = 0;
	const char *cname = "allocator";
	for (; a < argc && argv[a][0] == '-'; a++) {
		if (!strcmp(argv[a], "-s"))
			show = 1;
		else if (!strcmp(argv[a], "-c") && a + 1 < argc)
			cname = argv[++a];
		else
			break;
	}
	size_t ci, nctx = sizeof(contexts) / sizeof(contexts[0]);
	for (ci = 0; ci < nctx && strcmp(contexts[ci].name, cname); ci++)
		;
	if (ci == nctx || argc - a < (show ? 1 : 2)) {
		fprintf(stderr, "usage: %s [-c allocator|local|remote|slurmd|job_script] PLUGIN.so USER|UID "
			"[plugin args...]\n       %s -s PLUGIN.so\n", argv[0], argv[0]);
		return 2;
	}
	const char *plugin = argv[a];
	void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "spank_host: %s\n", dlerror());
		return 2;
	}
	if (show)
		return symbols(h);
	ctx = contexts[ci].ctx;
	prog = contexts[ci].prog;

	char *end;
	errno = 0;
	unsigned long n = strtoul(argv[a + 1], &end, 10);
	uid_t uid;
	if (!errno && *end == '\0' && end != argv[a + 1]) {
		uid = (uid_t) n;
	} else {
		struct passwd *pw = getpwnam(argv[a + 1]);
		if (!pw) {
			fprintf(stderr, "spank_host: no such user %s\n", argv[a + 1]);
			return 2;
		}
		uid = pw->pw_uid;
	}
	job_uid = uid;
	/* sbatch, salloc and srun run as the user; slurmd and slurmstepd as
	 * root, which becomes the user only for task_init (in the task). */
	if ((ctx == S_CTX_ALLOCATOR || ctx == S_CTX_LOCAL) && uid != 0 &&
	    setresuid(uid, uid, uid) != 0) {
		perror("spank_host: setresuid");
		return 2;
	}
	int ac = argc - a - 2;
	char **av = argv + a + 2;
	int failed = 0, called = 0;
	for (const char *const *c = contexts[ci].calls; *c; c++) {
		char sym[64];
		snprintf(sym, sizeof(sym), "slurm_spank_%s", *c);
		spank_f *fn = (spank_f *) dlsym(h, sym);
		if (!fn)
			continue;
		if (!strcmp(*c, "task_init") && uid != 0) {
			/* In the task: the job's user, after fork. */
			if (setresuid(uid, uid, uid) != 0) {
				perror("spank_host: setresuid");
				return 2;
			}
		}
		called++;
		int rc = fn(NULL, ac, av);
		if (rc != 0) {
			fprintf(stderr, "%s: error: spank: required plugin %s: %s() failed with rc=%d\n",
				prog, plugin, *c, rc);
			failed = 1;
			if (strcmp(*c, "exit") != 0 && ctx != S_CTX_SLURMD && ctx != S_CTX_JOB_SCRIPT)
				break; /* the command stops; slurmd would drain the node */
		}
	}
	if (failed)
		return 1;
	printf("spank_scim: job of uid %u allowed (%s context, %d callbacks)\n", (unsigned) uid, cname, called);
	return 0;
}
