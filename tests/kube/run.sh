#!/usr/bin/env bash
# tests/kube/run.sh: syncd's Kubernetes pass against a real control plane.
#
# All real, on loopback, in a temp dir: etcd, kube-apiserver (RBAC, static
# token auth whose lines carry groups: they stand in for the IdP's OIDC
# groups claim, prefixed "oidc:" as --oidc-groups-prefix would) and
# kube-controller-manager (namespace, quota, role aggregation, service
# account controllers), built once by tests/kube/binaries.sh. The pass runs
# with the service account and ClusterRole of packaging/kubernetes/rbac.yaml
# only. build/scim-testserver serves tests/kube/fixture.json; build/syncd
# syncs it and runs `syncd kubernetes plan|apply`.
#
#   plan/apply   plan names every change with its reason and writes
#                nothing; apply makes namespaces, RoleBindings, quotas;
#                the second plan is empty
#   hostile      k8s-kube-system, k8s-default, k8s-kube-public, k8s--,
#                reserved ops- and two groups normalising to one name: no
#                namespace, no binding, each refusal named
#   rbac         a user token in the group may create pods in its namespace
#                (kubectl auth can-i and a real pod), not in another, not in
#                default or kube-system; a token without the group may not
#   quota        a pod asking more GPUs than the quota is refused at
#                admission; one within it is admitted
#   drift        a quota edited by hand: plan says drift, apply restores;
#                an admin's own RoleBinding and quota in the namespace stay
#   hands-off    an annotated quota is left alone and named in the plan
#   foreign      a namespace of the mapped name that scimbridge did not
#                create is left alone
#   rename       a group renamed at the source keeps its namespace; the
#                binding follows the new name
#   removal      a group deleted at the source: binding gone, quota 0,
#                namespace and its pod stay; access refused
#   members      bind_members: a token without a groups claim gets access
#                as a user while active, loses it when disabled
#   explain/status  explain USER lists the namespaces; status shows the pass
#   down         API server stopped, or accepting and never answering:
#                sync --once still commits, within the pass's timeout;
#                status shows the failed pass; a world-readable kubeconfig
#                is refused
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"

for b in syncd scim-testserver; do
  [ -f "$BUILD/$b" ] || { bad "missing $BUILD/$b (make all)"; summary; exit 1; }
done
for c in jq curl openssl python3 sqlite3; do
  command -v "$c" > /dev/null || { bad "$c not installed (make deps)"; summary; exit 1; }
done
t_start=$SECONDS
KBIN=$("$HERE/binaries.sh") || { bad "could not build or find kube-apiserver, kube-controller-manager, kubectl, etcd (tests/kube/binaries.sh)"; summary; exit 1; }
echo "  binaries: $KBIN (ready after $((SECONDS - t_start))s)"

T=$(mktemp -d /tmp/scim-kube.XXXXXX)
[ -d "$T" ] || { bad "mktemp"; summary; exit 1; }
chmod 0700 "$T"
PIDS=()
APID=
cleanup() {
  kill_tree "${PIDS[@]}" "$APID"
  left_running "$T"
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$T"
}
on_exit cleanup

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
EP=$(freeport) PP=$(freeport) MP=$(freeport) AP=$(freeport) CP=$(freeport)

# --- control plane ----------------------------------------------------------
mkdir -p "$T/pki"
(
  cd "$T/pki" || exit 1
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=scimbridge-test-ca
  openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj /CN=kube-apiserver
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > san.ext
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 2 -extfile san.ext
  openssl genrsa -out sa.key 2048
  openssl rsa -in sa.key -pubout -out sa.pub
) > "$T/pki.log" 2>&1 || { bad "openssl: $(tail -3 "$T/pki.log")"; summary; exit 1; }

