package slurm

import (
	"bytes"
	"image/png"
	"strings"
	"testing"
	"time"
)

func TestUsage(t *testing.T) {
	from := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	to := from.Add(10 * time.Hour)
	out := "1|ml|ml-project|billing=2,cpu=2,gres/gpu=2,node=1|2026-11-30T11:00:00|2026-11-30T12:30:00\n" + // 2 GPUs × 1.5 h
		"2|ml|spot|cpu=1,gres/gpu=8|2026-11-30T09:00:00|2026-11-30T11:00:00\n" + // clipped: 8 × 1 h
		"3|ml|general|cpu=1,gres/gpu=1|2026-11-30T19:00:00|Unknown\n" + // running: 1 × 1 h
		"4|chem|normal|cpu=4|2026-11-30T11:00:00|2026-11-30T12:00:00\n" + // no GPU
		"5|chem|chem-project|gres/gpu=4|Unknown|Unknown\n" // never started
	u, err := ParseUsage(out, from, to, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	u.CapacityGPU = 8
	var b bytes.Buffer
	u.CSV(&b)
	want := "team,tier,jobs,gpu_hours,share_of_capacity\nml,general,1,1.0000,0.0125\nml,project,1,3.0000,0.0375\nml,spot,1,8.0000,0.1000\n"
	if b.String() != want {
		t.Errorf("CSV:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	u.Table(&b)
	if !strings.Contains(b.String(), "capacity 8 GPUs × 10.0 h = 80.0 GPU-hours") || !strings.Contains(b.String(), "12.00") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	if err := u.PNG(&b); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil || img.Bounds().Dx() < 100 {
		t.Fatalf("png: %v", err)
	}
	if ParseCapacity("NodeName=vm CfgTRES=cpu=16,mem=24105M,billing=16,gres/gpu=8 x\nNodeName=b CfgTRES=cpu=2,gres/gpu=4\n") != 12 {
		t.Error("capacity")
	}
}
