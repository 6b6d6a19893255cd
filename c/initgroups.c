/*
 * initgroups.c - a user's supplementary gids and group membership.
 */
#include "reader.h"

static int cmp_gid(const void *a, const void *b)
{
	gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;
	return x < y ? -1 : x > y;
}

void gid_keep(struct gid_list *l, uint32_t gid)
{
	if (reserved_floor(l->min_id, gid) || (int64_t)gid == l->root_gid)
		return;
	if (l->n < l->max)
		l->gids[l->n] = gid;
	if (l->n > 0 && gid < l->prev)
		l->unsorted = 1;
	l->prev = gid;
	l->n++;
}

void gid_done(struct gid_list *l)
{
	if (l->unsorted && l->n <= l->max)
		qsort(l->gids, l->n, sizeof(*l->gids), cmp_gid);
}

/* Parses user_groups.gids ("200001,200007": decimal, comma-separated)
 * into gids (at most max), skipping ids the reader never answers; *count
 * gets the number kept. -1 if the text is not such a list (a damaged or
 * hand-made file). syncd writes the list ascending; one that is not is
 * sorted here when it fits. Called locked. */
int parse_gids(struct scim_cache *c, const char *s, gid_t *gids,
		      size_t max, size_t *count)
{
	struct gid_list l = {gids, max, 0, 0, 0, c->min_id, c->root_gid};
	while (*s) {
		uint64_t v = 0;
		const char *p = s;
		while (*p >= '0' && *p <= '9' && p - s < 10)
			v = v * 10 + (uint64_t)(*p++ - '0');
		if (p == s || v > UINT32_MAX || (*p && *p != ',') ||
		    (*p == ',' && !p[1]))
			return -1;
		s = *p ? p + 1 : p;
		gid_keep(&l, (uint32_t)v);
	}
	gid_done(&l);
	*count = l.n;
	return 0;
}

int scim_user_groups(struct scim_cache *c, const char *user, gid_t *gids,
		     size_t max, size_t *count)
{
	if (!user || reserved_name(user))
		return absent(c);
	struct stripe *sp;
	int status;
	struct snap *s = enter_ix(c, &sp, &status);
	if (s) { /* the index, without the lock */
		struct ixq q = {.s = s, .min_id = c->min_id};
		status = ix_user_groups(&q, user, gids, max, count);
		ix_done(&q);
		leave(sp);
		return q.damaged ? ix_damaged_at(c, s) : status;
	}
	if (status != SCIM_OK || (status = begin(c)) != SCIM_OK)
		return status;
	size_t n = 0;
	if (c->snap && c->snap->ix.ok) { /* the index, locked */
		struct ixq q = {.s = c->snap, .min_id = c->min_id};
		status = ix_user_groups(&q, user, gids, max, count);
		ix_done(&q);
		if (q.damaged)
			status = ix_damaged(c);
		end(c);
		return status;
	}
	/* -1 when there is none (or on an error: the group walk and getgrgid
	 * still never answer for it). Once per open, on first use. */
	if (c->root_gid == -2)
		c->root_gid = sql_ready(c) == SCIM_OK
			? query_int(c->db, "SELECT gid FROM groups WHERE "
					   "name = 'root'")
			: -1;
	sqlite3_stmt *st = stmt(c, ST_USER_GROUPS);
	sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
	if ((status = step_one(c, st)) == SCIM_OK &&
	    parse_gids(c, col_text(st, 0), gids, max, &n) != 0) {
		set_err(c, "%s: corrupt: user_groups of %s is not a gid list",
			c->path, user);
		mark_stale(c);
		status = SCIM_UNAVAIL;
	}
	end(c);
	if (status != SCIM_OK)
		return status;
	*count = n;
	return n > max ? SCIM_ERANGE : SCIM_OK;
}

int scim_user_in_group(struct scim_cache *c, const char *user,
		       const char *group, int *member)
{
	int ok_names = user && group && !reserved_name(user) &&
		       !reserved_name(group);
	struct stripe *sp;
	int status;
	struct snap *s = ok_names ? enter_ix(c, &sp, &status) : NULL;
	if (s) {
		/* ST_IN_GROUP from the index: the group's gid (above the floor),
		 * then that gid in the user's list (the memberships rows). */
		struct ixq q = {.s = s, .min_id = c->min_id};
		int r = ix_in_group(&q, user, group);
		ix_done(&q);
		leave(sp);
		if (q.damaged)
			return ix_damaged_at(c, s);
		*member = r;
		return SCIM_OK;
	}
	if (ok_names && status != SCIM_OK)
		return status;
	if ((status = begin(c)) != SCIM_OK)
		return status;
	int r = 0;
	if (ok_names && c->snap && c->snap->ix.ok) {
		struct ixq q = {.s = c->snap, .min_id = c->min_id};
		r = ix_in_group(&q, user, group);
		ix_done(&q);
		if (q.damaged)
			r = (ix_damaged(c), -1);
	} else if (user && group && !reserved_name(user) && !reserved_name(group)) {
		sqlite3_stmt *st = stmt(c, ST_IN_GROUP);
		sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, group, -1, SQLITE_STATIC);
		r = step(c, st);
	}
	if (r < 0)
		status = SCIM_UNAVAIL;
	else
		*member = r;
	end(c);
	return status;
}