# Static tokens: token,user,uid,"groups". The groups stand in for the
# OIDC groups claim with the API server's --oidc-groups-prefix "oidc:".
tok() { printf 'tok-%s-%s' "$1" "$(openssl rand -hex 12)"; }
ADMIN_TOK=$(tok admin) ALICE_TOK=$(tok alice) BOB_TOK=$(tok bob) CAROL_TOK=$(tok carol)
MALLORY_TOK=$(tok mallory) LANG_TOK=$(tok lang) ERIN_TOK=$(tok erin)
{
  echo "$ADMIN_TOK,admin,u-admin,\"system:masters\""
  echo "$ALICE_TOK,oidc:alice,u-alice,\"oidc:k8s-ml,oidc:kube-users,oidc:k8s-kube-system,oidc:k8s-default\""
  echo "$BOB_TOK,oidc:bob,u-bob,\"oidc:k8s-ml,oidc:k8s-vision\""
  echo "$CAROL_TOK,oidc:carol,u-carol,\"oidc:k8s-nlp\""
  echo "$LANG_TOK,oidc:carol2,u-carol2,\"oidc:k8s-language\""
  echo "$MALLORY_TOK,oidc:mallory,u-mallory,\"oidc:kube-users,oidc:k8s-vision-x\""
  echo "$ERIN_TOK,oidc:erin,u-erin"
} > "$T/tokens.csv"
chmod 0600 "$T/tokens.csv"

"$KBIN/etcd" --name t --data-dir "$T/etcd" --listen-client-urls "http://127.0.0.1:$EP" \
  --advertise-client-urls "http://127.0.0.1:$EP" --listen-peer-urls "http://127.0.0.1:$PP" \
  --initial-advertise-peer-urls "http://127.0.0.1:$PP" --initial-cluster "t=http://127.0.0.1:$PP" \
  --listen-metrics-urls "http://127.0.0.1:$MP" > "$T/etcd.log" 2>&1 &
PIDS+=($!)
waitfor 60 curl -fsS "http://127.0.0.1:$EP/health" || { bad "etcd did not start: $(tail -5 "$T/etcd.log")"; summary; exit 1; }

start_apiserver() {
  "$KBIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$EP" --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 --secure-port="$AP" --endpoint-reconciler-type=none \
    --tls-cert-file="$T/pki/apiserver.crt" --tls-private-key-file="$T/pki/apiserver.key" \
    --token-auth-file="$T/tokens.csv" --authorization-mode=RBAC \
    --service-cluster-ip-range=10.96.0.0/24 --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$T/pki/sa.pub" --service-account-signing-key-file="$T/pki/sa.key" \
    >> "$T/apiserver.log" 2>&1 &
  APID=$!
}
t0=$SECONDS
start_apiserver
K() { "$KBIN/kubectl" --server "https://127.0.0.1:$AP" --certificate-authority "$T/pki/ca.crt" --request-timeout=20s "$@"; }
KA() { K --token "$ADMIN_TOK" "$@"; }
absent_ns() { ! KA get ns "$1" > /dev/null 2>&1; }
waitfor 120 KA get --raw /readyz || { bad "kube-apiserver not ready in 120s: $(tail -5 "$T/apiserver.log")"; summary; exit 1; }
echo "  kube-apiserver ready in $((SECONDS - t0))s"

"$KBIN/kubectl" config --kubeconfig "$T/admin.kubeconfig" set-cluster t --server "https://127.0.0.1:$AP" --certificate-authority "$T/pki/ca.crt" --embed-certs > /dev/null
"$KBIN/kubectl" config --kubeconfig "$T/admin.kubeconfig" set-credentials admin --token "$ADMIN_TOK" > /dev/null
"$KBIN/kubectl" config --kubeconfig "$T/admin.kubeconfig" set-context t --cluster t --user admin > /dev/null
"$KBIN/kubectl" config --kubeconfig "$T/admin.kubeconfig" use-context t > /dev/null
"$KBIN/kube-controller-manager" --kubeconfig="$T/admin.kubeconfig" --leader-elect=false \
  --controllers=namespace-controller,resourcequota-controller,clusterrole-aggregation-controller,garbage-collector-controller,serviceaccount-controller \
  --bind-address=127.0.0.1 --secure-port="$CP" --service-account-private-key-file="$T/pki/sa.key" \
  --root-ca-file="$T/pki/ca.crt" > "$T/kcm.log" 2>&1 &
