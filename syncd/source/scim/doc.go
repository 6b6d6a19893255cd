// Decisions of package scim, and where each is written out in full.
// (The package comment is client.go's.)
//
//   - change.go: the cheap change check between full reads (watermark,
//     overlap, deduplication, the removal check by totalResults).
//   - update.go: the incremental read applies the check's records to the
//     held directory; the periodic full read stays the proof.
//   - removed.go (issue 18): a count down by a few (at most
//     maxProbeDeletions) is resolved by probing single positions of the
//     server's index order (startIndex=k, count=1, attributes=id: a k-ary
//     search, about 25 tiny requests at 100,000 users instead of 100
//     pages of 1,000 ids), each candidate confirmed gone (404, or `id eq`
//     under a configured filter) before it is dropped, and only when
//     exactly the missing count is. Anything that does not fit falls
//     back, in the same poll, to the whole id listing (ids.go), logged
//     once with the reason.
//   - Additions and the remembered order (removed.go): records the change
//     check finds new are appended to the remembered order, not placed
//     by probing at the poll that sees them. Servers that list by
//     insertion (the default order without sortBy) put them there; any
//     other server shows it at the next deletion's probes, which then
//     read the whole listing and keep its order. Placing each addition
//     by probing would cost every addition poll about log N requests for
//     an order only a later deletion may use, and would still need the
//     same checks. The order is a hint where to look, never a proof:
//     correctness comes from the confirmation and the count.
//   - ids.go: the whole id listing, pages side by side where the server
//     pages by index, taken only when provably whole.
//   - intern.go (issue 18, full read memory, Dec 2): a full read keeps
//     one string per distinct id. The users' and the groups' walks share
//     one interner (a locked map, dropped with the read), a resource's id
//     is read once per record (the walk, the change recorder and the
//     conversion each asked, each making a copy), member lists are read
//     element by element with no list of references made (the group of
//     every user made a 100,000-element list and its growth), member
//     slices are sized by a count of the elements, and a reference's
//     type ("User") is not copied. A full read of 30,000 users / 3,000
//     groups (scim-testserver, another process): 99.1 -> 77.0 MB
//     allocated, 932k -> 622k allocations, live after the read 24.5 ->
//     18.3-20.9 MB. syncd sync --once at 100,000 users (with the
//     validation change, cac0f65 back to back, one run each, load 7-11):
//     VmHWM 256 -> 237 MB, RSS before the write 221 -> 205 MB, 35 -> 28
//     collections. TestFullReadSharesIDs holds the sharing.
//   - readBody (http.go): a page buffer is made an eighth larger than
//     the page that needs it (pages of one listing differ by a few
//     bytes, and the buffer was made again for most of them: 130 MB of
//     buffers at 100,000 users in the cac0f65 profile), and a buffer
//     over 4 MB is given up for a page needing a quarter of it (the
//     groups' first page, 47 MB with a group of every user, is not kept
//     for the rest of the listing). Not measured alone: at 30,000 users
//     the allocations were the same with and without it.
//   - ahead.go (issue 18, full read wall time, Dec 2): a walk asks for
//     page N+1 (placed by a scan of page N's envelope) while it decodes
//     and applies page N, at most one request ahead, used only when it
//     is the request the walk then makes. Measured before (444f724) and
//     after, back to back under the bench lock, BenchmarkFullRead and
//     syncd sync --once at 100,000 users / 10,000 groups (cursor paging,
//     page size 1000). Where the read's time goes (instrumented pair,
//     load 2.5-2.9): the users' walk (100 pages; the groups', 10 pages
//     side by side, took 4.5-5.0 s) is the read: 6.3 s, of which 4.15 s
//     waiting for headers (the test server building pages), 0.95 s body
//     and decode (decode 0.73 s), 1.2 s applying records. After: 5.8-6.0
//     s, of which 4.0 s waiting for the page asked ahead, 1.0 s decode,
//     1.2-1.35 s applying; the server's own page time grew 4.15 -> 4.9 s
//     (it now builds a page while syncd decodes, on the same 2 cores).
//     FullRead 6.32/6.28 -> 6.03/5.81 s wall, 3.15/3.15 -> 3.25/3.19 s
//     CPU. Five more pairs (load 3.1-5.4): FullRead wall median 10.80 ->
//     9.73 s (new faster in 4 of 5), CPU median 3.77 -> 3.78 s; sync
//     --once wall median 15.99 -> 12.46 s (faster in 4 of 5), CPU median
//     12.13 -> 11.16 s, VmHWM 235-238 -> 236-244 MB. On 2 shared cores
//     the read stays bound by the server's page building: the overlap
//     hides syncd's decode and apply (about 2 s of the users' walk) only
//     as far as a core is free; against a remote identity provider (a
//     network round trip per page) it hides up to all of it. More than
//     one page ahead is not asked: one more request in flight per
//     listing is the load the IdP sees from it.
package scim
