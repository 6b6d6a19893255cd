package receiver

import (
	"sync"

	"github.com/scimbridge/scimbridge/syncd/cache"
)

// arenaTrim is the free memory glibc may keep at the top of a malloc
// arena before it gives it back to the kernel (cache.KeepArenaTops).
const arenaTrim = 4 << 20

var arenaOnce sync.Once

// keepArenaTops stops glibc from returning the top of a thread's malloc
// arena to the kernel after every store transaction and faulting it back
// in for the next one (BenchmarkCreate under perf: madvise and the page
// faults after it were 6% of the CPU of a create; 7,489 madvise calls
// and 16,334 page faults for 20,000 creates, 433-567 and 6,300-7,500
// with a threshold of 1-256 MiB). The setting is the process's: the
// SQLite connections' memory comes from these arenas. At most arenaTrim
// free bytes stay per arena.
func keepArenaTops() {
	arenaOnce.Do(func() { cache.KeepArenaTops(arenaTrim) })
}