PIDS+=($!)
edit_ready() { [ -n "$(KA get clusterrole edit -o jsonpath='{.rules}' 2> /dev/null)" ]; }
waitfor 120 edit_ready || { bad "kube-controller-manager did not aggregate the edit ClusterRole: $(tail -5 "$T/kcm.log")"; summary; exit 1; }
echo "  control plane up in $((SECONDS - t0))s"

# --- the pass's credentials: packaging/kubernetes/rbac.yaml only -------------
check "rbac.yaml applies" KA apply -f "$ROOT/packaging/kubernetes/rbac.yaml"
SA_TOK=$(KA -n scimbridge create token scimbridge --duration=2h 2> "$T/token.err")
[ -n "$SA_TOK" ] || bad "kubectl create token: $(cat "$T/token.err")"
KCFG=$T/syncd.kubeconfig
(umask 077
  "$KBIN/kubectl" config --kubeconfig "$KCFG" set-cluster t --server "https://127.0.0.1:$AP" --certificate-authority "$T/pki/ca.crt" --embed-certs
  "$KBIN/kubectl" config --kubeconfig "$KCFG" set-credentials syncd --token "$SA_TOK"
  "$KBIN/kubectl" config --kubeconfig "$KCFG" set-context t --cluster t --user syncd
  "$KBIN/kubectl" config --kubeconfig "$KCFG" use-context t) > /dev/null
chmod 0600 "$KCFG"
SA=system:serviceaccount:scimbridge:scimbridge
expect_eq "the pass's service account may create namespaces" yes "$(KA auth can-i create namespaces --as "$SA" 2> /dev/null)"
expect_eq "... may not read secrets anywhere (least privilege)" no "$(KA auth can-i get secrets -A --as "$SA" 2>&1)"
expect_eq "... may not create pods" no "$(KA auth can-i create pods -n default --as "$SA" 2>&1)"
expect_eq "... may not bind cluster-admin" no "$(KA auth can-i bind clusterroles/cluster-admin --as "$SA" 2> /dev/null)"

# --- SCIM source and syncd -------------------------------------------------
(umask 077; printf 'kube-scim-%s\n' "$(openssl rand -hex 8)" > "$T/scim.token")
"$BUILD/scim-testserver" -fixture "$HERE/fixture.json" -token-file "$T/scim.token" > "$T/scim.url" 2> "$T/scim.log" &
PIDS+=($!)
waitfor 20 test -s "$T/scim.url" || { bad "scim-testserver did not start: $(cat "$T/scim.log")"; summary; exit 1; }
URL=$(head -n1 "$T/scim.url")
ADMIN=${URL%/scim/v2}
CACHE=$T/cache.db
# write_config ENABLED [EXTRA]: syncd.toml with the [kubernetes] table.
write_config() {
  cat > "$T/syncd.toml" <<EOF
base_url = "$URL"
token_file = "$T/scim.token"
preset = "posix"
cache_path = "$CACHE"
status_path = "$T/status.json"
max_retries = 1
request_timeout = "5s"

[kubernetes]
enabled = $1
kubeconfig = "$KCFG"
timeout = "5s"
group_pattern = "^k8s-(.+)$"
groups_prefix = "oidc:"
users_prefix = "oidc:"
reserved_prefixes = ["ops-"]
${2:-}
[kubernetes.quota]
gpus = "1"
cpu = "2"
memory = "2Gi"
pods = "10"

[kubernetes.groups.k8s-vision]
namespace = "cv"
quota = { gpus = "4" }
EOF
  chmod 0600 "$T/syncd.toml"
}
write_config false
syncd() { "$BUILD/syncd" --config "$T/syncd.toml" "$@"; }
check "sync --once commits the fixture" syncd sync --once > "$T/sync1.log" 2>&1

