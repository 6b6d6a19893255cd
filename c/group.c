/*
 * group.c - getgrnam, getgrgid, the group walk, and member lists split
 * into struct group.
 */
#include "reader.h"

/* Byte mask of w with 0x80 in each byte that is ',' (exact: no carry
 * crosses a byte), for splitting member lists eight bytes at a time:
 * a branch per byte cost more than the rest of a 1,000-member getgrgid. */
static inline uint64_t comma_bytes(const char *p)
{
	const uint64_t lo7 = 0x7F7F7F7F7F7F7F7FULL;
	uint64_t w;
	memcpy(&w, p, sizeof(w));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w); /* byte i of memory in bits 8i..8i+7 */
#endif
	uint64_t x = w ^ 0x2C2C2C2C2C2C2C2CULL; /* ',' bytes become 0 */
	return ~(((x & lo7) + lo7) | x | lo7);
}

/* Items of a comma-separated member list: commas + 1, none in "". */
static size_t count_items(const char *src, size_t len)
{
	size_t n = len > 0, i;
	for (i = 0; i + 8 <= len; i += 8)
		n += (size_t)((((comma_bytes(src + i) >> 7) *
				0x0101010101010101ULL) >> 56));
	for (; i < len; i++)
		n += src[i] == ',';
	return n;
}

/* Splits list (len bytes, in the caller's buffer) at its commas in place
 * into mem, NULL-terminated; empty items (only a damaged file has them)
 * are skipped. mem has room for count_items() + 1 pointers. */
static void split_members(char *list, size_t len, char **mem)
{
	size_t k = 0, start = 0, i;
	for (i = 0; i + 8 <= len; i += 8) {
		for (uint64_t m = comma_bytes(list + i); m; m &= m - 1) {
			size_t at = i + (size_t)(__builtin_ctzll(m) >> 3);
			list[at] = '\0';
			if (at > start)
				mem[k++] = list + start;
			start = at + 1;
		}
	}
	for (; i < len; i++)
		if (list[i] == ',') {
			list[i] = '\0';
			if (i > start)
				mem[k++] = list + start;
			start = i + 1;
		}
	if (len > start)
		mem[k++] = list + start;
	mem[k] = NULL;
}

/* After the name, "*" and the member list were copied into a: the member
 * pointers, aligned, after them; SCIM_ERANGE if they do not fit. */
int finish_gr(size_t *memo_need, size_t *fill_len, struct arena *a, char *name,
		     char *passwd, char *list, uint32_t gid, struct group *gr,
		     uint32_t *gid_out)
{
	size_t len = strlen(list), n = count_items(list, len);
	size_t pad = (size_t)(-(uintptr_t)(a->buf + a->used)) &
		     (_Alignof(char *) - 1);
	if (pad > a->len - a->used ||
	    n + 1 > (a->len - a->used - pad) / sizeof(char *)) {
		*memo_need = a->used + (n + 1) * sizeof(char *);
		return SCIM_ERANGE;
	}
	char **mem = (char **)(void *)(a->buf + a->used + pad);
	split_members(list, len, mem);
	gr->gr_name = name;
	gr->gr_passwd = passwd;
	gr->gr_gid = gid;
	gr->gr_mem = mem;
	*fill_len = (size_t)(list + len + 1 - a->buf);
	if (gid_out)
		*gid_out = gid;
	return SCIM_OK;
}

/* Copies the current row of an ST_GR_* statement. Its members column
 * lists the member names comma-separated (validated names never contain
 * a comma): it is copied once after the group name, split in place, and
 * an aligned pointer array is built after it. One row read, however large
 * the group. */
static int fill_gr(struct scim_cache *c, sqlite3_stmt *st, void *ent,
		   char *buf, size_t buflen, uint32_t *gid_out)
{
	uint32_t gid;
	if (col_id(c, st, 0, &gid)) {
		mark_stale(c);
		return SCIM_UNAVAIL;
	}
	const char *src = col_text(st, 2);
	size_t len = strlen(src), n = count_items(src, len);
	/* Everything below but the pointer array's alignment: a buffer
	 * smaller than this gets SCIM_ERANGE at once, and row_query
	 * remembers it for glibc's retries (see memo_need). */
	size_t need = strlen(col_text(st, 1)) + 1 + sizeof(PW_PASSWD) + len + 1 +
		      (n + 1) * sizeof(char *);
	if (buflen < need) {
		c->memo_need = need;
		return SCIM_ERANGE;
	}
	struct arena a = {buf, buflen, 0};
	char *name = arena_str(&a, col_text(st, 1));
	char *passwd = arena_str(&a, PW_PASSWD);
	char *list = arena_str(&a, src);
	if (!name || !passwd || !list)
		return SCIM_ERANGE;
	return finish_gr(&c->memo_need, &c->fill_len, &a, name, passwd, list, gid, ent, gid_out);
}

int scim_getgrnam(struct scim_cache *c, const char *name, struct group *gr,
		  char *buf, size_t buflen)
{
	if (!name || !*name || reserved_name(name))
		return absent(c);
	return row_query(c, ST_GR_NAM, name, 0, fill_gr, gr, buf, buflen, NULL);
}

int scim_getgrgid(struct scim_cache *c, gid_t gid, struct group *gr,
		  char *buf, size_t buflen)
{
	if (reserved_id(c, gid))
		return absent(c);
	return row_query(c, ST_GR_GID, NULL, gid, fill_gr, gr, buf, buflen, NULL);
}

int scim_nextgr(struct scim_cache *c, int64_t *pos, struct group *gr,
		char *buf, size_t buflen)
{
	return walk(c, ST_GR_NEXT, fill_gr, gr, pos, buf, buflen);
}
