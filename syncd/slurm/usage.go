package slurm

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Usage report: GPU-hours per team (account) and tier (QOS; a team's
// ACCOUNT-project QOS is its "project" tier) over a window, from sacct,
// against the cluster's capacity (GPUs × hours). `syncd report usage`.

// UsageArgs is the sacct command line for jobs overlapping [from, to).
func UsageArgs(from, to time.Time) []string {
	return []string{"-a", "-X", "-n", "-P", "--starttime=" + from.Format("2006-01-02T15:04:05"),
		"--endtime=" + to.Format("2006-01-02T15:04:05"), "-o", "JobID,Account,QOS,AllocTRES,Start,End"}
}

// UsageRow is one team and tier.
type UsageRow struct {
	Team, Tier string
	Jobs       int
	GPUHours   float64
}

// Usage is the report.
type Usage struct {
	From, To    time.Time
	CapacityGPU int
	Rows        []UsageRow
}

// CapacityHours is GPUs × hours of the window.
func (u *Usage) CapacityHours() float64 {
	return float64(u.CapacityGPU) * u.To.Sub(u.From).Hours()
}

// tierOf names a QOS's tier.
func tierOf(qos string) string {
	if strings.HasSuffix(qos, "-project") {
		return "project"
	}
	return qos
}

// ParseUsage reads sacct output (UsageArgs), counting each job's GPUs
// for the part of its run inside the window (a running job up to to).
func ParseUsage(out string, from, to time.Time, loc *time.Location) (*Usage, error) {
	u := &Usage{From: from, To: to}
	agg := map[[2]string]*UsageRow{}
	for i, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 6 {
			return nil, fmt.Errorf("sacct: line %d %q: %d fields, want 6", i+1, line, len(f))
		}
		gpus := tresCount(f[3], "gres/gpu")
		start, err := time.ParseInLocation("2006-01-02T15:04:05", f[4], loc)
		if err != nil || gpus == 0 {
			continue // never started, or no GPU
		}
		end := to
		if e, err := time.ParseInLocation("2006-01-02T15:04:05", f[5], loc); err == nil && e.Before(to) {
			end = e
		}
		if start.Before(from) {
			start = from
		}
		if !end.After(start) {
			continue
		}
		k := [2]string{strings.ToLower(f[1]), tierOf(strings.ToLower(f[2]))}
		r := agg[k]
		if r == nil {
			r = &UsageRow{Team: k[0], Tier: k[1]}
			agg[k] = r
		}
		r.Jobs++
		r.GPUHours += float64(gpus) * end.Sub(start).Hours()
	}
	for _, r := range agg {
		u.Rows = append(u.Rows, *r)
	}
	sort.Slice(u.Rows, func(i, j int) bool {
		if u.Rows[i].Team != u.Rows[j].Team {
			return u.Rows[i].Team < u.Rows[j].Team
		}
		return u.Rows[i].Tier < u.Rows[j].Tier
	})
	return u, nil
}

// tresCount reads one TRES's count from "cpu=1,gres/gpu=2,...".
func tresCount(tres, name string) int {
	for _, e := range strings.Split(tres, ",") {
		if k, v, ok := strings.Cut(e, "="); ok && k == name {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// ParseCapacity sums gres/gpu of `scontrol -o show nodes` (CfgTRES).
func ParseCapacity(out string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		for _, w := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(w, "CfgTRES="); ok {
				n += tresCount(v, "gres/gpu")
			}
		}
	}
	return n
}

func (u *Usage) share(h float64) string {
	if c := u.CapacityHours(); c > 0 {
		return fmt.Sprintf("%.1f%%", 100*h/c)
	}
	return "-"
}

// Table writes the report for a human.
func (u *Usage) Table(w io.Writer) {
	fmt.Fprintf(w, "GPU usage from %s to %s: capacity %d GPUs × %.1f h = %.1f GPU-hours\n",
		u.From.Format(time.RFC3339), u.To.Format(time.RFC3339), u.CapacityGPU, u.To.Sub(u.From).Hours(), u.CapacityHours())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TEAM\tTIER\tJOBS\tGPU-HOURS\tOF CAPACITY")
	total, jobs := 0.0, 0
	for _, r := range u.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%s\n", r.Team, r.Tier, r.Jobs, r.GPUHours, u.share(r.GPUHours))
		total += r.GPUHours
		jobs += r.Jobs
	}
	fmt.Fprintf(tw, "total\t\t%d\t%.2f\t%s\n", jobs, total, u.share(total))
	tw.Flush()
}

// CSV writes team,tier,jobs,gpu_hours,share_of_capacity.
func (u *Usage) CSV(w io.Writer) {
	fmt.Fprintln(w, "team,tier,jobs,gpu_hours,share_of_capacity")
	for _, r := range u.Rows {
		s := ""
		if c := u.CapacityHours(); c > 0 {
			s = strconv.FormatFloat(r.GPUHours/c, 'f', 4, 64)
		}
		fmt.Fprintf(w, "%s,%s,%d,%.4f,%s\n", r.Team, r.Tier, r.Jobs, r.GPUHours, s)
	}
}

// tierColors: project blue, general green, spot orange; others grey.
var tierColors = map[string]color.RGBA{
	"project": {0x1f, 0x77, 0xb4, 0xff}, "general": {0x2c, 0xa0, 0x2c, 0xff}, "spot": {0xff, 0x7f, 0x0e, 0xff},
}

// PNG draws one stacked bar per team (in table order), GPU-hours by tier
// in tierColors, scaled to the largest team. No text: the numbers are in
// the table and the CSV.
func (u *Usage) PNG(w io.Writer) error {
	var teams []string
	byTeam := map[string][]UsageRow{}
	max := 0.0
	for _, r := range u.Rows {
		if byTeam[r.Team] == nil {
			teams = append(teams, r.Team)
		}
		byTeam[r.Team] = append(byTeam[r.Team], r)
	}
	for _, t := range teams {
		s := 0.0
		for _, r := range byTeam[t] {
			s += r.GPUHours
		}
		if s > max {
			max = s
		}
	}
	const h, bar, gap, pad = 300, 40, 20, 20
	wid := pad*2 + len(teams)*(bar+gap)
	if wid < 200 {
		wid = 200
	}
	img := image.NewRGBA(image.Rect(0, 0, wid, h))
	fill := func(x0, y0, x1, y1 int, c color.Color) {
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				img.Set(x, y, c)
			}
		}
	}
	fill(0, 0, wid, h, color.White)
	fill(pad, h-pad, wid-pad, h-pad+1, color.Black) // axis
	if max > 0 {
		scale := float64(h-2*pad) / max
		for i, t := range teams {
			x := pad + gap/2 + i*(bar+gap)
			y := h - pad
			for _, r := range byTeam[t] {
				c, ok := tierColors[r.Tier]
				if !ok {
					c = color.RGBA{0x99, 0x99, 0x99, 0xff}
				}
				dy := int(r.GPUHours*scale + 0.5)
				fill(x, y-dy, x+bar, y, c)
				y -= dy
			}
		}
	}
	return png.Encode(w, img)
}
