/*
 * answer.c - keyed passwd and group answers (row_query) from the NSS
 * index (without the lock when it can) or SQL, the memos of the last
 * answer and of the last ERANGE, and keyset walks.
 */
#include "reader.h"

/* A walk step whose key did not increase: only a corrupt B-tree does
 * that, and it would make every enumeration loop forever. */
static int corrupt_walk(struct scim_cache *c)
{
	pthread_mutex_lock(&reader_mu);
	set_err(c, "%s: corrupt: keys out of order", c->path);
	mark_stale(c);
	pthread_mutex_unlock(&reader_mu);
	return SCIM_UNAVAIL;
}

/* The answer memo: the last keyed passwd or group answer, kept as
 * strings and offsets, so that the same key asked again (ls -l, ps, a
 * shell prompt's repeated uid lookups; glibc's retry after ERANGE) is a
 * copy, not an index read or a B-tree descent and a row decode; and the
 * last SCIM_ERANGE (glibc's getgrgid()/getgrnam() retry a large group
 * with a buffer twice as large each time; each retry re-read the row: a
 * 50,000-member group took 1 ms for the first lookup against 0.13 ms
 * after; the same key with a buffer still below what the last attempt
 * needed is answered at once). Valid for the snapshot gen it was taken
 * from. Lock-free lookups keep one per stripe (taken with a trylock: a
 * busy one is skipped), the locked path one per handle (c->memo). At
 * most ANS_MAX bytes (a 1,000-member group is about 12 KiB). */
#define ANS_MAX (64u << 10)

static int ans_keyed(enum stmt_id id)
{
	return id == ST_PW_NAM || id == ST_PW_UID || id == ST_GR_NAM ||
	       id == ST_GR_GID;
}

static int key_is(const char *name, int64_t key, const char *mname,
		  int64_t mkey)
{
	return name ? strcmp(name, mname) == 0 : key == mkey;
}

static void ans_save(struct memo *m, size_t slen, enum stmt_id id,
		     const char *name, int64_t key, const void *ent,
		     const char *buf)
{
	m->id = -1;
	if (!ans_keyed(id) || (name && strlen(name) >= sizeof(m->name)))
		return;
	int group = id == ST_GR_NAM || id == ST_GR_GID;
	const struct group *gr = ent;
	const struct passwd *pw = ent;
	size_t n = 0;
	if (group)
		while (gr->gr_mem[n])
			n++;
	size_t need = slen + n * sizeof(uint32_t);
	if (need > ANS_MAX)
		return;
	if (need > m->cap) {
		/* The old contents are not kept: a new block, not realloc. A
		 * blob that is a page (memo_page) stays one. */
		size_t al = m->cap >= IX_OWN ? IX_OWN : LINE;
		size_t cap = (need + al - 1) & ~(al - 1);
		char *b = aligned_alloc(al, cap);
		if (!b)
			return;
		free(m->blob);
		m->blob = b;
		m->cap = cap;
	}
	memcpy(m->blob, buf, slen);
	if (group) {
		m->off[0] = (uint32_t)(gr->gr_name - buf);
		m->off[1] = (uint32_t)(gr->gr_passwd - buf);
		m->xid = gr->gr_gid;
		for (size_t i = 0; i < n; i++) {
			uint32_t o = (uint32_t)(gr->gr_mem[i] - buf);
			memcpy(m->blob + slen + i * sizeof(o), &o, sizeof(o));
		}
	} else {
		const char *s[5] = {pw->pw_name, pw->pw_passwd, pw->pw_gecos,
				    pw->pw_dir, pw->pw_shell};
		for (int i = 0; i < 5; i++)
			m->off[i] = (uint32_t)(s[i] - buf);
		m->xid = pw->pw_uid;
		m->gid = pw->pw_gid;
	}
	m->slen = slen;
	m->n = n;
	m->key = key;
	/* (name fits: checked above; no snprintf on every answer.) */
	size_t nl = name ? strlen(name) : 0;
	memcpy(m->name, name ? name : "", nl);
	m->name[nl] = '\0';
	m->id = (int)id;
}

/* The memo's answer in the caller's memory, laid out as fill_* lays it
 * out (so the same buffer sizes succeed and fail). */
