/*
 * records.c - what only SQL answers: ssh keys, Slurm associations, meta.
 */
#include "reader.h"

/* SCIM_OK if user is in users, SCIM_NOTFOUND if not; called locked. */
static int user_exists(struct scim_cache *c, const char *user)
{
	sqlite3_stmt *st = stmt(c, ST_USER_EXISTS);
	sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
	int status = step_one(c, st);
	sqlite3_reset(st);
	return status;
}

/* --- ssh keys ---------------------------------------------------------- */

int scim_user_keys(struct scim_cache *c, const char *user, char *buf,
		   size_t buflen)
{
	if (!user || reserved_name(user))
		return absent(c);
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	status = user_exists(c, user);
	if (status == SCIM_OK) {
		sqlite3_stmt *st = stmt(c, ST_KEYS);
		sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
		size_t used = 0;
		int r;
		while ((r = step(c, st)) == 1) {
			const char *k = col_text(st, 0);
			size_t n = strlen(k);
			if (n + 1 > buflen - used) { /* key and '\n' */
				status = SCIM_ERANGE;
				break;
			}
			memcpy(buf + used, k, n);
			buf[used + n] = '\n';
			used += n + 1;
		}
		if (r < 0)
			status = SCIM_UNAVAIL;
		else if (status == SCIM_OK && used >= buflen)
			status = SCIM_ERANGE; /* no room for the NUL */
		else if (status == SCIM_OK)
			buf[used] = '\0';
	}
	end(c);
	return status;
}

/* --- slurm associations ------------------------------------------------ */

int scim_assoc_count(struct scim_cache *c, const char *user,
		     const char *account, int *count)
{
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	sqlite3_stmt *st = stmt(c, ST_ASSOC_COUNT);
	sqlite3_bind_text(st, 1, user ? user : "", -1, SQLITE_STATIC);
	if (account)
		sqlite3_bind_text(st, 2, account, -1, SQLITE_STATIC);
	/* count(*) has a row; none is a broken file */
	if (step_one(c, st) == SCIM_OK)
		*count = sqlite3_column_int(st, 0);
	else
		status = SCIM_UNAVAIL;
	end(c);
	return status;
}

int scim_next_assoc(struct scim_cache *c, const char *user, const char *after,
		    struct scim_assoc *a, char *buf, size_t buflen)
{
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	sqlite3_stmt *st = stmt(c, ST_ASSOC_NEXT);
	sqlite3_bind_text(st, 1, user ? user : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, after ? after : "", -1, SQLITE_STATIC);
	if ((status = step_one(c, st)) == SCIM_OK) {
		struct arena ar = {buf, buflen, 0};
		const char *account = arena_str(&ar, col_text(st, 0));
		const char *qos = arena_str(&ar, col_text(st, 1));
		const char *dq = arena_str(&ar, col_text(st, 2));
		if (!account || !qos || !dq) {
			status = SCIM_ERANGE;
		} else if (strcmp(account, after ? after : "") <= 0) {
			set_err(c, "%s: corrupt: keys out of order", c->path);
			mark_stale(c);
			status = SCIM_UNAVAIL;
		} else {
			a->account = account;
			a->qos = qos;
			a->default_qos = dq;
			a->is_default = sqlite3_column_int(st, 3) != 0;
			a->blocked = sqlite3_column_int(st, 4) != 0;
		}
	}
	end(c);
	return status;
}

/* --- meta -------------------------------------------------------------- */

int scim_meta(struct scim_cache *c, const char *key, char *buf, size_t buflen)
{
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	sqlite3_stmt *st = stmt(c, ST_META);
	sqlite3_bind_text(st, 1, key ? key : "", -1, SQLITE_STATIC);
	if ((status = step_one(c, st)) == SCIM_OK) {
		struct arena a = {buf, buflen, 0};
		if (!arena_str(&a, col_text(st, 0)))
			status = SCIM_ERANGE;
	}
	end(c);
	return status;
}
