/*
 * common.c - the reader's handles: reader.conf applied, the snapshot
 * opened, trusted, checked and mapped, replaced files noticed, the one
 * lock, and fork. Every lookup enters through begin() and leaves through
 * end(). (Why it all looks this way: reader.h.)
 */
#include "reader.h"

/* The one lock of the reader: every call that is not an index lookup
 * without it (see "Readers that do not serialise" below), the list of
 * handles, each handle's open, check and close, and so every SQLite call
 * of this copy of the reader. The
 * modules' SQLite is built without mutexes (SQLITE_THREADSAFE=0,
 * c/sqlite_private.c), which is correct only because no two threads are
 * ever inside it at once: two handles on two threads would otherwise
 * share its globals (the unix VFS's inode list, the PRNG). Per-handle
 * locks bought nothing: NSS, PAM and SPANK each use one handle. */
pthread_mutex_t reader_mu = PTHREAD_MUTEX_INITIALIZER;
static struct scim_cache *list_head; /* every handle, for fork_child */

static void fork_prepare(void)
{
	pthread_mutex_lock(&reader_mu);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&reader_mu);
}

/* The child has one thread; the lock it inherited was taken by
 * fork_prepare in the forking thread, so no SQLite call was half done.
 * Re-initialising (not unlocking) also clears any waiter state copied
 * from the parent. */
unsigned fork_gen; /* forks this process descends from (win_cold) */

static void fork_child(void)
{
	pthread_mutex_init(&reader_mu, NULL);
	/* (The stripes and each handle's pid are written below although a
	 * child that never looks up needs neither: writing only the stripes
	 * a lookup was cut off in, and taking the parent's pid at the next
	 * check, saved 3 of a bare child's 15 page faults, but a child's
	 * first lookup then took them itself, and more: 16-19 faults against
	 * 11-14, 44-72 us against 37-51, measured by hand on Dec 2. The pages
	 * written here are the ones that lookup writes.) */
	/* Every page of the mapping is a page fault again in the child (fork
	 * copies no page table entries of a shared file mapping): its first
	 * touches are read, not mapped (nssindex.c, win_cold). */
	__atomic_store_n(&fork_gen, fork_gen + 1, __ATOMIC_RELAXED);
	pid_t pid = list_head ? getpid() : 0;
	for (struct scim_cache *c = list_head; c; c = c->next) {
		/* Lock-free lookups of the parent's other threads were cut
		 * off mid-way: they hold nothing in the child, and a memo
		 * one of them was writing is forgotten. */
		for (int i = 0; i < STRIPES; i++) {
			struct stripe *sp = &c->stripes[i];
			sp->readers = 0;
			if (sp->busy && sp->memo) {
				sp->memo->id = -1;
				sp->memo->need = 0;
			}
			sp->busy = 0;
		}
		/* The parent's snapshot stays the child's: the same immutable
		 * file, mapped, its descriptor inherited, checked as the
		 * parent's was (the child's next check is the parent's next
		 * one, at most CHECK_INTERVAL_NS later). A child of a process
		 * that looked users up answers its first lookups from memory
		 * it already has: no stat, open, mmap or header read.
		 * SQLite's connection is not the child's to use (SQLite: no
		 * connection across fork): a handle that opened it reopens
		 * everything. */
		if (c->db || c->stale || !c->snap) {
			mark_stale(c);
			continue;
		}
		c->pid = pid;
	}
}

/* Registered when the object is loaded, not on first use: a
 * pthread_once that registers is not fork-safe. A child forked after the
 * registration but before the once was marked done re-runs it, registers
 * the handlers twice, and its own next fork then deadlocks taking
 * reader_mu twice. Priority 101 runs this before the NSS module's
 * constructor (102), whose handlers must run their prepare step first. */
