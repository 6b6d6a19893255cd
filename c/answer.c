/*
 * answer.c - keyed passwd and group answers (row_query) from the NSS
 * index or SQL, the per-handle memo of the last answer and of the last
 * ERANGE, and keyset walks.
 */
#include "reader.h"

/* A walk step whose key did not increase: only a corrupt B-tree does
 * that, and it would make every enumeration loop forever. */
static int corrupt_walk(struct scim_cache *c)
{
	pthread_mutex_lock(&reader_mu);
	set_err(c, "%s: corrupt: keys out of order", c->path);
	c->stale = 1;
	pthread_mutex_unlock(&reader_mu);
	return SCIM_UNAVAIL;
}

/* The answer memo: the last keyed passwd or group answer of the handle,
 * kept as strings and offsets, so that the same key asked again (ls -l,
 * ps, a shell prompt's repeated uid lookups; glibc's retry after ERANGE)
 * is a copy, not a B-tree descent and a row decode. Valid while the same
 * file stays open: close_db forgets it, as it forgets the connection.
 * At most ANS_MAX bytes (a 1,000-member group is about 12 KiB). */
#define ANS_MAX (64u << 10)

static int ans_keyed(enum stmt_id id)
{
	return id == ST_PW_NAM || id == ST_PW_UID || id == ST_GR_NAM ||
	       id == ST_GR_GID;
}

static int ans_match(const struct scim_cache *c, enum stmt_id id,
		     const char *name, int64_t key)
{
	return c->ans.id == (int)id &&
	       (name ? strcmp(name, c->ans.name) == 0 : key == c->ans.key);
}

static void ans_save(struct scim_cache *c, enum stmt_id id, const char *name,
		     int64_t key, const void *ent, const char *buf)
{
	c->ans.id = -1;
	if (!ans_keyed(id) || (name && strlen(name) >= sizeof(c->ans.name)))
		return;
	int group = id == ST_GR_NAM || id == ST_GR_GID;
	const struct group *gr = ent;
	const struct passwd *pw = ent;
	size_t n = 0;
	if (group)
		while (gr->gr_mem[n])
			n++;
	size_t slen = c->fill_len, need = slen + n * sizeof(uint32_t);
	if (need > ANS_MAX)
		return;
	if (need > c->ans.cap) {
		char *b = realloc(c->ans.blob, need);
		if (!b)
			return;
		c->ans.blob = b;
		c->ans.cap = need;
	}
	memcpy(c->ans.blob, buf, slen);
	if (group) {
		c->ans.off[0] = (uint32_t)(gr->gr_name - buf);
		c->ans.off[1] = (uint32_t)(gr->gr_passwd - buf);
		c->ans.xid = gr->gr_gid;
		for (size_t i = 0; i < n; i++) {
			uint32_t o = (uint32_t)(gr->gr_mem[i] - buf);
			memcpy(c->ans.blob + slen + i * sizeof(o), &o, sizeof(o));
		}
	} else {
		const char *s[5] = {pw->pw_name, pw->pw_passwd, pw->pw_gecos,
				    pw->pw_dir, pw->pw_shell};
		for (int i = 0; i < 5; i++)
			c->ans.off[i] = (uint32_t)(s[i] - buf);
		c->ans.xid = pw->pw_uid;
		c->ans.gid = pw->pw_gid;
	}
	c->ans.slen = slen;
	c->ans.n = n;
	c->ans.key = key;
	snprintf(c->ans.name, sizeof(c->ans.name), "%s", name ? name : "");
	c->ans.id = (int)id;
}

/* The memo's answer in the caller's memory, laid out as fill_* lays it
 * out (so the same buffer sizes succeed and fail). */