static int ans_load(const struct memo *m, void *ent, char *buf,
		    size_t buflen, uint32_t *id_out)
{
	size_t slen = m->slen;
	if (m->id == ST_GR_NAM || m->id == ST_GR_GID) {
		size_t n = m->n;
		size_t pad = (size_t)(-(uintptr_t)(buf + slen)) &
			     (_Alignof(char *) - 1);
		if (buflen < slen || pad > buflen - slen ||
		    n + 1 > (buflen - slen - pad) / sizeof(char *))
			return SCIM_ERANGE;
		memcpy(buf, m->blob, slen);
		char **mem = (char **)(void *)(buf + slen + pad);
		for (size_t i = 0; i < n; i++) {
			uint32_t o;
			memcpy(&o, m->blob + slen + i * sizeof(o), sizeof(o));
			mem[i] = buf + o;
		}
		mem[n] = NULL;
		struct group *gr = ent;
		gr->gr_name = buf + m->off[0];
		gr->gr_passwd = buf + m->off[1];
		gr->gr_gid = m->xid;
		gr->gr_mem = mem;
	} else {
		if (buflen < slen)
			return SCIM_ERANGE;
		memcpy(buf, m->blob, slen);
		struct passwd *pw = ent;
		pw->pw_name = buf + m->off[0];
		pw->pw_passwd = buf + m->off[1];
		pw->pw_gecos = buf + m->off[2];
		pw->pw_dir = buf + m->off[3];
		pw->pw_shell = buf + m->off[4];
		pw->pw_uid = m->xid;
		pw->pw_gid = m->gid;
	}
	if (id_out)
		*id_out = m->xid;
	return SCIM_OK;
}

/* The memo's answer for this call, or -1 when it has none. */
static int memo_answer(const struct memo *m, uint64_t gen, enum stmt_id id,
		       const char *name, int64_t key, void *ent, char *buf,
		       size_t buflen, uint32_t *id_out)
{
	if (!m || m->gen != gen)
		return -1;
	if (m->need && m->need_id == (int)id && buflen < m->need &&
	    key_is(name, key, m->need_name, m->need_key))
		return SCIM_ERANGE;
	if (m->id == (int)id && key_is(name, key, m->name, m->key))
		return ans_load(m, ent, buf, buflen, id_out);
	return -1;
}

/* Keeps what this call learnt: an answer, or the size an ERANGE needs
 * (need: certain below it; 0 unknown). */
static void memo_keep(struct memo *m, uint64_t gen, enum stmt_id id,
		      const char *name, int64_t key, int status, size_t need,
		      size_t slen, const void *ent, const char *buf)
{
	/* A memo half-written by a thread cut off by fork never matches in
	 * the child: fork_child forgets the memos of busy stripes, and a
	 * reopened snapshot gets a gen above every gen before. */
	if (m->gen != gen) {
		m->id = -1;
		m->need = 0;
		m->gen = gen;
	}
	if (status == SCIM_ERANGE && need &&
	    (!name || strlen(name) < sizeof(m->need_name))) {
		m->need_id = (int)id;
		m->need_key = key;
		snprintf(m->need_name, sizeof(m->need_name), "%s",
			 name ? name : "");
		m->need = need;
	} else if (status != SCIM_UNAVAIL) {
		m->need = 0;
	}
	if (status == SCIM_OK)
		ans_save(m, slen, id, name, key, ent, buf);
}

/* The stripe's memo, if no other lookup has it (a trylock): released by
 * memo_drop. NULL when busy or out of memory: the call goes without.
 * A memo is written by every lookup that takes it, so it and its blob
 * have cache lines of their own (aligned_alloc, sizes rounded up to a
 * line): a plain malloc could put them on the line of whatever block
 * came before or after (another stripe's memo, the snapshot's struct
 * snap or window states, which every lookup reads), and each lookup on
 * one CPU then took that line from the others (false sharing). */
static struct memo *memo_take(struct stripe *sp)
{
	if (__atomic_exchange_n(&sp->busy, 1, __ATOMIC_ACQUIRE))
		return NULL;
	if (!sp->memo) {
		sp->memo = aligned_alloc(LINE, line_round(sizeof(*sp->memo)));
		if (!sp->memo) {
			__atomic_store_n(&sp->busy, 0, __ATOMIC_RELEASE);
			return NULL;
		}
		memset(sp->memo, 0, sizeof(*sp->memo));
		sp->memo->id = -1;
	}
	return sp->memo;
}

/* The memo's blob as the page buffer of the lookup holding it (ix_page
 * reads a cold window's page there; the lookup's answer replaces it when
 * the memo keeps it, after the page is done with): whole pages of its
 * own. The first memo to want them takes the pages the open read the
 * file's header into (s->spare: already written, so no page fault and no
 * heap growth in a new program); another one is made so at its second
 * lookup that wants it (its first reads into malloc's memory). NULL: the
 * lookup mallocs. Taking the open's pages (Dec 2, fresh programs, 100,000
 * users, load 5-9): a new program's second lookup was 17-210 us (an
 * aligned_alloc growing the heap, and its new page faulted in by the
 * pread's copy: 2 minor faults), now 3-8 us, one pread like the others;
 * make bench's cold-start "second" column (a forked child) went from
 * 34-450 us to 4.9-6.7 (4 runs each, both shapes). Not a
 * malloc and free per pread: in a forked child, each heap page and each
 * page of malloc's own state a malloc writes was the parent's, 1 to 4
 * copy-on-write faults (4-5 us each on the bench machine) by the heap's
 * state at the fork; the blob is one page, which keeping the answer
 * writes anyway. */