# --- plan / apply ----------------------------------------------------------
syncd kubernetes plan > "$T/plan1.out" 2> "$T/plan1.err"
expect_eq "kubernetes plan exits 0" 0 "$?"
plan_has() { grep -qF -- "$2" "$1"; }
for l in "create   Namespace     ml  # source: group \"k8s-ml\" is mapped (group_pattern) and has no namespace" \
  "create   RoleBinding   ml/scimbridge  # source: ClusterRole edit for group \"k8s-ml\"" \
  "create   ResourceQuota ml/scimbridge  # config: quota of group \"k8s-ml\": pods=10,requests.cpu=2,requests.memory=2Gi,requests.nvidia.com/gpu=1" \
  "create   Namespace     cv  # source: group \"k8s-vision\" is mapped ([kubernetes.groups]) and has no namespace" \
  "create   ResourceQuota cv/scimbridge  # config: quota of group \"k8s-vision\": pods=10,requests.cpu=2,requests.memory=2Gi,requests.nvidia.com/gpu=4" \
  "create   Namespace     nlp  #"; do
  check "plan: $l" plan_has "$T/plan1.out" "$l"
done
for l in 'group "k8s-kube-system": namespace "kube-system" refused: the kube- prefix is reserved' \
  'group "k8s-default": namespace "default" refused' \
  'group "k8s-kube-public": namespace "kube-public" refused' \
  'group "k8s--": nothing of its name is usable' \
  'group "k8s-ops.x": namespace "ops-x" refused: the prefix "ops-" is reserved (reserved_prefixes)' \
  'CONFLICT: groups ["k8s-a.b" "k8s-a_b"] all map to namespace "a-b"'; do
  check "plan refuses, naming why: $l" plan_has "$T/plan1.out" "$l"
done
expect_eq "plan: 9 changes (3 namespaces x namespace, binding, quota), nothing else" 9 "$(grep -cE '^(create|update|delete|recreate) ' "$T/plan1.out")"
check "plan wrote nothing (no namespace ml yet)" absent_ns ml
syncd kubernetes apply > "$T/apply1.out" 2> "$T/apply1.err"
expect_eq "kubernetes apply exits 0" 0 "$?"
check "apply: 9 changes, none failed" grep -q '^# applied 9 change(s), 0 failed' "$T/apply1.out"
expect_eq "namespace ml labelled and annotated with its group" "scimbridge k8s-ml" \
  "$(KA get ns ml -o jsonpath='{.metadata.labels.app\.kubernetes\.io/managed-by} {.metadata.annotations.scimbridge\.io/group}')"
expect_eq "RoleBinding ml/scimbridge binds ClusterRole edit to Group oidc:k8s-ml" "ClusterRole/edit Group:oidc:k8s-ml" \
  "$(KA -n ml get rolebinding scimbridge -o jsonpath='{.roleRef.kind}/{.roleRef.name} {range .subjects[*]}{.kind}:{.name}{end}')"
expect_eq "quota of cv: 4 GPUs (explicit), defaults for the rest" "10 2 2Gi 4" \
  "$(KA -n cv get resourcequota scimbridge -o jsonpath='{.spec.hard.pods} {.spec.hard.requests\.cpu} {.spec.hard.requests\.memory} {.spec.hard.requests\.nvidia\.com/gpu}')"
syncd kubernetes plan > "$T/plan2.out" 2>&1
check "second plan is empty" grep -q '^# nothing to change (3 namespace(s) managed)' "$T/plan2.out"
expect_eq "no namespace for hostile names (a-b, ops-x) and nothing of scimbridge in kube-system, kube-public, default" "" \
  "$(KA get ns a-b ops-x 2> /dev/null; KA get rolebinding,resourcequota -A -l app.kubernetes.io/managed-by=scimbridge --no-headers 2> /dev/null | grep -E '^(kube-|default )')"