__attribute__((constructor(101))) static void register_atfork(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void set_err(struct scim_cache *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
}

/* Frees the retired snapshots once no lock-free lookup can hold one:
 * every stripe read 0 after they were unpublished (a lookup that enters
 * later reads c->live, which no longer names them). Locked. */
static void reap(struct scim_cache *c)
{
	if (!c->retired)
		return;
	for (int i = 0; i < STRIPES; i++)
		if (__atomic_load_n(&c->stripes[i].readers, __ATOMIC_SEQ_CST))
			return; /* the next check tries again */
	while (c->retired) {
		struct snap *s = c->retired;
		c->retired = s->next;
		/* (A child forked while another thread was mapping may have
		 * base without map_res: that mapping is left alone.) */
		if (s->base && s->map_res)
			munmap(s->map_res, (size_t)s->size + MAP_ALIGN);
		if (s->fd >= 0)
			close(s->fd);
		free(s->ix.seen);
		free(s->ix.local_copy);
		free(s->win);
		free(s->spare);
		free(s);
	}
}

/* Lock-free lookups stop using the open snapshot (they take the lock
 * and reopen). Locked. */
void mark_stale(struct scim_cache *c)
{
	c->stale = 1;
	__atomic_store_n(&c->live, NULL, __ATOMIC_SEQ_CST);
}

void close_db(struct scim_cache *c)
{
	__atomic_store_n(&c->live, NULL, __ATOMIC_SEQ_CST);
	if (c->snap) {
		/* The snapshot owns the descriptor now (lock-free lookups
		 * may still pread through it): reap closes it. */
		c->snap->next = c->retired;
		c->retired = c->snap;
		c->snap = NULL;
		c->fd = -1;
	}
	reap(c);
	/* SQLite only if it was opened: its code is a page fault away in a
	 * process that never needed SQL (most of them). */
	if (c->db) {
		for (int i = 0; i < ST_COUNT; i++) {
			sqlite3_finalize(c->st[i]);
			c->st[i] = NULL;
		}
		sqlite3_close_v2(c->db);
		c->db = NULL;
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->sql_ok = 0;
	c->stale = 0;
	c->used = 0;
	c->memo_need = 0;
}

/* The identity of a snapshot file: device, inode, size and change time
 * (st_ctim, to the nanosecond). A node's mirror may rewrite a file that
 * left the path (its spare, syncd/mirror) and rename it back with new
 * bytes, possibly of the same size: a handle that held that inode and did
 * not look in between must not take it as unchanged, and the ctime moves
 * with every write and cannot be set back from user space. Not the
 * mtime, which syncd sets to its last contact with the source after a
 * poll; that utimes moves the ctime too, so a touch (or a chmod) now
 * costs a handle one reopen of the same file at its next check (the
 * header and index read again, no SQL: a few tens of microseconds, at
 * most once per poll). The handle keeps its inode open, so the inode
 * number cannot be reused under it. */
int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Refusals an admin must hear about (an untrusted file or reader.conf):
 * to syslog once per handle and reason, never once per call. */
static void log_refusal(struct scim_cache *c)
{
	if (strcmp(c->logged, c->err) == 0)
		return;
	snprintf(c->logged, sizeof(c->logged), "%s", c->err);
	syslog(LOG_AUTHPRIV | LOG_ERR, "scimbridge reader: %s", c->err);
}

/* 0 if st is owned by root and not group/world-writable. */
int root_only(const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH)) ? 0 : -1;
}

/* Whoever can write the snapshot, or replace it in its directory, picks
 * every answer of every process on the node, setuid ones included: the
 * file (sb, stat of the path) and the directory holding it must be
 * root-owned and not group/world-writable. A symlinked path is checked at
 * both ends (the link's directory and the target's). Checked when a file
 * is opened; a chmod of an open file is root's own doing. maybe_link 0:
 * the caller knows the path's last component is no symlink (its open
 * with O_NOFOLLOW succeeded), so no lstat is needed to find out. */
