/*
 * grouplist - getgrouplist(3) through glibc with a caller-chosen array
 * size, to check what a caller with too small an array is told.
 *
 *   grouplist USER GID NGROUPS
 *
 * Prints "RET NGROUPS" and, when RET >= 0, the gids: "RET NGROUPS g g ...".
 * glibc returns -1 and sets NGROUPS to the number needed when the array is
 * too small; the gids are then not printed.
 */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: grouplist USER GID NGROUPS\n");
		return 64;
	}
	int n = atoi(argv[3]);
	gid_t *g = calloc((size_t)(n > 0 ? n : 1), sizeof(gid_t));
	if (!g)
		return 1;
	int r = getgrouplist(argv[1], (gid_t)strtoul(argv[2], NULL, 10), g, &n);
	printf("%d %d", r, n);
	for (int i = 0; r >= 0 && i < n; i++)
		printf(" %u", (unsigned)g[i]);
	putchar('\n');
	free(g);
	return 0;
}