# --- RBAC: what a user token in the group may do --------------------------
# The quota limits cpu and memory, so pods state requests.
pod() { # pod NAME GPUS
  local gpu=""
  [ "$2" -gt 0 ] && gpu=", \"nvidia.com/gpu\": \"$2\""
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"100m","memory":"64Mi"%s},"limits":{"cpu":"100m","memory":"64Mi"%s}}}]}}' "$1" "$gpu" "$gpu"
}
quota_ready() { [ -n "$(KA -n "$1" get resourcequota scimbridge -o jsonpath='{.status.hard.pods}' 2> /dev/null)" ]; }
waitfor 60 quota_ready ml && waitfor 60 quota_ready cv || bad "the quota controller never filled in quota status"
sa_ready() { KA -n "$1" get serviceaccount default; }
waitfor 60 sa_ready ml && waitfor 60 sa_ready cv || bad "the service account controller never made the default service accounts"
expect_eq "alice (group k8s-ml): can-i create pods -n ml" yes "$(K --token "$ALICE_TOK" auth can-i create pods -n ml 2>&1)"
expect_eq "alice: can-i create pods -n cv (not her group)" no "$(K --token "$ALICE_TOK" auth can-i create pods -n cv 2>&1)"
expect_eq "alice (claims k8s-kube-system): can-i create pods -n kube-system" no "$(K --token "$ALICE_TOK" auth can-i create pods -n kube-system 2>&1)"
expect_eq "alice (claims k8s-default): can-i create pods -n default" no "$(K --token "$ALICE_TOK" auth can-i create pods -n default 2>&1)"
expect_eq "mallory (no mapped group): can-i create pods -n ml" no "$(K --token "$MALLORY_TOK" auth can-i create pods -n ml 2>&1)"
expect_eq "alice: can-i delete the binding that gives her access (edit has no RBAC)" no "$(K --token "$ALICE_TOK" auth can-i delete rolebindings -n ml 2>&1)"
pod work 0 | K --token "$ALICE_TOK" -n ml create -f - > "$T/pod1.out" 2>&1
expect_eq "alice's pod in ml is created" 0 "$?"
pod nope 0 | K --token "$ALICE_TOK" -n cv create -f - > "$T/pod2.out" 2>&1
check "alice's pod in cv is refused: Forbidden" grep -q 'Forbidden' "$T/pod2.out"
pod nope 0 | K --token "$MALLORY_TOK" -n ml create -f - > "$T/pod3.out" 2>&1
check "mallory's pod in ml is refused: Forbidden" grep -q 'Forbidden' "$T/pod3.out"

# --- GPU quota at admission (no kubelet: the API server admits) -----------
pod greedy 2 | K --token "$ALICE_TOK" -n ml create -f - > "$T/gpu1.out" 2>&1
check "a pod asking 2 GPUs in ml (quota 1) is refused at admission: exceeded quota" grep -q 'exceeded quota: scimbridge.*requests.nvidia.com/gpu' "$T/gpu1.out"
pod one-gpu 1 | K --token "$ALICE_TOK" -n ml create -f - > "$T/gpu2.out" 2>&1
expect_eq "a pod asking 1 GPU in ml is admitted" 0 "$?"
pod two-gpu 2 | K --token "$BOB_TOK" -n cv create -f - > "$T/gpu3.out" 2>&1
expect_eq "bob's pod asking 2 GPUs in cv (quota 4) is admitted" 0 "$?"

# --- drift, an admin's own objects ------------------------------------------
KA -n ml create rolebinding admin-extra --clusterrole=view --user=oidc:auditor > /dev/null
KA -n ml create quota admin-own --hard=configmaps=7 > /dev/null
KA -n ml patch resourcequota scimbridge --type=merge -p '{"spec":{"hard":{"requests.nvidia.com/gpu":"16"}}}' > /dev/null
syncd kubernetes plan > "$T/plan3.out" 2>&1
check "plan names the hand edit as drift" grep -qF 'update   ResourceQuota ml/scimbridge  # drift: edited outside scimbridge: pods=10,requests.cpu=2,requests.memory=2Gi,requests.nvidia.com/gpu=16 -> ' "$T/plan3.out"
expect_eq "drift: one change only" 1 "$(grep -cE '^(create|update|delete|recreate) ' "$T/plan3.out")"
syncd kubernetes apply > "$T/apply3.out" 2>&1
expect_eq "apply undid the drift (1 GPU again)" 1 "$(KA -n ml get resourcequota scimbridge -o jsonpath='{.spec.hard.requests\.nvidia\.com/gpu}')"
expect_eq "an admin's own RoleBinding and quota in ml stay" "admin-extra admin-own" \
  "$(KA -n ml get rolebinding admin-extra -o name | cut -d/ -f2) $(KA -n ml get quota admin-own -o name | cut -d/ -f2)"

