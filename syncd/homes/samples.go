package homes

import (
	"sort"
	"time"
)

// TeamStorage sums one team's hourly samples over a window, for the
// usage report: how much of its project quota it used.
type TeamStorage struct {
	Team    string    `json:"team"`
	Samples int       `json:"samples"`
	AvgUsed uint64    `json:"avg_used_bytes"`
	MaxUsed uint64    `json:"max_used_bytes"`
	Last    uint64    `json:"last_used_bytes"`
	LastAt  time.Time `json:"last_at"`
	Soft    uint64    `json:"soft_bytes"` // at the last sample
	Hard    uint64    `json:"hard_bytes"`
	// GiBHours is used GiB integrated over time, each sample standing for
	// the time to the next one (at most 2 hours; the last: 1 hour), the
	// storage analogue of GPU-hours.
	GiBHours float64 `json:"gib_hours"`
}

// SummarizeSamples is each team's storage in [since, until), by name.
func SummarizeSamples(samples []Sample, since, until time.Time) []TeamStorage {
	by := map[string][]Sample{}
	for _, s := range samples {
		if s.Kind == "team" && !s.At.Before(since) && s.At.Before(until) {
			by[s.Name] = append(by[s.Name], s)
		}
	}
	out := make([]TeamStorage, 0, len(by))
	for team, ss := range by {
		sort.Slice(ss, func(i, j int) bool { return ss[i].At.Before(ss[j].At) })
		t := TeamStorage{Team: team, Samples: len(ss)}
		var sum float64
		for i, s := range ss {
			sum += float64(s.Used)
			t.MaxUsed = max(t.MaxUsed, s.Used)
			span := time.Hour
			if i+1 < len(ss) {
				span = min(ss[i+1].At.Sub(s.At), 2*time.Hour)
			}
			t.GiBHours += float64(s.Used) / (1 << 30) * span.Hours()
		}
		last := ss[len(ss)-1]
		t.AvgUsed = uint64(sum / float64(len(ss)))
		t.Last, t.LastAt, t.Soft, t.Hard = last.Used, last.At, last.Soft, last.Hard
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Team < out[j].Team })
	return out
}
