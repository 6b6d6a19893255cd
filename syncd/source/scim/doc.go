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
package scim
