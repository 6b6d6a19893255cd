package main

// Report is everything mylimits prints; the JSON form is this struct.
// Empty lists are kept (as []) so scripts need no null checks.
type Report struct {
	User string `json:"user"`
	UID  uint32 `json:"uid"`
	// InSnapshot is true when the user is a SCIM user of the snapshot;
	// false for local accounts (root, service users).
	InSnapshot bool `json:"in_snapshot"`
	// Active is false for a user disabled at the identity provider.
	Active   bool          `json:"active"`
	Snapshot *SnapshotInfo `json:"snapshot,omitempty"`
	Cluster  string        `json:"cluster,omitempty"`
	// PreemptType and PreemptMode are slurm.conf's: whether Slurm
	// preempts at all (preempt/none, or PreemptMode=OFF, never does).
	PreemptType string    `json:"preempt_type,omitempty"`
	PreemptMode string    `json:"preempt_mode,omitempty"`
	Accounts    []Account `json:"accounts"`
	QOS         []QOS     `json:"qos"`
	// Tiers: every QOS of every account, with its tier, walltime,
	// preemption, GPU caps and the GPUs in use now against each.
	Tiers []TierCap `json:"tiers"`
	// UseKnown is false when the running jobs could not be read (the
	// in-use counts are then 0 for want of facts, not measured).
	UseKnown bool `json:"use_known"`
	// FairShare per association (sshare); FairShareNote says why there
	// is none (fair-share not used by this cluster's scheduler).
	FairShare     []FairShare `json:"fair_share"`
	FairShareNote string      `json:"fair_share_note,omitempty"`
	Jobs          []Job       `json:"jobs"`
	Quota         []Quota     `json:"quota"`
	// Storage: home and project use against their limits, from the
	// storage's quota tools as syncd's homes pass last read them.
	Storage []Storage `json:"storage"`
	Notes   []string  `json:"notes"`
}

// SnapshotInfo says how old the identity data is.
type SnapshotInfo struct {
	Path      string `json:"path"`
	Serial    string `json:"serial,omitempty"`
	CreatedAt string `json:"created_at,omitempty"`
	// SlurmSyncedAt is when syncd last read the associations back.
	SlurmSyncedAt string `json:"slurm_synced_at,omitempty"`
	// Associations is how many the snapshot records (its meta).
	Associations int `json:"associations"`
}

// Account is one of the user's Slurm associations.
type Account struct {
	Name       string   `json:"name"`
	Default    bool     `json:"default"`
	QOS        []string `json:"qos"`
	DefaultQOS string   `json:"default_qos,omitempty"`
	// Blocked: the association is being removed; no new jobs.
	Blocked bool `json:"blocked"`
	// From says where the association was seen: "snapshot", "slurm"
	// or "snapshot+slurm".
	From string `json:"from"`
	// AccountLimits are the account's own limits (shared by all its
	// users), UserLimits the limits on this user's association; both
	// keyed by sacctmgr field name (GrpTRES, MaxWall, ...).
	AccountLimits map[string]string `json:"account_limits,omitempty"`
	UserLimits    map[string]string `json:"user_limits,omitempty"`
	// GPUs of running jobs in the account now: everyone's (against the
	// account's GrpTRES) and yours.
	TeamGPUsInUse int64 `json:"team_gpus_in_use"`
	YourGPUsInUse int64 `json:"your_gpus_in_use"`
}

// QOS is one QOS tier the user may submit with.
type QOS struct {
	Name     string `json:"name"`
	Priority string `json:"priority,omitempty"`
	MaxWall  string `json:"max_wall,omitempty"`
	// MaxTRESPerUser, MaxTRESPerJob and GrpTRES as sacctmgr prints them
	// ("cpu=64,gres/gpu=4"); GPUsPerUser/GPUsPerJob/GPUsTotal pull the
	// GPU count out of them ("" when uncapped).
	MaxTRESPerUser   string `json:"max_tres_per_user,omitempty"`
	MaxTRESPerJob    string `json:"max_tres_per_job,omitempty"`
	GrpTRES          string `json:"grp_tres,omitempty"`
	GPUsPerUser      string `json:"gpus_per_user,omitempty"`
	GPUsPerJob       string `json:"gpus_per_job,omitempty"`
	GPUsTotal        string `json:"gpus_total,omitempty"`
	MaxJobsPerUser   string `json:"max_jobs_per_user,omitempty"`
	MaxSubmitPerUser string `json:"max_submit_per_user,omitempty"`
	// Tiers: the per-account cap (a team's share of a general pool), and
	// whether jobs here can be preempted, by which QOS, with what grace.
	MaxTRESPerAccount string   `json:"max_tres_per_account,omitempty"`
	GPUsPerAccount    string   `json:"gpus_per_account,omitempty"`
	Preempt           []string `json:"preempts,omitempty"`
	PreemptedBy       []string `json:"preempted_by,omitempty"`
	PreemptMode       string   `json:"preempt_mode,omitempty"`
	GraceTime         string   `json:"grace_time,omitempty"`
}

// Job is one of the user's jobs in squeue.
type Job struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Account   string `json:"account"`
	QOS       string `json:"qos"`
	Partition string `json:"partition"`
	State     string `json:"state"`
	// Reason is Slurm's reason code for a pending job ("None" when
	// running); Why explains it in words when mylimits knows the code.
	Reason    string `json:"reason"`
	Why       string `json:"why,omitempty"`
	TimeUsed  string `json:"time_used"`
	TimeLimit string `json:"time_limit"`
	Nodes     string `json:"nodes"`
	CPUs      string `json:"cpus"`
	TRES      string `json:"tres,omitempty"`
}

// Quota is one line of quota(1): usage and limits on one filesystem.
// Sizes are as quota -s prints them ("1024M"); "0" limits mean none.
type Quota struct {
	Filesystem string `json:"filesystem"`
	Used       string `json:"used"`
	Soft       string `json:"soft"`
	Hard       string `json:"hard"`
	Grace      string `json:"grace,omitempty"`
	OverSoft   bool   `json:"over_soft"`
	Files      string `json:"files"`
	FilesSoft  string `json:"files_soft"`
	FilesHard  string `json:"files_hard"`
	FilesGrace string `json:"files_grace,omitempty"`
	FilesOver  bool   `json:"files_over_soft"`
}