# --- hands-off ---------------------------------------------------------------
KA -n ml annotate resourcequota scimbridge scimbridge.io/hands-off=true > /dev/null
KA -n ml patch resourcequota scimbridge --type=merge -p '{"spec":{"hard":{"pods":"3"}}}' > /dev/null
syncd kubernetes plan > "$T/plan4.out" 2>&1
check "hands-off quota: named in the plan" grep -qF 'ResourceQuota ml/scimbridge is hands-off (scimbridge.io/hands-off)' "$T/plan4.out"
syncd kubernetes apply > /dev/null 2>&1
expect_eq "hands-off quota: left at 3 pods" 3 "$(KA -n ml get resourcequota scimbridge -o jsonpath='{.spec.hard.pods}')"
KA -n ml annotate resourcequota scimbridge scimbridge.io/hands-off- > /dev/null
syncd kubernetes apply > /dev/null 2>&1
expect_eq "hands-off removed: the next apply restores 10 pods" 10 "$(KA -n ml get resourcequota scimbridge -o jsonpath='{.spec.hard.pods}')"

# --- a namespace scimbridge did not create ------------------------------------
KA create ns foreign > /dev/null
curl -fsS -X POST "$ADMIN/_admin/groups" -d '{"id":"6b1a0000-0000-4000-9000-000000000099","displayName":"k8s-foreign","gidNumber":32099,"members":["alice"]}' > /dev/null
syncd sync --once > /dev/null 2>&1
syncd kubernetes apply > "$T/apply5.out" 2>&1
check "foreign namespace: the plan says it is left alone" grep -qF 'namespace foreign exists and was not created by scimbridge' "$T/apply5.out"
expect_eq "foreign namespace: no RoleBinding or quota made there" "" "$(KA -n foreign get rolebinding,resourcequota --no-headers 2> /dev/null)"

# --- rename at the source ---------------------------------------------------
curl -fsS -X POST "$ADMIN/_admin/groups" -d '{"id":"6b1a0000-0000-4000-9000-000000000003","displayName":"k8s-language","gidNumber":32003,"members":["carol"]}' > /dev/null
syncd sync --once > /dev/null 2>&1
syncd kubernetes apply > "$T/apply6.out" 2>&1
check "rename: the plan says the namespace is kept" grep -qF 'group "k8s-language" (was "k8s-nlp", same SCIM id) keeps namespace nlp' "$T/apply6.out"
check "rename: no namespace 'language' made" absent_ns language
expect_eq "rename: the binding names the new group" "Group:oidc:k8s-language" \
  "$(KA -n nlp get rolebinding scimbridge -o jsonpath='{range .subjects[*]}{.kind}:{.name}{end}')"
expect_eq "rename: a token with the new group may create pods in nlp" yes "$(K --token "$LANG_TOK" auth can-i create pods -n nlp 2>&1)"
expect_eq "rename: the old group name may not" no "$(K --token "$CAROL_TOK" auth can-i create pods -n nlp 2>&1)"

# --- removal at the source ----------------------------------------------------
curl -fsS -X DELETE "$ADMIN/_admin/groups/k8s-ml" > /dev/null || curl -fsS -X DELETE "$ADMIN/_admin/groups/6b1a0000-0000-4000-9000-000000000001" > /dev/null
syncd sync --once > /dev/null 2>&1
syncd kubernetes plan > "$T/plan7.out" 2>&1
check "removal: plan deletes the binding, naming why" grep -qF 'delete   RoleBinding   ml/scimbridge  # source: group "k8s-ml" is gone from the directory; the namespace and its data stay' "$T/plan7.out"
syncd kubernetes apply > /dev/null 2>&1
expect_eq "removal: namespace ml stays, with alice's pod" "Active work" \
  "$(KA get ns ml -o jsonpath='{.status.phase}') $(KA -n ml get pod work -o jsonpath='{.metadata.name}')"
