/*
 * localgroup.c - this host's own /etc/group, read directly (not through
 * NSS) for pam_scim and spank_scim: a SCIM user that a local line names
 * as a member would get that local group at login and in jobs, because
 * `files` answers initgroups before `scim`. syncd refuses such users on
 * the head; the gates refuse them on a node whose own file lists them.
 * The NSS module links it but never calls it.
 */
#include <grp.h>
#include <stdio.h>
#include <strings.h>

#include "reader.h"

int scim_local_group_member(const char *group_file, const char *name,
			    char *buf, size_t buflen)
{
	struct group *gr;
	int found = 0;
	FILE *f = fopen(group_file, "re");

	if (f == NULL)
		return 0;
	while (!found && (gr = fgetgrent(f)) != NULL) {
		for (char **m = gr->gr_mem; m && *m; m++) {
			if (strcasecmp(*m, name) == 0) {
				snprintf(buf, buflen, "%s", gr->gr_name);
				found = 1;
				break;
			}
		}
	}
	fclose(f);
	return found;
}
