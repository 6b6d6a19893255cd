/*
 * nssindex.c - the NSS index: passwd, group and initgroups answered from
 * hash buckets in the mapped snapshot, without SQL.
 */
#include "reader.h"

/* --- the NSS index --------------------------------------------------------
 *
 * passwd, group and initgroups by name and id without SQL: hash-bucketed
 * records in one blob (layout: syncd/snapshot/index.go), each bucket one
 * chunk of the blob that the writer places in one overflow page, read in
 * place from the file's mapping. SQLite would parse the schema (most of a
 * process's first lookup) and descend two or three B-tree levels per call
 * (most of a warm one). Every answer passes the same floor as SQL's
 * (ID_OK, the name root); a damaged index is SCIM_UNAVAIL, like any
 * damaged file. */

#define IX_MAGIC "SCIMNSS2"
#define IX_HEADER 72
#define IX_HEADER3 80 /* schema version 3: a fifth partition, member pieces */
#define IX_PIECED 0x80000000u /* a group record's members length: pieced */
#define IX_FLAG_USABLE 1u
#define IX_USER_FIXED 24
#define IX_GROUP_FIXED 12

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* The index's hash (syncd/snapshot/index.go has the same): keyed by the
 * blob's seed, 8 bytes at a time, little-endian. */
static uint64_t ix_hash(uint64_t seed, const unsigned char *p, size_t n)
{
	uint64_t h = seed ^ ((uint64_t)n * 0x9E3779B97F4A7C15ULL);
	for (; n >= 8; p += 8, n -= 8) {
		h = (h ^ le64(p)) * 0xBF58476D1CE4E5B9ULL;
		h ^= h >> 31;
	}
	uint64_t w = 0;
	for (size_t i = n; i > 0; i--)
		w = w << 8 | p[i - 1];
	h = (h ^ w) * 0x94D049BB133111EBULL;
	h ^= h >> 29;
	h *= 0xBF58476D1CE4E5B9ULL;
	h ^= h >> 32;
	return h;
}

static uint64_t ix_hash_id(uint64_t seed, uint32_t id)
{
	unsigned char b[4] = {(unsigned char)id, (unsigned char)(id >> 8),
			      (unsigned char)(id >> 16),
			      (unsigned char)(id >> 24)};
	return ix_hash(seed, b, 4);
}

/* An SQLite varint at p, not past end: bytes used, 0 if malformed. */
static int varint(const unsigned char *p, const unsigned char *end,
		  uint64_t *v)
{
	uint64_t x = 0;
	for (int i = 0; i < 9; i++) {
		if (p + i >= end)
			return 0;
		if (i == 8) {
			*v = x << 8 | p[i];
			return 9;
		}
		x = x << 7 | (p[i] & 0x7f);
		if (!(p[i] & 0x80)) {
			*v = x;
			return i + 1;
		}
	}
	return 0;
}

/* Overflow page index and offset in it of blob byte q past the local
 * part: q / chunk by a multiply (exact for q < 2^32 and chunk < 2^16:
 * the error is below 2^-16), as every lookup makes several. */
static inline uint32_t ix_page_of(const struct nss_index *x, uint32_t q,
				  uint32_t *off)
{
#ifdef __SIZEOF_INT128__
	uint32_t i = (uint32_t)(((unsigned __int128)q * x->cmul) >> 48);
#else
	uint32_t i = q / x->chunk; /* 32-bit targets: no 128-bit multiply */
#endif
	*off = q - i * x->chunk;
	return i;
}

