package report

import (
	"fmt"
	"image/color"
	"io"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// tierOrder puts the three tiers of the design first, others after by
// name: the stack reads project at the bottom, then general, then spot.
func tierOrder(tiers map[string]bool) []string {
	fixed := []string{"project", "general", "spot"}
	var out []string
	for _, t := range fixed {
		if tiers[t] {
			out = append(out, t)
		}
	}
	var rest []string
	for t := range tiers {
		if t != "project" && t != "general" && t != "spot" {
			rest = append(rest, t)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// PNG draws one stacked bar per team (GPU-hours, one colour per tier)
// with the team's guaranteed GPU-hours as a marker, and writes it as PNG.
// With no GPU use at all it charts CPU-hours instead (and says so).
func PNG(w io.Writer, u *Usage) error {
	p := plot.New()
	where := "this cluster"
	if u.Cluster != "" {
		where = u.Cluster
	}
	useGPU := u.GPUSeconds > 0
	unit := "GPU-hours"
	if !useGPU {
		unit = "CPU-hours (no GPU use in the window)"
	}
	p.Title.Text = fmt.Sprintf("%s per team and tier on %s, %s to %s", unit, where,
		u.Since.Local().Format("2006-01-02 15:04"), u.Until.Local().Format("2006-01-02 15:04"))
	p.Y.Label.Text = unit
	p.X.Label.Text = "team (Slurm account)"
	p.Legend.Top = true

	teams := make([]string, 0, len(u.Teams))
	idx := map[string]int{}
	for _, t := range u.Teams {
		idx[t.Account] = len(teams)
		teams = append(teams, t.Account)
	}
	if len(teams) == 0 {
		teams = append(teams, "(no jobs)")
	}
	tiers := map[string]bool{}
	for _, r := range u.Rows {
		tiers[r.Tier] = true
	}
	width := vg.Points(float64(360) / float64(len(teams)+1))
	if width > vg.Points(60) {
		width = vg.Points(60)
	}
	var below *plotter.BarChart
	for i, tier := range tierOrder(tiers) {
		vals := make(plotter.Values, len(teams))
		for _, r := range u.Rows {
			if r.Tier != tier {
				continue
			}
			if useGPU {
				vals[idx[r.Account]] += r.GPUHours
			} else {
				vals[idx[r.Account]] += r.CPUHours
			}
		}
		bar, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return fmt.Errorf("report: chart: %w", err)
		}
		bar.Color = plotutil.Color(i)
		bar.LineStyle.Width = vg.Length(0.5)
		if below != nil {
			bar.StackOn(below)
		}
		below = bar
		p.Add(bar)
		p.Legend.Add("tier "+tier, bar)
	}
	if useGPU {
		var pts plotter.XYs
		for _, t := range u.Teams {
			if t.GuaranteeFrom != "" {
				pts = append(pts, plotter.XY{X: float64(idx[t.Account]), Y: t.GuaranteedGPUHours})
			}
		}
		if len(pts) > 0 {
			s, err := plotter.NewScatter(pts)
			if err != nil {
				return fmt.Errorf("report: chart: %w", err)
			}
			s.GlyphStyle.Shape = draw.BoxGlyph{}
			s.GlyphStyle.Radius = vg.Points(5)
			s.GlyphStyle.Color = color.Black
			p.Add(s)
			p.Legend.Add("guaranteed GPU-hours", s)
		}
	}
	p.Add(plotter.NewGrid())
	p.NominalX(teams...)
	// Room around the outer bars, and above the highest bar or marker
	// for the legend.
	p.X.Min, p.X.Max = -0.6, float64(len(teams))-0.4
	p.Y.Min = 0
	if p.Y.Max > 0 {
		p.Y.Max *= 1.25
	} else {
		p.Y.Max = 1
	}
	wt, err := p.WriterTo(9*vg.Inch, 5*vg.Inch, "png")
	if err != nil {
		return fmt.Errorf("report: chart: %w", err)
	}
	_, err = wt.WriteTo(w)
	return err
}
