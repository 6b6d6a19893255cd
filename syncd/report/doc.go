// Package report builds `syncd report usage`: GPU-hours and CPU-hours per
// team (Slurm account) per tier (QOS) over a window, against capacity.
//
// Decisions:
//
//   - Source: `sacct -X -D -P -n -a --starttime S --endtime E -o
//     JobIDRaw,Account,QOS,AllocTRES,ElapsedRaw,Start,End,State` (one
//     line per allocation, no steps). -D keeps every run of a requeued
//     job (a spot job preempted and requeued used GPUs on each run; without
//     -D sacct shows only the last run and the earlier use is lost, while
//     sreport counts it). -a is needed for root to see everyone's jobs.
//   - Use of a job = its allocated TRES (AllocTRES cpu= and gres/gpu=)
//     times the part of [Start, End] inside the window; End "Unknown" (a
//     running job) is the report's time, which sreport shows only after
//     the next hourly rollup. This is what sreport counts (it cuts jobs
//     at hour boundaries from the same start and end), so the two agree
//     to the second: tests/slurm/usage.sh checks GPU- and CPU-seconds per
//     account against `sreport -t seconds cluster AccountUtilizationByUser
//     -T cpu,gres/gpu` after `sacctmgr rollup`, preempted and requeued
//     spot runs included. Elapsed alone would charge a job that started
//     before the window with all its time. A typed GPU request
//     (gres/gpu:a100=2) is also listed untyped (gres/gpu=2) by Slurm; the
//     untyped count is used, the typed ones summed only when no untyped
//     one is present.
//   - Tier: a QOS named ACCOUNT-project is the team's "project" tier (the
//     name syncd/slurm gives it); any other QOS is its own tier by name
//     (general, spot, normal...). Report rows are per (account, QOS) and
//     carry the tier.
//   - Capacity: the cluster's GPUs (and CPUs) are counted from `scontrol
//     -o show nodes` (Gres=gpu:N, gpu:TYPE:N, CPUTot=N) at the time of the
//     report and multiplied by the window's length: nodes added or removed
//     during the window are not accounted for (said in the output). A
//     team's guarantee is guaranteed_gpus of its group in syncd.toml; for
//     an account the config does not name (pattern-mapped groups) the
//     live project QOS's GrpTRES gres/gpu is used. Guaranteed GPU-hours
//     are guarantee × window hours; the table shows the team's project-tier
//     use and all its use against them.
//   - sacct is its own setting: --sacct, else [slurm] sacct, else sacct
//     from PATH (never derived from where sacctmgr is: a sacctmgr wrapper
//     says nothing about sacct). The cluster is [slurm] cluster (sacct -M)
//     unless --cluster says otherwise.
//   - What counts as a job: every allocation sacct -X lists that started
//     (Start is a time) and ran in the window, including jobs of 0 s (a
//     job, 0 hours), so JOBS matches `sacct -X` for the window; sacct's
//     allocations that never started (cancelled while pending) are counted
//     in a note, not in JOBS. The report prints this definition.
//   - Numbers are kept in seconds internally (GPU-seconds) and printed in
//     hours with two decimals; the CSV and JSON carry both, so a check
//     against `sreport -t seconds` needs no rounding.
//   - The chart (PNG, gonum.org/v1/plot) is one stacked bar per team, one
//     colour per tier, with the team's guaranteed GPU-hours as a marker:
//     a reader sees at a glance who used what tier and who is above or
//     below their guarantee.
package report
