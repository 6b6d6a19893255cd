/*
 * passwd.c - getpwnam, getpwuid, the passwd walk and the active flag.
 */
#include "reader.h"

/* Copies the current row of an ST_PW_* statement into pw/buf. */
static int fill_pw(struct scim_cache *c, sqlite3_stmt *st, void *ent,
		   char *buf, size_t buflen, uint32_t *uid_out)
{
	struct passwd *pw = ent;
	uint32_t uid, gid;
	if (col_id(c, st, 1, &uid) || col_id(c, st, 2, &gid)) {
		mark_stale(c);
		return SCIM_UNAVAIL;
	}
	struct arena a = {buf, buflen, 0};
	char *name = arena_str(&a, col_text(st, 0));
	char *passwd = arena_str(&a, PW_PASSWD);
	char *gecos = arena_str(&a, col_text(st, 3));
	char *home = arena_str(&a, col_text(st, 4));
	char *shell = arena_str(&a, col_text(st, 5));
	if (!name || !passwd || !gecos || !home || !shell)
		return SCIM_ERANGE;
	pw->pw_name = name;
	pw->pw_passwd = passwd;
	pw->pw_uid = uid;
	pw->pw_gid = gid;
	pw->pw_gecos = gecos;
	pw->pw_dir = home;
	pw->pw_shell = shell;
	c->fill_len = a.used;
	if (uid_out)
		*uid_out = uid;
	return SCIM_OK;
}

int scim_getpwnam(struct scim_cache *c, const char *name, struct passwd *pw,
		  char *buf, size_t buflen)
{
	if (!name || !*name || reserved_name(name))
		return absent(c);
	return row_query(c, ST_PW_NAM, name, 0, fill_pw, pw, buf, buflen, NULL);
}

int scim_getpwuid(struct scim_cache *c, uid_t uid, struct passwd *pw,
		  char *buf, size_t buflen)
{
	if (reserved_id(c, uid))
		return absent(c);
	return row_query(c, ST_PW_UID, NULL, uid, fill_pw, pw, buf, buflen, NULL);
}

int scim_nextpw(struct scim_cache *c, int64_t *pos, struct passwd *pw,
		char *buf, size_t buflen)
{
	return walk(c, ST_PW_NEXT, fill_pw, pw, pos, buf, buflen);
}

int scim_user_active(struct scim_cache *c, const char *name, int *active)
{
	if (!name || reserved_name(name))
		return absent(c);
	/* The index's flag, with ST_ACTIVE's conditions: without the lock
	 * when it can, else locked; else SQL. */
	struct stripe *sp;
	int status;
	struct snap *s = enter_ix(c, &sp, &status);
	if (s) {
		struct ixq q = {.s = s, .min_id = c->min_id};
		status = ix_user_active(&q, name, active);
		ix_done(&q);
		leave(sp);
		return q.damaged ? ix_damaged_at(c, s) : status;
	}
	if (status != SCIM_OK || (status = begin(c)) != SCIM_OK)
		return status;
	if (c->snap && c->snap->ix.ok) {
		struct ixq q = {.s = c->snap, .min_id = c->min_id};
		status = ix_user_active(&q, name, active);
		ix_done(&q);
		if (q.damaged)
			status = ix_damaged(c);
		end(c);
		return status;
	}
	sqlite3_stmt *st = stmt(c, ST_ACTIVE);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if ((status = step_one(c, st)) == SCIM_OK)
		*active = sqlite3_column_int(st, 0) != 0;
	end(c);
	return status;
}
