package report

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

const stamp = "2006-01-02 15:04 MST"

// Table prints the report for people.
func Table(w io.Writer, u *Usage) error {
	bw := bufio.NewWriter(w)
	where := "this cluster"
	if u.Cluster != "" {
		where = "cluster " + u.Cluster
	}
	fmt.Fprintf(bw, "Usage on %s from %s to %s (%.1f h)\n", where, u.Since.Local().Format(stamp), u.Until.Local().Format(stamp), u.Hours)
	if u.ClusterGPUs > 0 || u.ClusterCPUs > 0 {
		fmt.Fprintf(bw, "Capacity: %d GPUs = %.2f GPU-h, %d CPUs = %.2f CPU-h; used %.2f GPU-h (%s), %.2f CPU-h (%s)\n",
			u.ClusterGPUs, u.GPUHoursCapacity, u.ClusterCPUs, u.CPUHoursCapacity,
			u.GPUHours, pct(u.GPUHours, u.GPUHoursCapacity), u.CPUHours, pct(u.CPUHours, u.CPUHoursCapacity))
	}

	fmt.Fprintf(bw, "Counted: %s.\n", Counts)
	if u.NeverStarted > 0 {
		fmt.Fprintf(bw, "Not counted: %d allocation(s) sacct lists that never started (cancelled while pending; no hours).\n", u.NeverStarted)
	}
	fmt.Fprintln(bw, "\nBy team and tier")
	if len(u.Rows) == 0 {
		fmt.Fprintln(bw, "  (no job ran in the window)")
	} else {
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TEAM\tQOS\tTIER\tJOBS\tGPU-H\tCPU-H\t% CLUSTER GPU-H")
		for _, r := range u.Rows {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%.2f\t%.2f\t%s\n", r.Account, r.QOS, r.Tier, r.Jobs, r.GPUHours, r.CPUHours, pct(r.GPUHours, u.GPUHoursCapacity))
		}
		tw.Flush()
	}

	fmt.Fprintln(bw, "\nBy team against its guarantee")
	if len(u.Teams) == 0 {
		fmt.Fprintln(bw, "  (none)")
	} else {
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TEAM\tJOBS\tGPU-H\tCPU-H\tGUARANTEED GPUS\tGUARANTEED GPU-H\tPROJECT GPU-H\t% OF GUARANTEE\tALL GPU-H % OF GUARANTEE\t% CLUSTER GPU-H")
		for _, t := range u.Teams {
			g, gh, pp, ap := "-", "-", "-", "-"
			if t.GuaranteeFrom != "" {
				g = strconv.Itoa(t.GuaranteedGPUs)
				gh = fmt.Sprintf("%.2f", t.GuaranteedGPUHours)
				pp, ap = pct(t.ProjectGPUHour, t.GuaranteedGPUHours), pct(t.GPUHours, t.GuaranteedGPUHours)
			}
			fmt.Fprintf(tw, "  %s\t%d\t%.2f\t%.2f\t%s\t%s\t%.2f\t%s\t%s\t%s\n", t.Account, t.Jobs, t.GPUHours, t.CPUHours,
				g, gh, t.ProjectGPUHour, pp, ap, pct(t.GPUHours, u.GPUHoursCapacity))
		}
		tw.Flush()
	}
	if len(u.Notes) > 0 {
		fmt.Fprintln(bw, "\nNotes")
		for _, n := range u.Notes {
			fmt.Fprintf(bw, "  - %s\n", n)
		}
	}
	return bw.Flush()
}

func pct(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*a/b)
}

// CSVHeader is the first line of the CSV.
// Team and tier come first and GPU-hours fourth ("ml,project,ml-project,
// 1.5000,..."), so `grep ^ml,project,` and `cut -d, -f4` work; the exact
// seconds follow for checks against sreport -t seconds.
var CSVHeader = []string{"account", "tier", "qos", "gpu_hours", "cpu_hours", "jobs", "gpu_seconds", "cpu_seconds",
	"guaranteed_gpus", "guaranteed_gpu_hours", "cluster_gpus", "cluster_gpu_hours", "since", "until"}

// CSV writes one line per (team, tier) row; the team's guarantee and the
// cluster's capacity are repeated on each line so any line stands alone.
func CSV(w io.Writer, u *Usage) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	guar := map[string]Team{}
	for _, t := range u.Teams {
		guar[t.Account] = t
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }
	for _, r := range u.Rows {
		t := guar[r.Account]
		cw.Write([]string{r.Account, r.Tier, r.QOS, f(r.GPUHours), f(r.CPUHours), strconv.Itoa(r.Jobs),
			strconv.FormatInt(r.GPUSeconds, 10), strconv.FormatInt(r.CPUSeconds, 10),
			strconv.Itoa(t.GuaranteedGPUs), f(t.GuaranteedGPUHours), strconv.Itoa(u.ClusterGPUs), f(u.GPUHoursCapacity),
			u.Since.UTC().Format(time.RFC3339), u.Until.UTC().Format(time.RFC3339)})
	}
	cw.Flush()
	return cw.Error()
}

// JSON writes the report as indented JSON.
func JSON(w io.Writer, u *Usage) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(u)
}
