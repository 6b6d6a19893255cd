/*
 * fuzz_reader - libFuzzer harness for the C reader: the input bytes become
 * the snapshot file, and every lookup runs on it. The reader must answer
 * or say UNAVAIL; ASan/UBSan report anything else. Seeds come from
 * gensnap (tests/c/fuzz.sh), so the names looked up exist in them.
 *
 *   clang -fsanitize=fuzzer,address,undefined -Iinclude \
 *         -Ibuild/sqlite tests/c/fuzz_reader.c $(READER_SRC) \
 *         build/sqlite/sqlite3.o   (READER_SRC: the Makefile's parts of c/)
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scimcache.h"

static char dir[64], path[80];
static char big[1 << 16];

static void remove_input(void)
{
	unlink(path);
	rmdir(dir);
}

/* The input goes into a directory of its own (0700): the reader refuses
 * a snapshot whose directory is group or world writable, as /tmp is, and
 * a file there would stop every input at that check. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "/tmp/fuzz_reader.XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/snap.db", dir);
	atexit(remove_input);
	return 0;
}

/* Calls f with a small buffer, then a large one after ERANGE, as glibc
 * does. */
#define TWICE(call_small, call_big)              \
	do {                                     \
		if ((call_small) == SCIM_ERANGE) \
			(void)(call_big);        \
	} while (0)

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The reader refuses a file whose SQLite header disagrees with its size
 * before SQLite sees it (tests/c/run.sh covers that). So that mutations
 * reach SQLite and the lookups, an input with a plausible header is padded
 * to whole pages and its header's page count made to match. */
static size_t fix_header(const uint8_t *data, size_t size, uint8_t **out)
{
	*out = NULL;
	if (size < 100 || memcmp(data, "SQLite format 3", 16) != 0)
		return size;
	uint32_t page = (uint32_t)data[16] << 8 | data[17];
	if (page == 1)
		page = 65536;
	if (page < 512 || (page & (page - 1)))
		return size;
	size_t pages = (size + page - 1) / page;
	uint8_t *b = calloc(pages, page);
	if (!b)
		abort();
	memcpy(b, data, size);
	put32(b + 28, (uint32_t)pages);
	memcpy(b + 92, b + 24, 4);
	*out = b;
	return pages * page;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;
	size_t len = fix_header(data, size, &fixed);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		abort();
	if (write(fd, fixed ? fixed : data, len) != (ssize_t)len)
		abort();
	close(fd);
	free(fixed);

	/* A fresh handle per input: the file is rewritten in place here,
	 * which a real snapshot never is. */
	struct scim_cache *c = scim_cache_new(path);
	char small[48];
	struct passwd pw;
	struct group gr;
	struct scim_assoc as;
	gid_t gids[8];
	size_t n;
	int v;

	scim_cache_check(c);
	TWICE(scim_getpwnam(c, "u000001", &pw, small, sizeof(small)),
	      scim_getpwnam(c, "u000001", &pw, big, sizeof(big)));
	TWICE(scim_getpwuid(c, 100002, &pw, small, sizeof(small)),
	      scim_getpwuid(c, 100002, &pw, big, sizeof(big)));
	TWICE(scim_getgrnam(c, "g00001", &gr, small, sizeof(small)),
	      scim_getgrnam(c, "g00001", &gr, big, sizeof(big)));
	TWICE(scim_getgrgid(c, 200002, &gr, small, sizeof(small)),
	      scim_getgrgid(c, 200002, &gr, big, sizeof(big)));
	/* g00001 by gid: in the pieced seed, its list in pieces (schema
	 * version 3) reached through the by-gid redirect. */
	TWICE(scim_getgrgid(c, 200001, &gr, small, sizeof(small)),
	      scim_getgrgid(c, 200001, &gr, big, sizeof(big)));
	/* Walks must make progress, or getent would loop forever. */
	int64_t pos = -1, before;
	for (int i = 0; i < 64; i++) {
		before = pos;
		int st = scim_nextpw(c, &pos, &pw, small, sizeof(small));
		if (st == SCIM_ERANGE)
			st = scim_nextpw(c, &pos, &pw, big, sizeof(big));
		if (st != SCIM_OK)
			break;
		if (pos <= before || pw.pw_uid != (uid_t)pos)
			abort();
	}
	pos = -1;
	for (int i = 0; i < 64; i++) {
		before = pos;
		int st = scim_nextgr(c, &pos, &gr, small, sizeof(small));
		if (st == SCIM_ERANGE)
			st = scim_nextgr(c, &pos, &gr, big, sizeof(big));
		if (st != SCIM_OK)
			break;
		if (pos <= before || gr.gr_gid != (gid_t)pos)
			abort();
	}
	scim_user_groups(c, "u000001", gids, 8, &n);
	scim_user_in_group(c, "u000001", "g00002", &v);
	scim_user_active(c, "u000002", &v);
	TWICE(scim_user_keys(c, "u000001", small, sizeof(small)),
	      scim_user_keys(c, "u000001", big, sizeof(big)));
	scim_assoc_count(c, "u000002", NULL, &v);
	scim_assoc_count(c, "u000002", "acct1", &v);
	char after[256] = "";
	for (int i = 0; i < 8; i++) {
		if (scim_next_assoc(c, "u000002", after, &as, big, sizeof(big)) != SCIM_OK)
			break;
		if (strcmp(as.account, after) <= 0)
			abort();
		snprintf(after, sizeof(after), "%s", as.account);
	}
	TWICE(scim_meta(c, "serial", small, 2), scim_meta(c, "serial", big, sizeof(big)));
	(void)scim_cache_error(c);
	scim_cache_free(c);
	return 0;
}