/* --- first touches read, later ones map ----------------------------------
 *
 * A page of the mapping read for the first time is a page fault: the
 * kernel maps the 16 pages around it (fault-around, 64 KiB), which cost
 * 4-12 us on the bench machine (a VM), against 1.5-2 us for pread() of the
 * one page. A new process's first lookups, and the random lookups of a
 * short-lived one, touch a new 64 KiB window nearly every time: a window's
 * first uses (WIN_MAPPED - 1 of them) are read with pread() into memory of the
 * call's own, the next one maps it (the window is wanted again and again:
 * this process keeps looking up), and from then on it is read in place.
 * Mapping at the second use made a second touch, and so a fault, of one
 * random lookup in four among a new process's first hundred (100,000
 * users: the by-name buckets span about 150 windows); a long-lived
 * process pays WIN_MAPPED - 1 preads per window (a few ms in all).
 * Neither way is free in a new process: on the bench machine (a
 * Firecracker VM, 6.18 kernel, the SRSO "safe RET" mitigation; measured
 * by hand, Dec 2, at load 3-5, fresh processes) pread of a 4 KiB page
 * took 1.7 us p50 / 2.2 p90, of 64 bytes 1.3 / 1.8 (the system call, not
 * the copy), a fault 4.3-5.4 us, and MADV_POPULATE_READ of the 8 MB of
 * by-name buckets (100,000 users) 1.1-1.3 ms up front (0.4 us per
 * lookup after it): a new program's first hundred random lookups cannot
 * reach 2 us at p90 by either, and populating pays only after 800-1,000
 * lookups, so it is not done. Reading less than the bucket's page saves
 * nothing (a record is anywhere in it: a second, smaller pread costs
 * more than the copy). `make bench` reports the pread alone beside the
 * fresh-program rows (tests/bench/nss_bench.c, fresh_pread), and a
 * system call that does nothing (getppid), preads and page faults per
 * lookup.
 * Where a fresh program's random lookup goes (measured Dec 2, load 5-9,
 * 21 exec'd programs x 100 random getpwnam_r, 100,000 users; rdtsc
 * marks in a scratch build, pread and mmap counted by interposing):
 * 2046 of 2100 lookups make exactly one pread and no page fault (26 two:
 * a record in another page; 28 none and 40 a fault: a window read in
 * place from its fourth use; 20 two faults: each program's second
 * lookup, now none, answer.c memo_page). Of such a lookup (2.98 us p50,
 * 4.42 p90) the pread is 2.36 p50 / 3.42 p90, as the pread alone (2.46
 * / 3.42 in the same programs); glibc's dispatch before and after the
 * module 0.19, the module before the pread 0.10, after it (bucket scan,
 * record, fill) 0.22, memo and return 0.06. The VM runs with page table
 * isolation and no PCID (cpuinfo: pti, no pcid): every system call
 * switches page tables and empties the TLB, so getppid alone costs 1.00
 * us p50 / 1.12 p90, and a warm in-place lookup (0.16 us) becomes 0.29
 * after one (its pages' TLB entries refilled). Reading less does not
 * pay: 512 bytes 2.09 / 2.81 us against 4 KiB 2.46 / 3.42, and the
 * record's place is known only after the bucket's head is read (two
 * reads). Mapping instead is dearer here still: touching a cold page
 * 22 / 34 us, MADV_POPULATE_READ of one page 23 / 80 (load 9). So a
 * random lookup in a new program costs one kernel entry plus about 0.6
 * us of work with an empty TLB: its p90 is the pread's p90 plus 0.7-1.5
 * us (make bench, both shapes, 8 runs at load 3-13: 3.32-4.90 us against
 * the pread alone's 2.65-3.85), and 2 us is out of reach on this
 * machine for any reader that enters the kernel per lookup (hosts with
 * PCID, or without PTI, keep the TLB across a system call: not measured
 * here). Laying the lookup path's functions out together (hot section:
 * 3 code pages instead of 7) gave 2.69 against 2.72 us per-program p50,
 * 3.18 against 3.21 p90 (84 programs each, alternating): not kept.
 * Each window's count is one byte in s->win, set atomically (two threads
 * deciding at once only read a page once more). A forked child starts
 * over: its page tables hold none of the parent's file pages. Each count
 * is tagged with the fork_gen it was made in (the byte's bits above
 * WIN_BITS), and a count of another generation reads as WIN_NEW: the
 * child writes only the bytes of the windows it reads, not the whole
 * array (each page of it written is a copy-on-write fault in the child,
 * and 4-5 us on the bench machine; a 2 GiB file has 8 pages of them).
 * A tag repeats every 32 generations of forks: a count read then from a
 * generation 32 back only maps a window sooner. */
#define WIN_SHIFT 16

/* 1 if the len bytes at file offset off are best read with pread (some
 * window of them read fewer than WIN_MAPPED times: now counted), 0 to map
 * (now marked mapped). */
static int win_cold(struct snap *s, int64_t off, uint32_t len)
{
	if (!s->win)
		return 0;
	unsigned char tag = (unsigned char)(__atomic_load_n(&fork_gen,
							     __ATOMIC_RELAXED)
					    << WIN_BITS);
	uint32_t lo = (uint32_t)((uint64_t)off >> WIN_SHIFT);
	uint32_t hi = (uint32_t)(((uint64_t)off + len - 1) >> WIN_SHIFT);
	unsigned char least = WIN_MAPPED;
	for (uint32_t w = lo; w <= hi && w < s->nwin; w++) {
		unsigned char v = __atomic_load_n(&s->win[w], __ATOMIC_RELAXED);
		unsigned char n = (unsigned char)(v ^ tag) < (1u << WIN_BITS)
					  ? (unsigned char)(v ^ tag) : WIN_NEW;
		if (n < least)
			least = n;
	}
	if (least == WIN_MAPPED)
		return 0;
	for (uint32_t w = lo; w <= hi && w < s->nwin; w++)
		__atomic_store_n(&s->win[w], (unsigned char)(tag | (least + 1)),
				 __ATOMIC_RELAXED);
	return least + 1 < WIN_MAPPED;
}

/* s's mapping, made by the first call that reads the file in place
 * (none before: a short-lived process reads its few pages with pread and
 * never maps). 64 KiB-aligned inside a reservation, so each window of
 * the file is one fault-around block. Lookups run concurrently: two
 * threads mapping at once each map, and the one that publishes second
 * unmaps its own. NULL if the file cannot be mapped. */