expect_eq "removal: the quota is 0 for everything it limits" "0 0 0 0" \
  "$(KA -n ml get resourcequota scimbridge -o jsonpath='{.spec.hard.pods} {.spec.hard.requests\.cpu} {.spec.hard.requests\.memory} {.spec.hard.requests\.nvidia\.com/gpu}')"
expect_eq "removal: alice can no longer create pods in ml" no "$(K --token "$ALICE_TOK" auth can-i create pods -n ml 2>&1)"
syncd kubernetes plan > "$T/plan8.out" 2>&1
check "removal: the next plan is empty" grep -q '^# nothing to change' "$T/plan8.out"

# --- bind_members: users without a groups claim ----------------------------
write_config false 'bind_members = true'
syncd kubernetes apply > "$T/apply9.out" 2>&1
expect_eq "bind_members: erin (no groups claim, in no mapped group yet) may not create pods in cv" no "$(K --token "$ERIN_TOK" auth can-i create pods -n cv 2>&1)"
curl -fsS -X POST "$ADMIN/_admin/groups/k8s-vision/members" -d '{"add":["erin"]}' > /dev/null
syncd sync --once > /dev/null 2>&1
syncd kubernetes apply > "$T/apply10.out" 2>&1
expect_eq "bind_members: erin, added to k8s-vision, may create pods in cv as a user" yes "$(K --token "$ERIN_TOK" auth can-i create pods -n cv 2>&1)"
curl -fsS -X POST "$ADMIN/_admin/users/erin/active" -d '{"active": false}' > /dev/null
syncd sync --once > /dev/null 2>&1
syncd kubernetes apply > "$T/apply11.out" 2>&1
check "bind_members: disabling erin removes her from the binding" grep -qF 'remove User:oidc:erin' "$T/apply11.out"
expect_eq "bind_members: disabled erin may not" no "$(K --token "$ERIN_TOK" auth can-i create pods -n cv 2>&1)"

# --- explain, status ----------------------------------------------------------
syncd explain bob > "$T/explain.out" 2>&1
check "explain bob: namespace cv through k8s-vision, bound" grep -qF 'kubernetes: namespace cv (ClusterRole edit through group "k8s-vision"): bound' "$T/explain.out"
syncd explain carol > "$T/explain3.out" 2>&1
check "explain carol: the renamed group's namespace nlp, bound" grep -qF 'kubernetes: namespace nlp (ClusterRole edit through group "k8s-language"): bound' "$T/explain3.out"
syncd explain alice > "$T/explain2.out" 2>&1
check "explain alice: only foreign, and that it is not bound (k8s-ml gone; kube-system, default refused)" \
  grep -qx 'kubernetes: namespace foreign (ClusterRole edit through group "k8s-foreign"): none: the namespace exists and was not created by scimbridge' "$T/explain2.out"
expect_eq "explain alice: one kubernetes line" 1 "$(grep -c '^kubernetes:' "$T/explain2.out")"
syncd status > "$T/status.out" 2>&1
check "status shows the last Kubernetes pass" grep -qE '^kubernetes: +last pass .*: ok; 3 namespace\(s\) managed' "$T/status.out"

