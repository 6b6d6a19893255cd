package homes

import (
	"context"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// GlusterConfig is [homes.quota.gluster]: GlusterFS directory quotas
// (`gluster volume quota VOL limit-usage /dir HARD SOFT%`), enforced by
// the bricks whoever writes, on every client that mounts the volume.
type GlusterConfig struct {
	// Gluster is the CLI (default "gluster" from PATH).
	Gluster string `toml:"gluster"`
	// Volumes maps where a volume is mounted on this host (a home root or
	// the project root) to its name: { "/home" = "homes" }.
	Volumes map[string]string `toml:"volumes"`
}

type glusterDriver struct {
	cfg     GlusterConfig
	run     Runner
	enabled map[string]bool
}

func (d *glusterDriver) Name() string { return "gluster" }

func (d *glusterDriver) volume(t Target) (vol, dir string, err error) {
	mount, vol, ok := rootOf(d.cfg.Volumes, t.Path)
	if !ok {
		return "", "", fmt.Errorf("%s is on no volume in quota.gluster.volumes: add its mount point", t.Path)
	}
	return vol, inVolume(mount, t.Path), nil
}

func (d *glusterDriver) cli(args ...string) []string {
	return append([]string{d.cfg.Gluster, "--mode=script"}, args...)
}

// Lines are the command lines Set runs for t and l.
func (d *glusterDriver) Lines(t Target, l Limit) ([][]string, error) {
	vol, dir, err := d.volume(t)
	if err != nil {
		return nil, err
	}
	if l.Hard == 0 {
		return [][]string{d.cli("volume", "quota", vol, "remove", dir)}, nil
	}
	args := []string{"volume", "quota", vol, "limit-usage", dir, strconv.FormatUint(l.Hard, 10)}
	if p := softPercent(l); p > 0 {
		args = append(args, strconv.Itoa(p)+"%")
	}
	return [][]string{d.cli(args...)}, nil
}

// softPercent is the soft limit as GlusterFS keeps it: a whole percentage
// of the hard limit (1-99; 0: the volume's default-soft-limit).
func softPercent(l Limit) int {
	if l.Soft == 0 || l.Hard == 0 {
		return 0
	}
	p := int(math.Round(float64(l.Soft) * 100 / float64(l.Hard)))
	return min(max(p, 1), 99)
}

// busyRetries bounds call's tries while glusterd is busy with another
// transaction on the volume (its locks are released just after the CLI
// that held them returns, so a list followed at once by a limit-usage
// may meet them: "Another transaction is in progress for homes. Please
// try again after some time.", seen in tests/homes).
const busyRetries = 5

// call runs argv, trying again after 1, 2, 3, 4 s while glusterd says
// another transaction holds the volume, within ctx.
func (d *glusterDriver) call(ctx context.Context, argv []string) (string, error) {
	for try := 1; ; try++ {
		out, err := d.run(ctx, argv)
		if err == nil || try == busyRetries || !glusterBusy(err.Error()) {
			return out, err
		}
		t := time.NewTimer(time.Duration(try) * time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return out, err
		case <-t.C:
		}
	}
}

func glusterBusy(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "another transaction is in progress") || strings.Contains(m, "locking failed")
}

func (d *glusterDriver) Set(ctx context.Context, t Target, l Limit) error {
	lines, err := d.Lines(t, l)
	if err != nil {
		return err
	}
	_, err = d.call(ctx, lines[0])
	if err != nil && quotaOff(err.Error()) {
		vol, _, _ := d.volume(t)
		if _, e := d.call(ctx, d.cli("volume", "quota", vol, "enable")); e != nil && !strings.Contains(e.Error(), "already enabled") {
			return fmt.Errorf("enabling quota on volume %s: %w", vol, e)
		}
		_, err = d.call(ctx, lines[0])
	}
	if err != nil && l.Hard == 0 && strings.Contains(err.Error(), "No such") {
		return nil // no limit to remove
	}
	return err
}

type glusterList struct {
	OpRet    int    `xml:"opRet"`
	OpErrstr string `xml:"opErrstr"`
	Limits   []struct {
		Path      string `xml:"path"`
		Hard      string `xml:"hard_limit"`
		SoftValue string `xml:"soft_limit_value"`
		Used      string `xml:"used_space"`
		SLExceed  string `xml:"sl_exceeded"`
		HLExceed  string `xml:"hl_exceeded"`
	} `xml:"volQuota>limit"`
}

// Usage reads `gluster --xml volume quota VOL list` once per volume.
func (d *glusterDriver) Usage(ctx context.Context, ts []Target) (map[string]Usage, error) {
	byVol := map[string]map[string]string{} // volume -> dir in volume -> target key
	for _, t := range ts {
		vol, dir, err := d.volume(t)
		if err != nil {
			continue
		}
		if byVol[vol] == nil {
			byVol[vol] = map[string]string{}
		}
		byVol[vol][dir] = t.Key()
	}
	out := map[string]Usage{}
	for vol, dirs := range byVol {
		txt, err := d.call(ctx, append([]string{d.cfg.Gluster, "--mode=script", "--xml"}, "volume", "quota", vol, "list"))
		if err != nil && !strings.Contains(txt, "<cliOutput>") {
			return out, err
		}
		var l glusterList
		if err := xml.Unmarshal([]byte(txt), &l); err != nil {
			return out, fmt.Errorf("gluster volume quota %s list: %w", vol, err)
		}
		if l.OpRet != 0 {
			if quotaOff(l.OpErrstr) || strings.Contains(l.OpErrstr, "No quota configured") {
				continue // no limits yet: Set enables it
			}
			return out, fmt.Errorf("gluster volume quota %s list: %s", vol, l.OpErrstr)
		}
		for _, e := range l.Limits {
			key, ok := dirs[e.Path]
			if !ok {
				continue
			}
			u := Usage{OverSoft: e.SLExceed == "Yes", OverHard: e.HLExceed == "Yes"}
			u.Hard, _ = strconv.ParseUint(e.Hard, 10, 64)
			u.Soft, _ = strconv.ParseUint(e.SoftValue, 10, 64)
			u.Used, _ = strconv.ParseUint(e.Used, 10, 64)
			out[key] = u
		}
	}
	return out, nil
}

// sameLimit: does the storage's u already hold l (GlusterFS keeps the soft
// limit as a percentage of the hard one)?
func sameLimit(driver Driver, u Usage, l Limit) bool {
	if u.Hard != l.Hard {
		return false
	}
	if _, ok := driver.(*glusterDriver); ok && l.Soft != 0 {
		want := uint64(math.Round(float64(l.Hard) * float64(softPercent(l)) / 100))
		return absDiff(u.Soft, want) <= l.Hard/100+1
	}
	return l.Soft == 0 || u.Soft == l.Soft
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// quotaOff: GlusterFS says quota is not on for the volume ("Quota is
// disabled, please enable quota"; older: "... not enabled").
func quotaOff(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "not enabled") || strings.Contains(m, "quota is disabled")
}