static const unsigned char *snap_base(struct snap *s)
{
	const unsigned char *b = __atomic_load_n(&s->base, __ATOMIC_ACQUIRE);
	if (b || !s->mappable)
		return b;
	size_t len = (size_t)s->size + MAP_ALIGN;
	void *res = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
			 MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return NULL;
	unsigned char *at = (unsigned char *)(((uintptr_t)res + MAP_ALIGN - 1) &
					      ~(uintptr_t)(MAP_ALIGN - 1));
	if (mmap(at, (size_t)s->size, PROT_READ, MAP_SHARED | MAP_FIXED, s->fd,
		 0) == MAP_FAILED) {
		munmap(res, len);
		return NULL;
	}
	const unsigned char *none = NULL;
	if (!__atomic_compare_exchange_n(&s->base, &none, at, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		munmap(res, len);
		return none;
	}
	/* Read only by reap, which runs when no lookup (this one) holds s. */
	s->map_res = res;
	return at;
}

void ix_done(struct ixq *q)
{
	for (int k = 0; k < q->npb; k++)
		if (q->pb[k] != q->own)
			free(q->pb[k]);
	q->npb = 0;
}

/* Overflow page i of the blob (its bytes after the link): NULL if it is
 * past the blob or does not link to the next page as the writer lays them
 * out (checked once per page and open). From memory of q's own when the
 * page's window is cold (win_cold; at most IXQ_PAGES pages per call, and
 * a page read so stays where it is until ix_done), else in place. */
static const unsigned char *ix_page(struct ixq *q, uint32_t i)
{
	struct nss_index *x = &q->s->ix;
	if (i >= x->npages)
		return NULL;
	for (int k = 0; k < q->npb; k++)
		if (q->pi[k] == i)
			return q->pb[k] + 4;
	int64_t off = (int64_t)(x->first + i - 1) * x->page;
	const unsigned char *pg = NULL;
	/* A window this call already read a page of is still cold for the
	 * rest of the call (a record across two pages is not a fault). */
	uint32_t w = (uint32_t)((uint64_t)off >> WIN_SHIFT);
	int mine = 0;
	for (int k = 0; k < q->npb; k++)
		mine |= q->pw[k] == w;
	const unsigned char *base = NULL;
	/* A file that cannot be mapped (out of address space) is read, as a
	 * cold window is, while this call has room for the page. */
	if ((q->npb < IXQ_PAGES && q->s->fd >= 0 &&
	     (mine || win_cold(q->s, off, x->page))) ||
	    (!(base = snap_base(q->s)) && q->npb < IXQ_PAGES && q->s->fd >= 0)) {
		/* The page lent by the caller (ix_query), once a call. */
		int lent = q->own && !q->own_used && x->page <= IX_OWN;
		unsigned char *b = lent ? q->own : malloc(x->page);
		q->own_used |= lent;
		if (b && pread(q->s->fd, b, x->page, off) == (ssize_t)x->page) {
			q->pb[q->npb] = b;
			q->pw[q->npb] = w;
			q->pi[q->npb++] = i;
			pg = b;
		} else if (!lent) {
			free(b);
		}
	}
	if (!pg && !base)
		base = snap_base(q->s);
	if (!pg && base)
		pg = base + off;
	if (!pg)
		return NULL;
	unsigned char bit = (unsigned char)(1u << (i & 7));
	/* Lookups run concurrently (common.c): the bits are set atomically,
	 * and a page checked twice at once is only checked twice. */
	if (!(__atomic_load_n(&x->seen[i >> 3], __ATOMIC_RELAXED) & bit)) {
		uint32_t next = i + 1 < x->npages ? x->first + i + 1 : 0;
		if (be32(pg) != next)
			return NULL;
		__atomic_fetch_or(&x->seen[i >> 3], bit, __ATOMIC_RELAXED);
	}
	return pg + 4;
}

/* Copies n bytes of the blob at offset at into dst: -1 if they are not
 * all inside it, or if an overflow page read is not linked to the next
 * one as the writer lays them out (checked once per page and open). */
static int ix_read(struct ixq *q, uint32_t at, void *dst, uint32_t n)
{
	struct nss_index *x = &q->s->ix;
	unsigned char *d = dst;
	if (at > x->len || n > x->len - at)
		return -1;
	if (at < x->local) {
		uint32_t k = x->local - at < n ? x->local - at : n;
		memcpy(d, x->local_copy + at, k);
		d += k;
		at += k;
		n -= k;
	}
	while (n > 0) {
		uint32_t off, i = ix_page_of(x, at - x->local, &off);
		const unsigned char *pg = ix_page(q, i);
		if (!pg)
			return -1;
		uint32_t k = x->chunk - off < n ? x->chunk - off : n;
		memcpy(d, pg + off, k);
		d += k;
		at += k;
		n -= k;
	}
	return 0;
}

/* The n bytes of the blob at at, in place when they sit in one page
 * (the writer's bucket chunks always do), else copied into buf: NULL if
 * they are not all inside the blob or a link crossed is not as laid out. */
static const unsigned char *ix_view(struct ixq *q, uint32_t at,
				    uint32_t n, unsigned char *buf)
{
	struct nss_index *x = &q->s->ix;
	if (at > x->len || n > x->len - at)
		return NULL;
	if (at < x->local) {
		if (n <= x->local - at)
			return x->local_copy + at;
	} else {
		uint32_t off, i = ix_page_of(x, at - x->local, &off);
		if (i < x->npages && n <= x->chunk - off) {
			const unsigned char *pg = ix_page(q, i);
			return pg ? pg + off : NULL;
		}
	}
	return buf && ix_read(q, at, buf, n) == 0 ? buf : NULL;
}

enum ix_kind { IX_PW_NAME, IX_PW_UID, IX_GR_NAME, IX_GR_GID, IX_PIECE };

static void ix_open_page2(struct snap *s, uint32_t page, uint32_t usable,
			  const unsigned char *pg);

/* Finds the index in the open file: page 2 must be a table leaf holding
 * one row (rowid 1: NULL, then a blob) whose blob starts with IX_MAGIC.
 * Only what costs O(1) is checked here; ix_read checks each overflow link
 * it crosses, and scim_cache_check (syncd's verification) checks them
 * all. Leaves s->ix.ok 0, and the file to SQL, if anything is off. */
void ix_open(struct snap *s, const unsigned char *b, size_t nb)
{
	struct nss_index *x = &s->ix;
	memset(x, 0, sizeof(*x));
	if (!s->mappable || s->size <= 512 || s->fd < 0)
		return;
	/* b: the file's first nb bytes (the SQLite header at least). Page 2
	 * is taken from them when they hold it (open_fd reads HEAD_READ
	 * bytes), else read with pread, and its part of the blob kept: a new
	 * process reads no page of the mapping until a lookup needs it
	 * (win_cold). */
	uint32_t page = (uint32_t)b[16] << 8 | b[17];
	if (page == 1)
		page = 65536;
	uint32_t usable = page - b[20];
	/* Auto-vacuum files put pointer-map pages among the overflow pages
	 * (header offset 52, nonzero then): never laid out as the writer
	 * does, read through SQL. */
	if (usable < 480 || (int64_t)page * 2 > s->size || be32(b + 52) != 0)
		return;
	if (nb >= (size_t)page * 2) {
		ix_open_page2(s, page, usable, b + page);
		return;
	}
	unsigned char *p2 = malloc(page);
	if (!p2)
		return;
	if (pread(s->fd, p2, page, page) == (ssize_t)page)
		ix_open_page2(s, page, usable, p2);
	free(p2);
}

/* ix_open with page 2's bytes at pg. */
static void ix_open_page2(struct snap *s, uint32_t page, uint32_t usable,
			  const unsigned char *pg)
{
	struct nss_index *x = &s->ix;
	const unsigned char *end = pg + usable;
	if (pg[0] != 0x0D || (pg[3] << 8 | pg[4]) != 1)
		return;
	uint32_t cell = (uint32_t)pg[8] << 8 | pg[9];
	if (cell < 10 || cell >= usable)
		return;
	const unsigned char *q = pg + cell;
	uint64_t pay, rowid, hdr, t0, t1;
	int n;
	if (!(n = varint(q, end, &pay)))
		return;
	q += n;
	if (!(n = varint(q, end, &rowid)) || rowid != 1)
		return;
	q += n;
	/* How much of a payload a table leaf keeps in the page (SQLite
	 * file format, "B-tree Pages"): the rest is in overflow pages. */
	uint64_t X = usable - 35, M = (uint64_t)(usable - 12) * 32 / 255 - 23;
	uint64_t local = pay;
	if (pay > X) {
		uint64_t K = M + (pay - M) % (usable - 4);
		local = K <= X ? K : M;
	}
	if (local > (uint64_t)(end - q) ||
	    (pay > local && (uint64_t)(end - q) < local + 4))
		return;
	const unsigned char *lend = q + local, *hp;
	if (!(n = varint(q, lend, &hdr)) || hdr < 3 || hdr > local)
		return;
	hp = q + n;
	if (!(n = varint(hp, q + hdr, &t0)) || t0 != 0)
		return;
	hp += n;
	if (!(n = varint(hp, q + hdr, &t1)) || t1 < 12 || t1 % 2)
		return;
	hp += n;
	uint64_t len = (t1 - 12) / 2;
	if (hp != q + hdr || len + hdr != pay || len < 64 || len > UINT32_MAX)
		return;
	x->len = (uint32_t)len;
	x->local = (uint32_t)(local - hdr);
	x->local_copy = malloc(x->local ? x->local : 1);
	if (!x->local_copy)
		return;
	memcpy(x->local_copy, q + hdr, x->local);
	x->page = page;
	x->chunk = usable - 4;
	x->cmul = (1ULL << 48) / x->chunk + 1;
	if (pay > local) {
		uint32_t first = be32(q + local);
		uint64_t np = (pay - local + x->chunk - 1) / x->chunk;
		if (first < 3 || first + np - 1 > (uint64_t)(s->size / page))
			return;
		x->first = first;
		x->npages = (uint32_t)np;
		x->seen = calloc((np + 7) / 8, 1);
		if (!x->seen)
			return;
	}
	unsigned char h[IX_HEADER3];
	struct ixq hq = {.s = s};
	int got = x->len >= IX_HEADER && ix_read(&hq, 0, h, IX_HEADER) == 0;
	/* Version 3 adds the member pieces' partition at 72 (index.go). */
	if (got && le32(h + 64) >= 3)
		got = x->len >= IX_HEADER3 &&
		      ix_read(&hq, IX_HEADER, h + IX_HEADER,
			      IX_HEADER3 - IX_HEADER) == 0;
	ix_done(&hq);
	if (!got || memcmp(h, IX_MAGIC, 8) != 0 ||
	    le32(h + 8) != x->len || !(le32(h + 12) & IX_FLAG_USABLE))
		return;
	x->seed = le64(h + 16);
	x->csize = le32(h + 24);
	x->cbase = le32(h + 28);
	x->version = le32(h + 64);
	x->nparts = x->version >= 3 ? 5 : 4;
	uint32_t hsize = x->nparts == 5 ? IX_HEADER3 : IX_HEADER;
	if (x->csize < 64 || x->csize > 65536 || x->cbase < hsize ||
	    x->cbase > x->len)
		return;
	for (uint32_t k = 0; k < x->nparts; k++) {
		const unsigned char *at = h + (k < 4 ? 32 + 8 * k : 72);
		x->kfirst[k] = le32(at);
		x->kmask[k] = le32(at + 4);
		uint64_t end = (uint64_t)x->kfirst[k] + x->kmask[k] + 1;
		if (x->kmask[k] >= (1u << 24) || (x->kmask[k] & (x->kmask[k] + 1)) ||
		    end * x->csize > (uint64_t)(x->len - x->cbase))
			return;
	}
	x->ok = 1;
}

/* Every overflow link of the index (scim_cache_check): a lookup checks
 * only those it crosses. The pages are read with pread, IX_CHECK_READ
 * bytes at a time into one buffer of the check's own, not through the
 * file's mapping: mapped file pages count in the process's RSS, and at
 * 100,000 users the walk through the mapping left the whole 31 MB index
 * mapped (24 MB of a node install's 41 MB peak, issue 18) and cost a
 * fault per 64 KiB. Measured by hand, Dec 2, load 7 (a 31 MB file in the
 * page cache, one byte read per 4 KiB page): through a mapping 22-28 ms
 * CPU and 30 MB of RSS; mapped and unmapped 1 MiB at a time 20-26 ms and
 * 1 MB (the faults stay); pread of 32 KiB-512 KiB chunks 6.3-8.7 ms,
 * least at 128 KiB (the buffer stays in the L2 cache), with 0.1 MB of
 * RSS; pread of each page's 4 link bytes 13-14 ms (a system call per
 * page). The same links are checked as before, in the same file (the
 * descriptor lookups read and map): only how the bytes arrive changed.
 * Each page checked is marked seen, so lookups do not check it again. */
#define IX_CHECK_READ (128 * 1024)

int ix_check_all(struct scim_cache *c)
{
	struct snap *s = c->snap;
	struct nss_index *x = &s->ix;
	if (!x->ok || x->npages == 0)
		return SCIM_OK;
	uint32_t per = IX_CHECK_READ / x->page ? IX_CHECK_READ / x->page : 1;
	unsigned char *buf = malloc((size_t)per * x->page);
	if (!buf) {
		set_err(c, "%s: out of memory checking the NSS index", c->path);
		return SCIM_UNAVAIL;
	}
	for (uint32_t i = 0; i < x->npages; i += per) {
		uint32_t k = x->npages - i < per ? x->npages - i : per;
		size_t len = (size_t)k * x->page, got = 0;
		off_t off = (off_t)(x->first + i - 1) * x->page;
		while (got < len) {
			ssize_t r = pread(s->fd, buf + got, len - got,
					  off + (off_t)got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		for (uint32_t j = 0; j < k; j++) {
			uint32_t p = i + j;
			uint32_t next = p + 1 < x->npages ? x->first + p + 1 : 0;
			if ((size_t)(j + 1) * x->page > got ||
			    be32(buf + (size_t)j * x->page) != next) {
				set_err(c, "%s: corrupt: the NSS index's page %"
					PRIu32 " is not linked as written",
					c->path, x->first + p);
				free(buf);
				return SCIM_UNAVAIL;
			}
			__atomic_fetch_or(&x->seen[p >> 3],
					  (unsigned char)(1u << (p & 7)),
					  __ATOMIC_RELAXED);
		}
	}
	free(buf);
	return SCIM_OK;
}

struct ix_user {
	uint32_t uid, gid, ngids, active;
	uint32_t len[4]; /* name, gecos, home, shell */
	uint32_t gids_at, str_at;
};

static int ix_user_at(struct ixq *q, uint32_t rec, struct ix_user *u)
{
	unsigned char buf[IX_USER_FIXED];
	const unsigned char *b = ix_view(q, rec, sizeof(buf), buf);
	if (!b)
		return -1;
	u->uid = le32(b);
	u->gid = le32(b + 4);
	u->ngids = le32(b + 8);
	u->active = le32(b + 12) & 1;
	uint64_t total = 0;
	for (int i = 0; i < 4; i++)
		total += u->len[i] = (uint32_t)b[16 + 2 * i] | (uint32_t)b[17 + 2 * i] << 8;
	u->gids_at = rec + IX_USER_FIXED;
	if (u->ngids > (q->s->ix.len - u->gids_at) / 4)
		return -1;
	u->str_at = u->gids_at + u->ngids * 4;
	return total <= q->s->ix.len - u->str_at ? 0 : -1;
}

struct ix_group {
	uint32_t gid, name_len, mem_len, name_at;
	int pieced; /* the members are in pieces (version 3), listed after the name */
};

static int ix_group_at(struct ixq *q, uint32_t rec, struct ix_group *g)
{
	unsigned char buf[IX_GROUP_FIXED];
	const unsigned char *b = ix_view(q, rec, sizeof(buf), buf);
	if (!b)
		return -1;
	g->gid = le32(b);
	g->name_len = le32(b + 4);
	g->mem_len = le32(b + 8);
	g->pieced = (g->mem_len & IX_PIECED) != 0;
	g->mem_len &= ~IX_PIECED;
	g->name_at = rec + IX_GROUP_FIXED;
	if (g->pieced && q->s->ix.nparts < 5)
		return -1; /* no pieces before version 3 */
	/* A pieced record keeps u32 pieces and their first names after the
	 * name (ix_fill_pieces reads and checks them). */
	uint64_t total = (uint64_t)g->name_len + (g->pieced ? 4 : g->mem_len);
	return total <= q->s->ix.len - g->name_at ? 0 : -1;
}

/* A member piece (version 3, index.go): u32 gid, u32 text length, u8
 * length and bytes of the next piece's first name, the text. */
struct ix_piece {
	uint32_t gid, len, text_at, next_len, next_at;
};

static int ix_piece_at(struct ixq *q, uint32_t rec, struct ix_piece *p)
{
	unsigned char buf[9];
	const unsigned char *b = ix_view(q, rec, sizeof(buf), buf);
	if (!b || rec > q->s->ix.len - 9)
		return -1;
	p->gid = le32(b);
	p->len = le32(b + 4);
	p->next_len = b[8];
	p->next_at = rec + 9;
	p->text_at = p->next_at + p->next_len;
	return p->text_at <= q->s->ix.len &&
	       p->len <= q->s->ix.len - p->text_at ? 0 : -1;
}

/* 1 if the piece's text starts with the name first (n bytes) followed by
 * a comma or its end, 0 if not, -1 damaged. */
static int ix_piece_starts(struct ixq *q, const struct ix_piece *p,
			   const char *first, size_t n)
{
	unsigned char buf[257];
	if (n == 0 || n > 255 || p->len < n)
		return 0;
	uint32_t k = (uint32_t)n + (p->len > n);
	const unsigned char *b = ix_view(q, p->text_at, k, buf);
	if (!b)
		return -1;
	return memcmp(b, first, n) == 0 && (k == n || b[n] == ',');
}

/* 1 if the len bytes at at are name (of length n), 0 if not, -1 damaged. */
static int ix_name_is(struct ixq *q, uint32_t at, uint32_t len,
		      const char *name, size_t n)
{
	unsigned char buf[256];
	if (len != n)
		return 0;
	if (n > sizeof(buf))
		return 0; /* no key that long is ever asked (callers cap) */
	const unsigned char *b = ix_view(q, at, (uint32_t)n, buf);
	if (!b)
		return -1;
	return memcmp(b, name, n) == 0;
}

/* Entry offsets in a bucket chunk (index.go): two flag bits. */
#define IX_ELSEWHERE 0x8000 /* u32 blob offset, u32 length of the record */
#define IX_REDIRECT 0x4000  /* u32 gid, u32 by-name bucket, u32 by-name tag */
#define IX_OFF_MASK 0x3FFF

/* Scans bucket b of kind for an entry tagged tag whose record has name
 * (n bytes) or, with name NULL, id (uid or gid), and parses it into out
 * (a struct ix_user for the passwd kinds, a struct ix_group for the
 * group kinds): 1 found, 0 none, -1 a damaged index. The chunk lists its
 * entries' tags first, then where each entry is; only tagged entries are
 * read. A by-gid entry redirects to the group's by-name entry (depth 1). */
static int ix_scan_in(struct ixq *q, enum ix_kind kind, uint32_t chunk,
		      const unsigned char *ch, uint32_t tag, const char *name,
		      size_t n, uint32_t id, int depth, void *out);

static int ix_scan(struct ixq *q, enum ix_kind kind, uint32_t b,
		   uint32_t tag, const char *name, size_t n, uint32_t id,
		   int depth, void *out)
{
	struct nss_index *x = &q->s->ix;
	if (b > x->kmask[kind])
		return -1;
	uint32_t chunk = x->cbase + (x->kfirst[kind] + b) * x->csize;
	const unsigned char *ch = ix_view(q, chunk, x->csize, NULL);
	if (ch)
		return ix_scan_in(q, kind, chunk, ch, tag, name, n, id, depth, out);
	/* A chunk across pages (never as the writer lays them out): copied
	 * into memory of this call's own, as lookups run concurrently. */
	unsigned char *tmp = malloc(x->csize);
	ch = tmp ? ix_view(q, chunk, x->csize, tmp) : NULL;
	int r = ch ? ix_scan_in(q, kind, chunk, ch, tag, name, n, id, depth, out)
		   : -1;
	free(tmp);
	return r;
}

/* ix_scan over the chunk's bytes ch. */
static int ix_scan_in(struct ixq *q, enum ix_kind kind, uint32_t chunk,
		      const unsigned char *ch, uint32_t tag, const char *name,
		      size_t n, uint32_t id, int depth, void *out)
{
	struct nss_index *x = &q->s->ix;
	uint32_t count = (uint32_t)ch[0] | (uint32_t)ch[1] << 8;
	if (2 + 6 * (uint64_t)count > x->csize)
		return -1;
	const unsigned char *tags = ch + 2, *offs = ch + 2 + 4 * count;
	for (uint32_t j = 0; j < count; j++) {
		if (le32(tags + 4 * j) != tag)
			continue;
		uint32_t at = (uint32_t)offs[2 * j] | (uint32_t)offs[2 * j + 1] << 8;
		uint32_t off = at & IX_OFF_MASK, rec = chunk + off;
		if (at & IX_REDIRECT) {
			if (kind != IX_GR_GID || name || depth > 0 ||
			    off > x->csize - 12)
				return -1;
			if (le32(ch + off) != id)
				continue;
			return ix_scan(q, IX_GR_NAME, le32(ch + off + 4),
				       le32(ch + off + 8), NULL, 0, id, depth + 1,
				       out);
		}
		if (at & IX_ELSEWHERE) {
			if (off > x->csize - 8)
				return -1;
			rec = le32(ch + off);
			if (rec == 0 || rec >= x->len)
				return -1;
		} else if (off >= x->csize) {
			return -1;
		}
		int m;
		if (kind == IX_PIECE) {
			struct ix_piece *p = out;
			if (ix_piece_at(q, rec, p) != 0)
				return -1;
			m = p->gid == id ? ix_piece_starts(q, p, name, n) : 0;
		} else if (kind <= IX_PW_UID) {
			struct ix_user *u = out;
			if (ix_user_at(q, rec, u) != 0)
				return -1;
			m = name ? ix_name_is(q, u->str_at, u->len[0], name, n)
				 : u->uid == id;
		} else {
			struct ix_group *g = out;
			if (ix_group_at(q, rec, g) != 0)
				return -1;
			m = name ? ix_name_is(q, g->name_at, g->name_len, name, n)
				 : g->gid == id;
		}
		if (m)
			return m;
	}
	return 0;
}

/* The record of a key, parsed into out (see ix_scan): 1 found, 0 absent,
 * -1 damaged. */
static int ix_find(struct ixq *q, enum ix_kind kind, const char *name,
		   uint32_t id, void *out)
{
	struct nss_index *x = &q->s->ix;
	size_t n = name ? strlen(name) : 0;
	if (name && n > 255)
		return 0;
	uint64_t h = name ? ix_hash(x->seed, (const unsigned char *)name, n)
			  : ix_hash_id(x->seed, id);
	return ix_scan(q, kind, (uint32_t)h & x->kmask[kind],
		       (uint32_t)(h >> 32), name, n, id, 0, out);
}

/* Member piece first (n bytes) of group gid (its key: gid, then the
 * name), parsed into p: 1 found, 0 absent, -1 damaged. */
static int ix_find_piece(struct ixq *q, uint32_t gid, const char *first,
			 size_t n, struct ix_piece *p)
{
	struct nss_index *x = &q->s->ix;
	unsigned char key[4 + 255];
	if (x->nparts < 5 || n == 0 || n > 255)
		return -1;
	key[0] = (unsigned char)gid;
	key[1] = (unsigned char)(gid >> 8);
	key[2] = (unsigned char)(gid >> 16);
	key[3] = (unsigned char)(gid >> 24);
	memcpy(key + 4, first, n);
	uint64_t h = ix_hash(x->seed, key, 4 + n);
	return ix_scan(q, IX_PIECE, (uint32_t)h & x->kmask[IX_PIECE],
		       (uint32_t)(h >> 32), first, n, gid, 0, p);
}

/* A damaged index: recorded in q for the caller, who marks the handle
 * (ix_damaged) with the lock held. */
static int ix_bad(struct ixq *q)
{
	q->damaged = 1;
	return SCIM_UNAVAIL;
}

/* Copies len bytes of the blob at at into the arena, NUL-terminated. */
static char *ix_str(struct ixq *q, struct arena *a, uint32_t at,
		    uint32_t len, int *bad)
{
	if ((size_t)len + 1 > a->len - a->used)
		return NULL;
	char *p = a->buf + a->used;
	if (ix_read(q, at, p, len) != 0) {
		*bad = 1;
		return NULL;
	}
	p[len] = '\0';
	a->used += (size_t)len + 1;
	return p;
}

/* A pieced group's member list (version 3, index.go) into the arena,
 * NUL-terminated: from the first piece its record names, each piece found
 * by its key (gid, first name) and checked to start with that name, then
 * the next one it names, joined by commas; exactly the record's number
 * of pieces and members length. NULL with *bad set if anything is off
 * (a chain that loops runs out of pieces or length), NULL alone if it
 * does not fit. */
static char *ix_pieces(struct ixq *q, struct arena *a,
		       const struct ix_group *g, int *bad)
{
	unsigned char nb[5];
	uint32_t at = g->name_at + g->name_len;
	if ((size_t)g->mem_len + 1 > a->len - a->used)
		return NULL;
	if (ix_read(q, at, nb, 5) != 0 || le32(nb) == 0 ||
	    le32(nb) > g->mem_len / 2 + 1) {
		*bad = 1;
		return NULL;
	}
	uint32_t np = le32(nb), fl = nb[4];
	char first[255];
	if (ix_read(q, at + 5, first, fl) != 0) {
		*bad = 1;
		return NULL;
	}
	char *list = a->buf + a->used;
	size_t got = 0;
	for (uint32_t i = 0; i < np; i++) {
		struct ix_piece p;
		if (fl == 0 || ix_find_piece(q, g->gid, first, fl, &p) != 1 ||
		    got + (i > 0) + p.len > g->mem_len ||
		    (p.next_len == 0) != (i + 1 == np)) {
			*bad = 1;
			return NULL;
		}
		if (i > 0)
			list[got++] = ',';
		char next[255];
		uint32_t nl = p.next_len;
		if (ix_read(q, p.text_at, list + got, p.len) != 0 ||
		    ix_read(q, p.next_at, next, nl) != 0) {
			*bad = 1;
			return NULL;
		}
		/* The list is in name order (bytes, as SQLite's BINARY), so
		 * each piece's first name comes after the one before: a chain
		 * that loops back, or repeats a piece, is refused here even if
		 * its counts were made to fit. */
		if (nl > 0) {
			int c = memcmp(next, first, nl < fl ? nl : fl);
			if (c < 0 || (c == 0 && nl <= fl)) {
				*bad = 1;
				return NULL;
			}
		}
		memcpy(first, next, nl);
		fl = nl;
		got += p.len;
	}
	if (got != g->mem_len) {
		*bad = 1;
		return NULL;
	}
	list[got] = '\0';
	a->used += got + 1;
	return list;
}

static int ix_fill_pw(struct ixq *q, const struct ix_user *u,
		      struct passwd *pw, char *buf, size_t buflen)
{
	/* The four strings follow one another in the record: one read, then
	 * each with its terminator (and "*" after the name) into buf. */
	size_t total = (size_t)u->len[0] + u->len[1] + u->len[2] + u->len[3];
	if (buflen < total + 4 + sizeof(PW_PASSWD))
		return SCIM_ERANGE;
	const unsigned char *src = ix_view(q, u->str_at, (uint32_t)total,
					   (unsigned char *)buf + buflen - total);
	if (!src)
		return ix_bad(q);
	char *p = buf, *f[4];
	for (int k = 0; k < 4; k++) {
		/* src may be the end of buf itself (a record across pages):
		 * memmove, and each string lands before what is still to read. */
		f[k] = p;
		memmove(p, src, u->len[k]);
		p[u->len[k]] = '\0';
		p += u->len[k] + 1;
		src += u->len[k];
		if (k == 0) {
			memcpy(p, PW_PASSWD, sizeof(PW_PASSWD));
			p += sizeof(PW_PASSWD);
		}
	}
	pw->pw_name = f[0];
	pw->pw_passwd = f[0] + u->len[0] + 1;
	pw->pw_gecos = f[1];
	pw->pw_dir = f[2];
	pw->pw_shell = f[3];
	pw->pw_uid = u->uid;
	pw->pw_gid = u->gid;
	q->fill_len = (size_t)(p - buf);
	return SCIM_OK;
}

static int ix_fill_gr(struct ixq *q, const struct ix_group *g,
		      struct group *gr, char *buf, size_t buflen,
		      uint32_t *gid_out)
{
	size_t strs = (size_t)g->name_len + 1 + sizeof(PW_PASSWD) +
		      g->mem_len + 1;
	if (buflen < strs + sizeof(char *)) {
		q->memo_need = strs + sizeof(char *);
		return SCIM_ERANGE;
	}
	struct arena a = {buf, buflen, 0};
	int bad = 0;
	char *name = ix_str(q, &a, g->name_at, g->name_len, &bad);
	char *passwd = name ? arena_str(&a, PW_PASSWD) : NULL;
	char *list = !passwd ? NULL
		   : g->pieced ? ix_pieces(q, &a, g, &bad)
			       : ix_str(q, &a, g->name_at + g->name_len,
					g->mem_len, &bad);
	if (bad)
		return ix_bad(q);
	if (!list)
		return SCIM_ERANGE;
	return finish_gr(&q->memo_need, &q->fill_len, &a, name, passwd, list, g->gid, gr, gid_out);
}

/* A keyed passwd or group lookup (row_query's ST_PW_NAM, ST_PW_UID,
 * ST_GR_NAM, ST_GR_GID) from the index, with SQL's conditions. */
int ix_lookup(struct ixq *q, enum stmt_id id, const char *name,
		     int64_t key, void *ent, char *buf, size_t buflen,
		     uint32_t *id_out)
{
	enum ix_kind kind = id == ST_PW_NAM ? IX_PW_NAME
			  : id == ST_PW_UID ? IX_PW_UID
			  : id == ST_GR_NAM ? IX_GR_NAME
					    : IX_GR_GID;
	struct ix_user u;
	struct ix_group g;
	int found = ix_find(q, kind, name, (uint32_t)key,
			    kind <= IX_PW_UID ? (void *)&u : (void *)&g);
	if (found < 0)
		return ix_bad(q);
	if (found == 0)
		return SCIM_NOTFOUND;
	if (kind <= IX_PW_UID) {
		/* By name, the caller already refused "root". */
		int root = name ? 0 : ix_name_is(q, u.str_at, u.len[0], "root", 4);
		if (root < 0)
			return ix_bad(q);
		if (root || reserved_floor(q->min_id, u.uid) || reserved_floor(q->min_id, u.gid))
			return SCIM_NOTFOUND;
		if (id_out)
			*id_out = u.uid;
		return ix_fill_pw(q, &u, ent, buf, buflen);
	}
	int root = name ? 0 : ix_name_is(q, g.name_at, g.name_len, "root", 4);
	if (root < 0)
		return ix_bad(q);
	if (root || reserved_floor(q->min_id, g.gid))
		return SCIM_NOTFOUND;
	return ix_fill_gr(q, &g, ent, buf, buflen, id_out);
}

/* The gid of a group named root in the index, -1 if none. */
int64_t ix_root_gid(struct ixq *q)
{
	struct ix_group g;
	return ix_find(q, IX_GR_NAME, "root", 0, &g) > 0 ? (int64_t)g.gid : -1;
}

/* Calls f(arg, gid) for each gid of u's list in the index until f
 * returns nonzero: 1 if one did, 0 if none, -1 damaged. */
static int ix_gids(struct ixq *q, const struct ix_user *u,
		   int (*f)(void *arg, uint32_t gid), void *arg)
{
	unsigned char buf[1024];
	for (uint32_t i = 0; i < u->ngids; i += sizeof(buf) / 4) {
		uint32_t k = u->ngids - i < sizeof(buf) / 4 ? u->ngids - i
							     : (uint32_t)(sizeof(buf) / 4);
		const unsigned char *b = ix_view(q, u->gids_at + i * 4, k * 4, buf);
		if (!b)
			return -1;
		for (uint32_t j = 0; j < k; j++)
			if (f(arg, le32(b + 4 * j)))
				return 1;
	}
	return 0;
}

static int ix_keep_gid(void *arg, uint32_t gid)
{
	gid_keep(arg, gid);
	return 0;
}

/* scim_user_groups from the index: the user's packed gids, filtered as
 * parse_gids filters user_groups' text.  */
int ix_user_groups(struct ixq *q, const char *user, gid_t *gids,
			  size_t max, size_t *count)
{
	struct ix_user u;
	int found = ix_find(q, IX_PW_NAME, user, 0, &u);
	if (found < 0)
		return ix_bad(q);
	if (found == 0 || reserved_floor(q->min_id, u.uid) || reserved_floor(q->min_id, u.gid))
		return SCIM_NOTFOUND;
	/* The gid of a group named root: -1 none; read once per open, on
	 * first use (concurrent first uses read the same value). */
	int64_t root = __atomic_load_n(&q->s->root_gid, __ATOMIC_RELAXED);
	if (root == -2) {
		root = ix_root_gid(q);
		__atomic_store_n(&q->s->root_gid, root, __ATOMIC_RELAXED);
	}
	struct gid_list l = {gids, max, 0, 0, 0, q->min_id, root};
	if (ix_gids(q, &u, ix_keep_gid, &l) < 0)
		return ix_bad(q);
	gid_done(&l);
	*count = l.n;
	return l.n > max ? SCIM_ERANGE : SCIM_OK;
}

/* scim_user_active from the index: ST_ACTIVE's conditions. */
int ix_user_active(struct ixq *q, const char *name, int *active)
{
	struct ix_user u;
	int found = ix_find(q, IX_PW_NAME, name, 0, &u);
	if (found < 0)
		return ix_bad(q);
	if (found == 0 || reserved_floor(q->min_id, u.uid) || reserved_floor(q->min_id, u.gid))
		return SCIM_NOTFOUND;
	*active = (int)u.active;
	return SCIM_OK;
}

static int ix_is_gid(void *arg, uint32_t gid)
{
	return gid == *(const uint32_t *)arg;
}

/* 1 if user's gid list in the index holds group's gid, 0 if not (or no
 * such user or group, or the group's gid below the floor), -1 damaged.
 *  */
int ix_in_group(struct ixq *q, const char *user,
		       const char *group)
{
	struct ix_group g;
	struct ix_user u;
	int found = ix_find(q, IX_GR_NAME, group, 0, &g);
	if (found > 0 && !reserved_floor(q->min_id, g.gid))
		found = ix_find(q, IX_PW_NAME, user, 0, &u);
	else if (found > 0)
		found = 0;
	if (found > 0)
		found = ix_gids(q, &u, ix_is_gid, &g.gid);
	if (found < 0)
		ix_bad(q);
	return found;
}