static int ans_load(struct scim_cache *c, void *ent, char *buf, size_t buflen,
		    uint32_t *id_out)
{
	size_t slen = c->ans.slen;
	if (c->ans.id == ST_GR_NAM || c->ans.id == ST_GR_GID) {
		size_t n = c->ans.n;
		size_t pad = (size_t)(-(uintptr_t)(buf + slen)) &
			     (_Alignof(char *) - 1);
		if (buflen < slen || pad > buflen - slen ||
		    n + 1 > (buflen - slen - pad) / sizeof(char *))
			return SCIM_ERANGE;
		memcpy(buf, c->ans.blob, slen);
		char **mem = (char **)(void *)(buf + slen + pad);
		for (size_t i = 0; i < n; i++) {
			uint32_t o;
			memcpy(&o, c->ans.blob + slen + i * sizeof(o), sizeof(o));
			mem[i] = buf + o;
		}
		mem[n] = NULL;
		struct group *gr = ent;
		gr->gr_name = buf + c->ans.off[0];
		gr->gr_passwd = buf + c->ans.off[1];
		gr->gr_gid = c->ans.xid;
		gr->gr_mem = mem;
	} else {
		if (buflen < slen)
			return SCIM_ERANGE;
		memcpy(buf, c->ans.blob, slen);
		struct passwd *pw = ent;
		pw->pw_name = buf + c->ans.off[0];
		pw->pw_passwd = buf + c->ans.off[1];
		pw->pw_gecos = buf + c->ans.off[2];
		pw->pw_dir = buf + c->ans.off[3];
		pw->pw_shell = buf + c->ans.off[4];
		pw->pw_uid = c->ans.xid;
		pw->pw_gid = c->ans.gid;
	}
	if (id_out)
		*id_out = c->ans.xid;
	return SCIM_OK;
}

int row_query(struct scim_cache *c, enum stmt_id id, const char *name,
		     int64_t key, fill_fn fill, void *ent, char *buf,
		     size_t buflen, uint32_t *id_out)
{
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	/* glibc's getgrgid()/getgrnam() retry a large group with a buffer
	 * twice as large each time; each retry re-read the row (a 50,000-
	 * member group: 1 ms for the first lookup against 0.13 ms after).
	 * The same key in the same file with a buffer still below what the
	 * last attempt needed is answered at once. */
	if (c->memo_need && c->memo_id == (int)id && buflen < c->memo_need &&
	    (name ? strcmp(name, c->memo_name) == 0 : key == c->memo_key)) {
		end(c);
		return SCIM_ERANGE;
	}
	if (ans_match(c, id, name, key)) {
		status = ans_load(c, ent, buf, buflen, id_out);
		end(c);
		return status;
	}
	int row;
	sqlite3_stmt *st = NULL;
	if (c->ix.ok && ans_keyed(id)) {
		c->memo_need = 0;
		status = ix_lookup(c, id, name, key, ent, buf, buflen, id_out);
		row = status == SCIM_NOTFOUND ? 0 : status == SCIM_UNAVAIL ? -1 : 2;
	} else {
		st = stmt(c, id);
		if (name)
			sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		else
			sqlite3_bind_int64(st, 1, key);
		row = step(c, st);
	}
	switch (row) {
	case 1:
		c->memo_need = 0;
		status = fill(c, st, ent, buf, buflen, id_out);
		/* fall through */
	case 2: /* filled from the index */
		if (status == SCIM_ERANGE && c->memo_need &&
		    (!name || strlen(name) < sizeof(c->memo_name))) {
			c->memo_id = (int)id;
			c->memo_key = key;
			snprintf(c->memo_name, sizeof(c->memo_name), "%s",
				 name ? name : "");
		} else {
			c->memo_need = 0;
		}
		if (status == SCIM_OK)
			ans_save(c, id, name, key, ent, buf);
		break;
	case 0:
		status = SCIM_NOTFOUND;
		break;
	default:
		status = SCIM_UNAVAIL;
	}
	end(c);
	return status;
}

/* One step of a keyset walk (ST_PW_NEXT, ST_GR_NEXT): the first row whose
 * id is above *pos. The key bound is at least 0, which keeps id 0 out. A
 * row that does not move forward means out-of-order keys: a corrupt file
 * that would otherwise loop getent forever. */
int walk(struct scim_cache *c, enum stmt_id id, fill_fn fill,
		void *ent, int64_t *pos, char *buf, size_t buflen)
{
	uint32_t next;
	/* Below the floor: start at it (keeps ids 0..min_id-1 out). */
	int64_t floor = c ? (int64_t)c->min_id - 1 : 0;
	int status = row_query(c, id, NULL, *pos < floor ? floor : *pos, fill,
			       ent, buf, buflen, &next);
	if (status == SCIM_OK && (int64_t)next <= *pos)
		return corrupt_walk(c);
	if (status == SCIM_OK)
		*pos = next;
	return status;
}
