# tests/slurm/lint.sh: sourced at the end of tests/slurm/run.sh. slurmctld
# is restarted on a slurm.conf without the settings caps and tiers need;
# `syncd slurm plan` must name each one with the line to add.

TIERS_TOP='project_qos = ["Priority=100"]'
TIERS_TABLES='
[slurm.qos_settings]
general = ["GrpTRES=gres/gpu=6", "MaxTRESPerAccount=gres/gpu=3", "MaxWall=3-0", "Preempt=spot"]
spot = ["MaxWall=1-0", "PreemptMode=requeue", "GraceTime=5"]'
config false
PLAN=$(syncd slurm plan 2>/dev/null)
if grep -q '^# LINT' <<<"$PLAN"; then bad "lint on the full lab config:"; grep '^# LINT' <<<"$PLAN"; else ok "lint: nothing flagged on the lab's full slurm.conf"; fi

kill "$(cat "$SLURM_LAB_DIR/run/slurmctld.pid")"
for _ in $(seq 60); do [ -s "$SLURM_LAB_DIR/run/slurmctld.pid" ] && kill -0 "$(cat "$SLURM_LAB_DIR/run/slurmctld.pid" 2>/dev/null)" 2>/dev/null || break; sleep 0.5; done
t0=$EPOCHREALTIME
if scim_ns "$ST" env SLURM_LAB_PLUGSTACK="required $BUILD/spank_scim.so cache=$CACHE" SLURM_LAB_GPUS=8 SLURM_LAB_CPUS=16 \
     SLURM_LAB_CONF_EXTRA='AccountingStorageEnforce=associations' \
     SLURM_LAB_CONF_DROP='^AccountingStorageTRES=|^AccountingStorageEnforce=associations,limits,qos' \
     "$HERE/up.sh" > "$T/up-lint.log" 2>&1; then
  ok "slurmctld restarted without AccountingStorageTRES, limits/qos enforcement, preemption and GPU defaults in $(secs "$t0")s"
else bad "slurmctld restart for the lint:"; tail -5 "$T/up-lint.log"; fi
# Re-running up.sh to restart one daemon must leave slurmd's spool as
# slurmd made it (0755): at 0700 every non-root batch job fails with
# "Permission denied".
expect_eq "slurmd spool mode after an up.sh re-run" 755 "$(stat -c %a "$SLURM_LAB_DIR/spool/d")"
# A tier with Priority= on the lab's PriorityType=priority/basic (the
# default, which usage.sh checks mylimits reports): the priority does
# nothing there, and the lint says so.
TIERS_TABLES=${TIERS_TABLES/'"MaxWall=3-0", "Preempt=spot"'/'"MaxWall=3-0", "Preempt=spot", "Priority=50"'}
config false
PLAN=$(syncd slurm plan 2>/dev/null)
for want in \
  '# LINT: QOS general set Priority= but PriorityType is "priority/basic": QOS priority counts only under priority/multifactor, so these tiers'"'"' jobs start in submit order like any other' \
  "#   PriorityType=priority/multifactor (and PriorityWeightQOS=<weight>)" \
  "# LINT: AccountingStorageTRES lacks gres/gpu: every gres/gpu cap in this plan (GrpTRES, MaxTRES..., the landing account's 0 GPUs) is stored but NOT enforced" \
  "# LINT: AccountingStorageEnforce lacks limits,qos: jobs run without an association, and account/QOS limits are NOT enforced" \
  '# LINT: a tier preempts (Preempt= on a QOS) but PreemptType is "preempt/none": no job is ever preempted' \
  "# LINT: a tier preempts but PreemptMode is OFF: preemption is disabled cluster-wide" \
  "# LINT: DefMemPerGPU is unset: a GPU job without --mem gets the partition's default memory, not a share per GPU" \
  "# LINT: DefCpuPerGPU is unset: a GPU job without -c gets one CPU however many GPUs it takes" \
  "#   AccountingStorageTRES=gres/gpu" \
  "#   AccountingStorageEnforce=associations,limits,qos" \
  "#   PreemptType=preempt/qos"; do
  grep -qxF -- "$want" <<<"$PLAN" && ok "lint: $want" || { bad "lint lacks: $want"; grep '^#' <<<"$PLAN" | head -20; }
done
TIERS_TOP= TIERS_TABLES=
config false
