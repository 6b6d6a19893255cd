/*
 * nss_null.c - libnss_scimnull.so.2, a module that answers at once.
 *
 * For nss_bench's Threads table ("glibc's dispatch alone"): its
 * getpwuid_r does no lookup, only what any module must do (copy one
 * entry into the caller's buffer), so a row through glibc with it is
 * what glibc's own path costs and how that path scales with threads,
 * whatever the module. It answers every uid >= 1000 with one fixed entry
 * named "scimnull" (pw_uid and pw_gid the uid asked) and nothing else.
 * nss_bench.sh builds it and stages it beside libnss_scim.so.2 (the
 * namespace's library overlay); it is never installed.
 */
#include <errno.h>
#include <nss.h>
#include <pwd.h>
#include <string.h>

enum nss_status _nss_scimnull_getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t len,
					 int *errnop);

enum nss_status _nss_scimnull_getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t len,
					 int *errnop)
{
	/* name, passwd, gecos, dir, shell */
	static const char e[] = "scimnull\0x\0\0/nonexistent\0/usr/sbin/nologin";
	if (uid < 1000)
		return NSS_STATUS_NOTFOUND;
	if (len < sizeof(e)) {
		*errnop = ERANGE;
		return NSS_STATUS_TRYAGAIN;
	}
	memcpy(buf, e, sizeof(e));
	pw->pw_name = buf;
	pw->pw_passwd = buf + 9;
	pw->pw_gecos = buf + 11;
	pw->pw_dir = buf + 12;
	pw->pw_shell = buf + 25;
	pw->pw_uid = uid;
	pw->pw_gid = uid;
	return NSS_STATUS_SUCCESS;
}