static unsigned char *memo_page(struct memo *m, struct snap *s)
{
	if (m->cap >= IX_OWN && !((uintptr_t)m->blob & (IX_OWN - 1)))
		return (unsigned char *)m->blob;
	unsigned char *sp = NULL;
	/* A load first: s's line is read by every lookup, written once. */
	if (__atomic_load_n(&s->spare, __ATOMIC_RELAXED) &&
	    (sp = __atomic_exchange_n(&s->spare, NULL, __ATOMIC_ACQUIRE))) {
		free(m->blob);
		m->blob = (char *)sp;
		m->cap = HEAD_READ;
		m->id = -1; /* its answer went with the old blob */
		return sp;
	}
	if (m->uses++ < 1)
		return NULL;
	size_t cap = (m->cap + IX_OWN - 1) & ~(size_t)(IX_OWN - 1);
	char *b = aligned_alloc(IX_OWN, cap > IX_OWN ? cap : IX_OWN);
	if (!b)
		return NULL;
	free(m->blob);
	m->blob = b;
	m->cap = cap > IX_OWN ? cap : IX_OWN;
	m->id = -1; /* its answer went with the old blob */
	return (unsigned char *)b;
}

static void memo_drop(struct stripe *sp, struct memo *m)
{
	if (m)
		__atomic_store_n(&sp->busy, 0, __ATOMIC_RELEASE);
}

/* A keyed lookup from the index without the lock: s is held (enter_ix)
 * and released here. */
static int ix_query(struct scim_cache *c, struct snap *s, struct stripe *sp,
		    enum stmt_id id, const char *name, int64_t key, void *ent,
		    char *buf, size_t buflen, uint32_t *id_out)
{
	struct memo *m = memo_take(sp);
	int status = memo_answer(m, s->gen, id, name, key, ent, buf, buflen,
				 id_out);
	struct ixq q = {.s = s, .min_id = c->min_id};
	if (status < 0) {
		q.own = m ? memo_page(m, s) : NULL;
		status = ix_lookup(&q, id, name, key, ent, buf, buflen, id_out);
		ix_done(&q);
		if (q.own_used)
			m->id = -1; /* the blob held a page, not the answer */
		if (m && !q.damaged)
			memo_keep(m, s->gen, id, name, key, status, q.memo_need,
				  q.fill_len, ent, buf);
	}
	memo_drop(sp, m);
	leave(sp);
	return q.damaged ? ix_damaged_at(c, s) : status;
}

int row_query(struct scim_cache *c, enum stmt_id id, const char *name,
		     int64_t key, fill_fn fill, void *ent, char *buf,
		     size_t buflen, uint32_t *id_out)
{
	int status;
	if (ans_keyed(id)) { /* the index without the lock, when it can */
		struct stripe *sp;
		struct snap *s = enter_ix(c, &sp, &status);
		if (s)
			return ix_query(c, s, sp, id, name, key, ent, buf,
					buflen, id_out);
		if (status != SCIM_OK)
			return status;
	}
	if ((status = begin(c)) != SCIM_OK)
		return status;
	uint64_t gen = c->snap ? c->snap->gen : 0;
	struct memo *m = &c->memo;
	status = memo_answer(m, gen, id, name, key, ent, buf, buflen, id_out);
	if (status >= 0) {
		end(c);
		return status;
	}
	int found; /* an entry (or its ERANGE) for the memo */
	c->memo_need = 0;
	if (c->snap && c->snap->ix.ok && ans_keyed(id)) {
		struct ixq q = {.s = c->snap, .min_id = c->min_id};
		status = ix_lookup(&q, id, name, key, ent, buf, buflen, id_out);
		ix_done(&q);
		if (q.damaged)
			status = ix_damaged(c);
		c->memo_need = q.memo_need;
		c->fill_len = q.fill_len;
		found = status != SCIM_NOTFOUND && status != SCIM_UNAVAIL;
	} else {
		sqlite3_stmt *st = stmt(c, id);
		if (name)
			sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		else
			sqlite3_bind_int64(st, 1, key);
		if ((found = (status = step_one(c, st)) == SCIM_OK))
			status = fill(c, st, ent, buf, buflen, id_out);
	}
	if (found)
		memo_keep(m, gen, id, name, key, status, c->memo_need,
			  c->fill_len, ent, buf);
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
