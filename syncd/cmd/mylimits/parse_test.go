package main

import (
	"reflect"
	"testing"
)

func TestParseAssoc(t *testing.T) {
	// As `sacctmgr -nP show assoc format=<assocFields>` prints it on
	// Slurm 22.05: account rows have an empty user; QOS comma-separated.
	out := "lab|physics||normal,gpu|normal|gres/gpu=16|||||||\n" +
		"lab|physics|ada|gpu,normal|normal||||||4|10|2-00:00:00\n" +
		"lab|broken|line\n"
	rows, skipped := parseAssoc(out)
	if skipped != 1 {
		t.Errorf("skipped = %d, want 1", skipped)
	}
	want := []assocRow{
		{Cluster: "lab", Account: "physics", QOS: []string{"normal", "gpu"}, DefaultQOS: "normal",
			Limits: map[string]string{"GrpTRES": "gres/gpu=16"}},
		{Cluster: "lab", Account: "physics", User: "ada", QOS: []string{"gpu", "normal"}, DefaultQOS: "normal",
			Limits: map[string]string{"MaxJobs": "4", "MaxSubmit": "10", "MaxWall": "2-00:00:00"}},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows:\n got %+v\nwant %+v", rows, want)
	}
}

func TestParseQOS(t *testing.T) {
	out := "normal|0|1-00:00:00|cpu=64|||20|100||gpu|cluster|00:00:00\n" +
		"gpu|10|12:00:00|cpu=32,gres/gpu=4|gres/gpu:a100=2|gres/gpu=64|||gres/gpu=16||requeue|00:02:00\n"
	qs, skipped := parseQOS(out)
	if skipped != 0 || len(qs) != 2 {
		t.Fatalf("got %d QOS, %d skipped", len(qs), skipped)
	}
	n, g := qs[0], qs[1]
	if n.Name != "normal" || n.MaxWall != "1-00:00:00" || n.GPUsPerUser != "" || n.MaxJobsPerUser != "20" || n.MaxSubmitPerUser != "100" {
		t.Errorf("normal = %+v", n)
	}
	if g.GPUsPerUser != "4" || g.GPUsPerJob != "a100:2" || g.GPUsTotal != "64" || g.Priority != "10" || g.MaxWall != "12:00:00" {
		t.Errorf("gpu = %+v", g)
	}
	// Tiers: the per-account cap, and who preempts whom, how.
	if g.GPUsPerAccount != "16" || preemptedBy(g) != "normal (requeue after 00:02:00)" || preemptedBy(n) != "-" {
		t.Errorf("tiers: gpu = %+v, preempted by %q; normal preempted by %q", g, preemptedBy(g), preemptedBy(n))
	}
}

func TestGPUCount(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 "",
		"cpu=4":                            "",
		"gres/gpu=0":                       "0",
		"cpu=4,gres/gpu=2,mem=10G":         "2",
		"gres/gpu:a100=2,gres/gpu:v100=4":  "a100:2,v100:4",
		"gres/gpumem=100":                  "",
		"cpu=1,gres/gpu=8,gres/gpu:h100=8": "8,h100:8",
		"license/gres/gpu=3,gres/mps=100":  "",
	} {
		if got := gpuCount(in); got != want {
			t.Errorf("gpuCount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseSqueue(t *testing.T) {
	out := "41|physics|gpu|debug|RUNNING|None|1:02|12:00:00|1|8|gres:gpu:2|train|net\n" +
		"42|physics|gpu|debug|PENDING|QOSMaxGRESPerUser|0:00|12:00:00|1|8|gres:gpu:4|big\n" +
		"43|scim-default|normal|debug|PENDING|Priority|0:00|1:00:00|1|1|N/A|small\n" +
		"garbage\n"
	jobs, skipped := parseSqueue(out)
	if skipped != 1 || len(jobs) != 3 {
		t.Fatalf("got %d jobs, %d skipped", len(jobs), skipped)
	}
	if jobs[0].Name != "train|net" || jobs[0].Why != "" || jobs[0].TRES != "gres:gpu:2" {
		t.Errorf("job 41 = %+v (a '|' in the name must stay in the name)", jobs[0])
	}
	if jobs[1].Reason != "QOSMaxGRESPerUser" || jobs[1].Why == "" {
		t.Errorf("job 42 = %+v: a QOS per-user limit needs an explanation", jobs[1])
	}
	if jobs[2].Why != reasons["Priority"] || jobs[2].TRES != "" {
		t.Errorf("job 43 = %+v", jobs[2])
	}
}

func TestExplainReason(t *testing.T) {
	for code, wantSome := range map[string]bool{
		"Priority": true, "Resources": true, "AssocGrpGRES": true, "QOSMaxWallDurationPerJobLimit": true,
		"QOSGrpCpuLimit": true, "AssocMaxJobsLimit": true, "SomethingNew": false, "None": false,
	} {
		if got := explainReason(code); (got != "") != wantSome {
			t.Errorf("explainReason(%q) = %q", code, got)
		}
	}
}

func TestParseClusterAndDefault(t *testing.T) {
	if c := parseClusterName("AuthType                = auth/munge\nClusterName             = scimlab\n"); c != "scimlab" {
		t.Errorf("cluster = %q", c)
	}
	if d := parseDefaultAccount("ada|physics\nadam|other\n", "ada"); d != "physics" {
		t.Errorf("default = %q", d)
	}
	if d := parseDefaultAccount("adam|other\n", "ada"); d != "" {
		t.Errorf("default of an absent user = %q", d)
	}
}

func TestParseQuota(t *testing.T) {
	out := `Disk quotas for user ada (uid 10001): 
     Filesystem   space   quota   limit   grace   files   quota   limit   grace
      /dev/vdb1   1100M*  1000M   2000M   6days     120       0       0        
nfs.example.com:/export/home     10M   5000M   6000M            4000*   3000    5000   none
`
	qs, none, skipped := parseQuota(out)
	if none || skipped != 0 || len(qs) != 2 {
		t.Fatalf("got %+v none=%v skipped=%d", qs, none, skipped)
	}
	want0 := Quota{Filesystem: "/dev/vdb1", Used: "1100M", Soft: "1000M", Hard: "2000M", Grace: "6days", OverSoft: true,
		Files: "120", FilesSoft: "0", FilesHard: "0"}
	if qs[0] != want0 {
		t.Errorf("line 1:\n got %+v\nwant %+v", qs[0], want0)
	}
	want1 := Quota{Filesystem: "nfs.example.com:/export/home", Used: "10M", Soft: "5000M", Hard: "6000M",
		Files: "4000", FilesSoft: "3000", FilesHard: "5000", FilesGrace: "none", FilesOver: true}
	if qs[1] != want1 {
		t.Errorf("line 2:\n got %+v\nwant %+v", qs[1], want1)
	}

	qs, none, _ = parseQuota("Disk quotas for user bob (uid 10002): none\n")
	if !none || len(qs) != 0 {
		t.Errorf("no quota: got %+v none=%v", qs, none)
	}
}