# --- syncd run: the pass on its own, metrics ----------------------------------
write_config true
MPORT=$(freeport)
sed -i "1i metrics_listen = \"127.0.0.1:$MPORT\"\npoll_interval = \"5s\"" "$T/syncd.toml"
KA -n cv patch resourcequota scimbridge --type=merge -p '{"spec":{"hard":{"pods":"99"}}}' > /dev/null
"$BUILD/syncd" --config "$T/syncd.toml" run > "$T/daemon.log" 2>&1 &
DPID=$!
PIDS+=("$DPID")
metric() { curl -fsS "http://127.0.0.1:$MPORT/metrics" 2> /dev/null | awk -v m="$1" '$1 == m { print $2 }'; }
drift_undone() { [ "$(KA -n cv get resourcequota scimbridge -o jsonpath='{.spec.hard.pods}')" = 10 ]; }
check "syncd run: the pass undoes drift on its own" waitfor 60 drift_undone
passes_ok() { [ "$(metric 'scimbridge_kubernetes_passes_total{result="ok"}')" -ge 1 ] 2> /dev/null; }
check "syncd run: scimbridge_kubernetes_passes_total{result=\"ok\"} counts the pass" waitfor 30 passes_ok
expect_eq "syncd run: scimbridge_kubernetes_managed_namespaces" 3 "$(metric scimbridge_kubernetes_managed_namespaces)"
check "syncd run: the drift is counted (scimbridge_kubernetes_drift_total >= 1)" [ "$(metric scimbridge_kubernetes_drift_total)" -ge 1 ]
kill_tree "$DPID"
write_config true

# --- the API server down: nothing else waits ---------------------------------
curl -fsS -X POST "$ADMIN/_admin/users/bob/active" -d '{"active": false}' > /dev/null
kill_tree "$APID"; APID=
t0=$(date +%s%N)
syncd sync --once > "$T/down.out" 2>&1
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "API server down: sync --once still commits (exit 0)" 0 "$rc"
echo "  sync --once with the API server down: $ms ms"
expect_eq "API server down: the disable is in the snapshot" 0 "$(sqlite3 "file:$CACHE?mode=ro" "select active from users where name='bob'")"
check "API server down: the pass is bounded (sync --once under 30 s)" [ "$ms" -lt 30000 ]
syncd status > "$T/status2.out" 2>&1
check "API server down: status shows the failed pass" grep -qE '^kubernetes: +last pass .*: failed' "$T/status2.out"
# An API server that accepts connections and never answers: the pass gives
# up after [kubernetes] timeout (5 s here); the commit does not wait longer.
HP=$(freeport)
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16); held = []
while True:
    c, _ = s.accept(); held.append(c)' "$HP" > /dev/null 2>&1 &
PIDS+=($!)
waitfor 20 bash -c "exec 3<> /dev/tcp/127.0.0.1/$HP" || bad "the silent listener did not start"
"$KBIN/kubectl" config --kubeconfig "$KCFG" set-cluster t --server "https://127.0.0.1:$HP" > /dev/null
curl -fsS -X POST "$ADMIN/_admin/users/carol/active" -d '{"active": false}' > /dev/null
t0=$(date +%s%N)
syncd sync --once > "$T/hang.out" 2>&1
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
echo "  sync --once with an API server that never answers: $ms ms"
expect_eq "API server hangs: sync --once commits (exit 0)" 0 "$rc"
expect_eq "API server hangs: carol's disable is in the snapshot" 0 "$(sqlite3 "file:$CACHE?mode=ro" "select active from users where name='carol'")"
check "API server hangs: sync --once returns within 20 s (timeout 5 s)" [ "$ms" -lt 20000 ]
syncd status > "$T/status3.out" 2>&1
check "API server hangs: status shows the failed pass, a timeout" grep -qE '^kubernetes: +error: .*(Client\.Timeout|deadline exceeded|handshake timeout|i/o timeout)' "$T/status3.out"
chmod 0644 "$KCFG"
syncd kubernetes plan > "$T/perm.out" 2>&1
check "a world-readable kubeconfig is refused, naming the fix" grep -q 'mode 0644.*chmod 0600' "$T/perm.out"
syncd check-config > "$T/checkcfg.out" 2>&1
check "check-config names the world-readable kubeconfig" grep -q '^error: \[kubernetes\]: kubeconfig: .*mode 0644' "$T/checkcfg.out"
chmod 0600 "$KCFG"

echo "  suite took $((SECONDS - t_start))s"
summary