static int check_trust(struct scim_cache *c, const struct stat *sb,
		       int maybe_link)
{
	if (root_only(sb) != 0) {
		set_err(c, "%s: refused: owned by uid %u with mode %04o; the "
			"snapshot must be owned by root and not group or world "
			"writable", c->path, (unsigned)sb->st_uid,
			(unsigned)(sb->st_mode & 07777));
		return SCIM_UNAVAIL;
	}
	/* The names on the heap: two PATH_MAX buffers on the stack were two
	 * stack pages, each a page fault in a new process's first lookup. */
	char *real = NULL;
	const char *paths[2] = {c->path, NULL};
	struct stat lst;
	if (maybe_link && lstat(c->path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
		if (!(real = realpath(c->path, NULL))) {
			set_err(c, "%s: cannot resolve the link: %s", c->path,
				strerror(errno));
			return SCIM_UNAVAIL;
		}
		paths[1] = real;
	}
	int status = SCIM_OK;
	for (int i = 0; status == SCIM_OK && i < 2 && paths[i]; i++) {
		const char *slash = strrchr(paths[i], '/');
		size_t n = slash ? (size_t)(slash - paths[i]) : 0;
		char *dir = n ? strndup(paths[i], n) : strdup(slash ? "/" : ".");
		struct stat ds;
		if (!dir) {
			set_err(c, "out of memory");
			status = SCIM_UNAVAIL;
		} else if (stat(dir, &ds) != 0 || !S_ISDIR(ds.st_mode) ||
			   root_only(&ds) != 0) {
			set_err(c, "%s: refused: its directory %s is not owned "
				"by root or is group or world writable", c->path,
				dir);
			status = SCIM_UNAVAIL;
		}
		free(dir);
	}
	free(real);
	return status;
}

/* Checks the SQLite header of the open file (c->fd: the very file the
 * lookups read, even if the path was renamed over meanwhile) against its
 * size: a snapshot is complete only if the page count recorded in the
 * header (valid when the change counter matches version-valid-for, as
 * every SQLite since 3.7.0 writes it) times the page size is exactly the
 * file size. A truncated copy would otherwise answer the lookups that
 * happen to hit surviving pages and fail the others, half way through a
 * walk. h: the nh bytes read from the file's start. */
static int check_header(struct scim_cache *c, const unsigned char *h,
			ssize_t nh, uint32_t *app, uint32_t *version)
{
	int64_t size = c->size;
	if (size < 100 || nh < 100 || memcmp(h, "SQLite format 3", 16) != 0) {
		set_err(c, "%s: not an SQLite database", c->path);
		return SCIM_UNAVAIL;
	}
	uint32_t page = (uint32_t)h[16] << 8 | h[17];
	if (page == 1)
		page = 65536;
	uint32_t pages = be32(h + 28);
	if (page < 512 || (page & (page - 1)) || pages == 0 ||
	    be32(h + 24) != be32(h + 92)) {
		set_err(c, "%s: SQLite header without a valid database size",
			c->path);
		return SCIM_UNAVAIL;
	}
	if ((int64_t)page * pages != size) {
		set_err(c, "%s: truncated or extended: header says %" PRIu32
			" pages of %" PRIu32 " bytes, file has %lld bytes",
			c->path, pages, page, (long long)size);
		return SCIM_UNAVAIL;
	}
	*app = be32(h + 68); /* what PRAGMA application_id reads */
	*version = be32(h + 60); /* PRAGMA user_version: the schema version */
	return SCIM_OK;
}

/* Opens c->path: the file, its header checked, mapped, and its NSS index
 * found; SQLite itself is opened only when a call first needs SQL
 * (sql_ready). c records the identity of the file opened (fstat of the
 * descriptor, so a rename over the path in between cannot mix files). */
static int open_fd(struct scim_cache *c, int fd, const struct stat *fs);

int open_db(struct scim_cache *c)
{
	struct stat fs;
	int fd = open(c->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		set_err(c, "%s: cannot open: %s", c->path, strerror(errno));
		return SCIM_UNAVAIL;
	}
	if (fstat(fd, &fs) != 0 || !S_ISREG(fs.st_mode)) {
		set_err(c, "%s: not a regular file", c->path);
		close(fd);
		return SCIM_UNAVAIL;
	}
	return open_fd(c, fd, &fs);
}

/* open_db for fd, open on c->path, whose fstat is fs (a regular file):
 * the handle's from now on, closed on failure. */
static int open_fd(struct scim_cache *c, int fd, const struct stat *fs)
{
	c->fd = fd;
	c->size = fs->st_size;
	c->progress = 0;

	/* The header and page 2 (the index's start, ix_open) in one read:
	 * HEAD_READ covers both when pages are 4 KiB, as syncd writes them.
	 * On the heap: a stack page is a page fault in a first lookup. Whole
	 * pages: the snapshot keeps them for a memo's page buffer (spare). */
	uint32_t app = 0, version = 0;
	unsigned char *hdr = aligned_alloc(IX_OWN, HEAD_READ);
	if (!hdr) {
		set_err(c, "out of memory");
		close_db(c);
		return SCIM_UNAVAIL;
	}
	ssize_t nh = pread(c->fd, hdr, c->size < HEAD_READ ? (size_t)c->size :
			   HEAD_READ, 0);
	int status = check_header(c, hdr, nh, &app, &version);
	if (status == SCIM_OK && app != SCIM_APPLICATION_ID) {
		set_err(c, "%s: not a scimbridge snapshot (application_id %" PRIu32
			", want %d)", c->path, app, (int)SCIM_APPLICATION_ID);
		status = SCIM_UNAVAIL;
	}
	if (status == SCIM_OK && (version < SCIM_SCHEMA_VERSION_MIN ||
				  version > SCIM_SCHEMA_VERSION)) {
		set_err(c, "%s: snapshot schema version %" PRIu32 ", this reader "
			"understands %d to %d", c->path, version,
			SCIM_SCHEMA_VERSION_MIN, SCIM_SCHEMA_VERSION);
		status = SCIM_UNAVAIL;
	}
	if (status != SCIM_OK) {
		free(hdr);
		close_db(c);
		return status;
	}
	/* The whole file, read-only: immutable by the writer's rule (a new
	 * file is renamed over it, never changed in place). Too large (or
	 * refused): no index, SQL reads through its own mapping. */
	static uint64_t gens; /* snapshots opened by this process */
	/* On lines of its own: every lookup reads it, and a block a lookup
	 * writes (answer.c, memo_take) must not share a line with it. */
	struct snap *s = aligned_alloc(LINE, line_round(sizeof(*s)));
	if (s)
		memset(s, 0, sizeof(*s));
	if (!s) {
		free(hdr);
		set_err(c, "out of memory");
		close_db(c);
		return SCIM_UNAVAIL;
	}
	s->size = c->size;
	s->gen = __atomic_add_fetch(&gens, 1, __ATOMIC_RELAXED);
	s->root_gid = -2;
	s->fd = c->fd; /* the snapshot's from now on: closed when it is freed */
	c->snap = s;
	if (c->size <= IX_MAP_MAX) {
		/* Mapped only when a lookup reads a window in place (its
		 * fourth use: nssindex.c, snap_base): a short-lived process
		 * reads what it needs with pread and never maps the file. */
		s->mappable = 1;
		s->nwin = (uint32_t)(((uint64_t)c->size - 1) >> 16) + 1;
		/* calloc: 0 is WIN_NEW of fork_gen 0, and of any other
		 * (untouched pages of it cost nothing; a 2 GiB file has 32 KiB
		 * of them). */
		s->win = calloc(s->nwin, 1);
	}
	/* The NSS index answers passwd, group and initgroups lookups without
	 * SQL: no schema to parse, no statement to prepare. A file without
	 * one (older writers, hand-made fixtures) is read through SQL only. */
	ix_open(s, hdr, (size_t)nh);
	s->spare = hdr;
	if (s->ix.ok && s->ix.version != version) {
		set_err(c, "%s: snapshot schema_version %" PRIu32 ", this reader "
			"understands %d to %d (the file's header says %" PRIu32 ")",
			c->path, s->ix.version, SCIM_SCHEMA_VERSION_MIN,
			SCIM_SCHEMA_VERSION, version);
		close_db(c);
		return SCIM_UNAVAIL;
	}
	c->root_gid = -2; /* read when first needed (scim_user_groups) */
	/* The pid only matters once SQLite is open (sql_open records it) or
	 * at the next check (which does): getpid() is a system call, and
	 * this is a new process's first lookup. 0: not recorded yet. */
	c->pid = 0;
	c->id = *fs;
	c->err[0] = '\0';
	return SCIM_OK;
}

/* The checks every snapshot file passes before it is opened or read:
 * a regular, non-empty file that check_trust accepts (a refusal is
 * logged). Shared by open_first (on the opened descriptor's fstat) and
 * ensure_open (on the path's). Locked. */
static int check_file(struct scim_cache *c, const struct stat *sb, int maybe_link)
{
	if (!S_ISREG(sb->st_mode)) {
		set_err(c, "%s: not a regular file", c->path);
		return SCIM_UNAVAIL;
	}
	if (sb->st_size == 0) {
		set_err(c, "%s: empty file", c->path);
		return SCIM_UNAVAIL;
	}
	int status = check_trust(c, sb, maybe_link);
	if (status != SCIM_OK)
		log_refusal(c);
	return status;
}

/* The first open of a handle's file, in the fewest system calls (a new
 * process's first lookup pays each, issue 22): open with O_NOFOLLOW, and
 * every check on the descriptor's fstat (the very file opened: no window
 * between a stat of the path and the open, as stat-then-open had), then
 * the directory's trust. O_NONBLOCK: a FIFO put at the path does not
 * hang the open (it is then refused as not a regular file). OPEN_LINK:
 * the path's last component is a symlink, which ensure_open's general
 * way opens (both ends of the link checked). Locked. */
enum { OPEN_LINK = 100 }; /* open_first: not a SCIM_* status */

static int open_first(struct scim_cache *c, int64_t now)
{
	struct stat sb;
	int have_sb = 0;
	int fd = open(c->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
		      O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ELOOP)
			return OPEN_LINK;
		set_err(c, "%s: %s", c->path, strerror(errno));
		return SCIM_UNAVAIL;
	}
	int status;
	if (fstat(fd, &sb) != 0) {
		set_err(c, "%s: %s", c->path, strerror(errno));
		status = SCIM_UNAVAIL;
	} else {
		have_sb = 1;
		status = check_file(c, &sb, 0);
		if (status == SCIM_OK) {
			status = open_fd(c, fd, &sb); /* closes fd if it fails */
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	if (status == SCIM_OK) {
		c->mtime = sb.st_mtim;
		c->has_bad = 0;
	} else if (have_sb) {
		/* Remembered as ensure_open remembers a file that failed. */
		c->bad = sb;
		c->bad_at = now;
		c->has_bad = 1;
	}
	return status;
}

/* Records a check of the open snapshot at now, and lets lock-free
 * lookups read its index until CHECK_INTERVAL_NS later. Locked. */
static void publish(struct scim_cache *c, int64_t now)
{
	__atomic_store_n(&c->checked, now, __ATOMIC_RELAXED);
	if (c->snap && c->snap->ix.ok && !c->stale)
		__atomic_store_n(&c->live, c->snap, __ATOMIC_SEQ_CST);
}

/* Makes c->db current: opens it the first time, after fork, after an
 * SQLite error, and when the path now names a different file. The path
 * is stat()ed (immutable=1 means SQLite itself never looks) when force is
 * set or CHECK_INTERVAL_NS has passed since the last check; between
 * checks an open, healthy handle is used as is. */
int ensure_open(struct scim_cache *c, int force)
{
	struct stat sb;
	c->progress = 0;
	if (c->conf_err[0]) {
		set_err(c, "%s", c->conf_err);
		log_refusal(c);
		return SCIM_UNAVAIL;
	}
	int64_t now = coarse_now();
	int64_t checked = __atomic_load_n(&c->checked, __ATOMIC_RELAXED);
	if (!force && c->fd >= 0 && !c->stale && now >= 0 && checked >= 0 &&
	    now - checked < CHECK_INTERVAL_NS && now >= checked)
		return SCIM_OK;
	reap(c);
	if (c->fd < 0 && !c->has_bad) {
		close_db(c);
		int status = open_first(c, now);
		if (status != OPEN_LINK) {
			if (status == SCIM_OK)
				publish(c, now);
			return status;
		}
	}
	if (stat(c->path, &sb) != 0) {
		set_err(c, "%s: %s", c->path, strerror(errno));
		close_db(c);
		return SCIM_UNAVAIL;
	}
	pid_t me = c->fd >= 0 && !c->stale ? getpid() : 0;
	if (me && !c->pid && !c->db)
		c->pid = me; /* opened by this process (open_fd) */
	if (me && c->pid == me && same_file(&sb, &c->id)) {
		publish(c, now);
		c->mtime = sb.st_mtim;
		return SCIM_OK;
	}
	close_db(c);
	/* The file that failed last time, unchanged (not even chmod'ed) and
	 * within the interval: the same answer without SQLite's open and
	 * the header and schema checks (20-80 us), which every NSS miss in
	 * files (ls -l, ps) would otherwise pay. c->err still says why. A
	 * new file at the path is opened at once. */
	if (!force && c->has_bad && same_file(&sb, &c->bad) && now >= 0 &&
	    now >= c->bad_at && now - c->bad_at < CHECK_INTERVAL_NS)
		return SCIM_UNAVAIL;
	int status = check_file(c, &sb, 1);
	if (status == SCIM_OK)
		status = open_db(c);
	if (status == SCIM_OK) {
		publish(c, now);
		c->mtime = sb.st_mtim;
		c->has_bad = 0;
	} else {
		c->bad = sb;
		c->bad_at = now;
		c->has_bad = 1;
	}
	return status;
}

/* Locks c and makes the snapshot current (checking the file if force);
 * on SCIM_OK the caller must call end(). */
static int begin_check(struct scim_cache *c, int force)
{
	if (!c)
		return SCIM_UNAVAIL;
	pthread_mutex_lock(&reader_mu);
	int status = ensure_open(c, force);
	if (status != SCIM_OK)
		pthread_mutex_unlock(&reader_mu);
	return status;
}

int begin(struct scim_cache *c)
{
	return begin_check(c, 0);
}

/* --- Readers that do not serialise ---------------------------------------
 *
 * passwd, group and initgroups lookups answered from the NSS index (the
 * common path) take no lock: the index is read from an immutable mapping,
 * and nothing of the handle is written. reader_mu made two threads 3-5x
 * slower than one (issue 22); SQL keeps it (its SQLite has no mutexes).
 *
 * c->live names the open snapshot (struct snap: mapping and index) while
 * it may be read so: published by ensure_open after a successful open or
 * check, for CHECK_INTERVAL_NS (c->checked), and withdrawn (NULL) by
 * close_db, mark_stale and fork_child, always under reader_mu. A lookup
 * counts itself in the stripe of its CPU (sched_getcpu: one cache line
 * per stripe, so threads on different CPUs touch no common line), then
 * reads c->live; close_db withdraws c->live, then frees the old snapshot
 * only when it has read every stripe as 0 (reap), else keeps it retired
 * and tries again at the next check. Both sides use sequentially
 * consistent operations, so either the lookup reads the withdrawal (and
 * takes the lock) or reap reads its count (and waits): a mapping is never
 * unmapped under a reader, and a replaced file is never half-read (each
 * lookup reads one snapshot from start to end).
 *
 * fork: the child has only the forking thread, which is in no lookup;
 * lookups cut off in other threads hold nothing there, so fork_child
 * zeroes the stripes (and forgets the memos they were writing). The
 * parent's snapshot, mapping and descriptor stay the child's (the same
 * immutable file, checked when the parent's next check was due): its
 * first lookups read them without a syscall. A handle that had SQLite
 * open is marked stale instead (SQLite connections do not cross fork):
 * the child's next call takes the lock, reopens and frees the parent's
 * snapshots. A child made without the atfork handlers keeps reading the
 * parent's mapping, which stays valid (MAP_SHARED of an immutable file),
 * until the next check finds the new pid and reopens.
 *
 * Measured (make bench's threads table, Dec 2, 2-vCPU VM shared with
 * other jobs): nothing a lookup writes is shared between CPUs (the
 * stripe and its memo are the CPU's own lines; window counts, seen
 * bits and root_gid are written only until set; the handle and struct
 * snap only read). Earlier runs' 1.3-1.65x for 2 threads, with 90-300
 * ns more CPU per lookup, included the bench's own false sharing (two
 * threads' per-call counters on one line of its stack, now fixed): at
 * load 2.4 the next run gave 2.10x / 2.02x (project / private shape)
 * with CPU ns per lookup flat (596/570, 522/527), the module called
 * directly 2.12x / 1.81x. At load 2.5-4.7 the same code gave 1.46x and
 * 0.79x, while a loop of the same page reads that shares nothing kept
 * 1.96x (0.85x when the machine had no second CPU free), and at load 3 a
 * short run gave 1.28x through glibc (CPU ns 405 -> 629) against 2.14x
 * for the module called directly in the same process (337 -> 312):
 * explained below. A standalone program (glibc's getpwuid_r after
 * __nss_configure_lookup, and the entry point directly, in scim_ns) kept
 * CPU ns per lookup flat on both paths in every run, with its wall-clock
 * ratio following the other jobs' load (1.05-2.05x); strace shows no
 * system call in the steady state but the cold windows' preads.
 * The VM has no PMU (perf: cycles "not supported"): perf stat and c2c
 * cannot show where the cycles go.
 *
 * Where two threads lose through glibc (Dec 2, 13:00-13:30 UTC): one
 * store in glibc 2.36's dispatch, before any module is called.
 * getpwuid_r finds its module with __nss_passwd_lookup2
 * (nss/XXX-lookup.c), which hands libc's process-wide
 * __nss_passwd_database (.bss, beside the other __nss_*_database
 * pointers) to __nss_database_get as the place to store the action list
 * (objdump -d of libc.so.6 at __nss_passwd_lookup2, its symbols from
 * libc6-dbg): every lookup of every thread writes that cache line, the
 * same value each time, and two threads on two CPUs pass it back and
 * forth. Same process, the lookup threads at real-time priority so that
 * two did run at once (load average 17), CPU ns per lookup, 1 -> 2
 * threads:
 *   scim called directly                                  253 -> 229
 *   glibc's two steps, action list into the thread's own  289 -> 253
 *   __nss_passwd_lookup2 (the store), then the module     272 -> 385
 *   getpwuid_r                                            293 -> 405
 *   called directly plus one store to a shared word       253 -> 363
 * and with a module that answers at once (tests/bench/nss_null.c), in
 * the same order: 5 -> 4, 19 -> 19, 20 -> 49, 53 -> 93, 3 -> 11. No module
 * scales through glibc 2.36 on this machine, and nothing a site sets
 * changes the path (no glibc.nss tunable in 2.36; the store is
 * unconditional). glibc removed the variable after 2.42 (commit
 * cdb0e9dc70, "nss: Remove effectively unused __nss_*_database
 * variables"). make bench's Threads table has these rows (a module that
 * answers at once; glibc's two steps with and without the store;
 * BENCH_THREADS_RT=1 on a busy machine). Its run at 14:05 (project
 * shape, BENCH_THREADS_RT=1 BENCH_SSSD=0 BENCH_ITERS=2000, load 6-10),
 * CPU ns per lookup 1 -> 2 threads and the 2-thread ratio: scim through
 * glibc 274 -> 358 (1.53x), called directly 242 -> 190 (2.41x), glibc's
 * steps without the store 270 -> 216 (2.31x), with it 261 -> 342
 * (1.53x); the module that answers at once through glibc 34 -> 80
 * (0.80x), directly 15 -> 13 (2.46x), steps without the store 30 -> 25
 * (2.45x), with it 29 -> 72 (0.81x); the machine alone 2.15x. Private
 * shape, same run: scim through glibc 1.52x, directly 2.64x, steps
 * without the store 2.43x, with it 1.51x; the module that answers at
 * once 0.78x through glibc, 2.28x without the store, 0.80x with it.
 *
 * The bench picks the service with __nss_configure_lookup, which turns
 * glibc's reload check and nscd attempts off. A plain program pays more,
 * for every module alike: each call stats /etc/nsswitch.conf and takes
 * the NSS lock (nss_database.c), and with no nscd adds one to
 * __nss_not_use_nscd_passwd and tries nscd's socket every 100th call
 * (strace of 1,000 getpwuid_r: 1,021 stats, 11 socket + connect). With
 * the module that answers at once that is 2.0 µs CPU per getpwuid_r
 * (a stat alone 1.6 µs, getppid 1.1 µs, load 8) against 0.05 µs after
 * __nss_configure_lookup: on this VM a plain program's lookup is mostly
 * glibc's stat (the bench's "plain program" table). */

/* The published snapshot of c, held (counted in *st) until leave(*st):
 * NULL when the call must take the lock. */
static struct snap *enter(struct scim_cache *c, struct stripe **st)
{
	int64_t now = coarse_now();
	int64_t checked = __atomic_load_n(&c->checked, __ATOMIC_RELAXED);
	if (now < 0 || checked < 0 || now < checked ||
	    now - checked >= CHECK_INTERVAL_NS)
		return NULL;
	int cpu = sched_getcpu();
	struct stripe *sp = &c->stripes[(unsigned)(cpu < 0 ? 0 : cpu) % STRIPES];
	__atomic_fetch_add(&sp->readers, 1, __ATOMIC_SEQ_CST);
	struct snap *s = __atomic_load_n(&c->live, __ATOMIC_SEQ_CST);
	if (!s) {
		__atomic_fetch_sub(&sp->readers, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	*st = sp;
	return s;
}

void leave(struct stripe *st)
{
	__atomic_fetch_sub(&st->readers, 1, __ATOMIC_RELEASE);
}

/* The snapshot whose index a call reads without the lock (enter), after
 * the periodic check (under the lock) when it is due. NULL with *status
 * SCIM_OK: take the locked path (no index, or no clock); NULL with
 * another status: that is the answer (no usable snapshot). */
struct snap *enter_ix(struct scim_cache *c, struct stripe **st, int *status)
{
	*status = SCIM_OK;
	if (!c) {
		*status = SCIM_UNAVAIL;
		return NULL;
	}
	struct snap *s = enter(c, st);
	if (s)
		return s;
	pthread_mutex_lock(&reader_mu);
	*status = ensure_open(c, 0);
	pthread_mutex_unlock(&reader_mu);
	return *status == SCIM_OK ? enter(c, st) : NULL;
}

/* A damaged index: the file is treated like one that failed to open.
 * Locked. */
int ix_damaged(struct scim_cache *c)
{
	set_err(c, "%s: corrupt: the NSS index does not read back", c->path);
	mark_stale(c);
	c->bad = c->id;
	c->bad_at = coarse_now();
	c->has_bad = 1;
	return SCIM_UNAVAIL;
}

/* ix_damaged for snapshot s read without the lock: the handle is marked
 * only if s is still its snapshot (a replaced one is already retired). */
int ix_damaged_at(struct scim_cache *c, struct snap *s)
{
	pthread_mutex_lock(&reader_mu);
	if (c->snap == s)
		ix_damaged(c);
	pthread_mutex_unlock(&reader_mu);
	return SCIM_UNAVAIL;
}

/* Resets the statements this call used (resetting all of them was a
 * sixth of a hot lookup) and unlocks. Clearing the bindings drops the
 * pointers to the caller's strings. */
void end(struct scim_cache *c)
{
	for (int i = 0; c->used && i < ST_COUNT; i++)
		if (c->used & (1u << i) && c->st[i]) {
			sqlite3_reset(c->st[i]);
			sqlite3_clear_bindings(c->st[i]);
		}
	c->used = 0;
	pthread_mutex_unlock(&reader_mu);
}

/* The answer for a key no snapshot may hold (an empty name, root's name
 * or ids): SCIM_NOTFOUND, but SCIM_UNAVAIL when the snapshot is unusable,
 * as for any other key, so that NSS goes on to the next source even under
 * [NOTFOUND=return]. */
int absent(struct scim_cache *c)
{
	int status = begin(c);
	if (status != SCIM_OK)
		return status;
	/* A file read through SQL is usable only once its tables and
	 * schema_version passed (sql_ready): until then, not NOTFOUND. */
	if (!(c->snap && c->snap->ix.ok) && sql_ready(c) != SCIM_OK)
		status = SCIM_UNAVAIL;
	end(c);
	return status == SCIM_OK ? SCIM_NOTFOUND : status;
}

/* dst = a then b, cut to size (no snprintf: see read_conf). */
static void cat2(char *dst, size_t size, const char *a, const char *b)
{
	size_t n = 0;
	for (const char *s = a; *s && n + 1 < size; s++)
		dst[n++] = *s;
	for (const char *s = b; *s && n + 1 < size; s++)
		dst[n++] = *s;
	dst[n] = '\0';
}

struct scim_cache *scim_cache_new(const char *path)
{
	/* reader.conf's parse on the heap, not in a 4 KiB stack frame (a
	 * new stack page is a page fault in the first lookup). */
	struct reader_conf *rc = malloc(sizeof(*rc));
	struct scim_cache *c = rc ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		free(rc);
		return NULL;
	}
	read_conf(rc);
	c->path = strdup(path ? path : rc->path);
	if (!c->path) {
		free(rc);
		free(c);
		return NULL;
	}
	c->min_id = rc->min_id;
	cat2(c->conf_err, sizeof(c->conf_err), rc->err, "");
	free(rc);
	c->memo.id = -1;
	c->fd = -1;
	c->stripes = aligned_alloc(64, STRIPES * sizeof(*c->stripes));
	if (!c->stripes) {
		free(c->path);
		free(c);
		return NULL;
	}
	memset(c->stripes, 0, STRIPES * sizeof(*c->stripes));
	cat2(c->err, sizeof(c->err), c->path, ": not opened yet");
	pthread_mutex_lock(&reader_mu);
	c->next = list_head;
	list_head = c;
	pthread_mutex_unlock(&reader_mu);
	return c;
}

void scim_cache_free(struct scim_cache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&reader_mu);
	for (struct scim_cache **p = &list_head; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	close_db(c);
	pthread_mutex_unlock(&reader_mu);
	reap(c); /* the caller's lookups are over: every stripe is 0 */
	for (int i = 0; i < STRIPES; i++)
		if (c->stripes[i].memo) {
			free(c->stripes[i].memo->blob);
			free(c->stripes[i].memo);
		}
	free(c->stripes);
	free(c->memo.blob);
	free(c->path);
	free(c);
}

int scim_cache_check(struct scim_cache *c)
{
	int status = begin_check(c, 1);
	if (status != SCIM_OK)
		return status;
	for (int i = 0; status == SCIM_OK && i < ST_COUNT; i++)
		status = prepare(c, (enum stmt_id)i);
	if (status == SCIM_OK)
		status = ix_check_all(c);
	end(c);
	return status;
}

int scim_cache_indexed(struct scim_cache *c)
{
	if (begin(c) != SCIM_OK)
		return 0;
	int ok = c->snap && c->snap->ix.ok;
	end(c);
	return ok;
}

const char *scim_cache_error(struct scim_cache *c)
{
	return c ? c->err : "no cache handle";
}

int scim_cache_mtime(struct scim_cache *c, struct timespec *mtime)
{
	int status = begin_check(c, 1);
	if (status != SCIM_OK)
		return status;
	*mtime = c->mtime;
	end(c);
	return SCIM_OK;
}
