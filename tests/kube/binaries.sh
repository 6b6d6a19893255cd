#!/usr/bin/env bash
# tests/kube/binaries.sh: prints the directory holding kube-apiserver,
# kube-controller-manager, kubectl and etcd, building them once if needed.
#
# The binaries are the real upstream ones, built from the Go module proxy
# (measured recipe: /work/shared/notes/kubernetes.md in the lab; the README's
# Kubernetes section). They are cached outside the repository, keyed by
# version, so a second run costs nothing:
#   ${KUBE_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/scimbridge-kube}/k8s-v1.37.2-etcd-v3.7.0/bin
# KUBE_BIN_DIR=DIR uses binaries found elsewhere (all four must be there,
# kube-apiserver must report the expected version).
#
# Cost of a cold build on 2 cores: about 7-8 minutes and 2.9 GB peak memory
# (kube-apiserver ~5 min, kube-controller-manager ~2 min, kubectl ~25 s,
# etcd ~30 s); one binary is built at a time so memory stays at one
# link's worth. Output of the build goes to stderr; stdout is only the path.
set -euo pipefail
K8S_VERSION=${K8S_VERSION:-v1.37.2}
STAGING_VERSION=v0.${K8S_VERSION#v1.}
ETCD_VERSION=${ETCD_VERSION:-v3.7.0}

need() {
  for b in kube-apiserver kube-controller-manager kubectl etcd; do
    [ -x "$1/$b" ] || return 1
  done
}

if [ -n "${KUBE_BIN_DIR:-}" ]; then
  need "$KUBE_BIN_DIR" || { echo "binaries.sh: KUBE_BIN_DIR=$KUBE_BIN_DIR lacks one of kube-apiserver kube-controller-manager kubectl etcd" >&2; exit 1; }
  v=$("$KUBE_BIN_DIR/kube-apiserver" --version 2>/dev/null | awk '{print $2}')
  [ "$v" = "$K8S_VERSION" ] || { echo "binaries.sh: $KUBE_BIN_DIR/kube-apiserver is $v, the tests want $K8S_VERSION (client-go's minor); unset KUBE_BIN_DIR to build it" >&2; exit 1; }
  echo "$KUBE_BIN_DIR"; exit 0
fi

cache=${KUBE_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/scimbridge-kube}
dir=$cache/k8s-$K8S_VERSION-etcd-$ETCD_VERSION
bin=$dir/bin
if need "$bin"; then echo "$bin"; exit 0; fi

mkdir -p "$dir" "$bin"
# One builder at a time (two suites, or a suite and a manual run).
exec 9>"$dir/.lock"
if ! flock -w 3600 9; then echo "binaries.sh: another build holds $dir/.lock for over an hour" >&2; exit 1; fi
if need "$bin"; then echo "$bin"; exit 0; fi

export GOFLAGS=-mod=mod GOWORK=off GO111MODULE=on
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
ld="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1"
ld="$ld -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"

# k8s.io/kubernetes replaces its staging modules with local paths, so
# `go install ...@version` refuses it; a scratch module that replaces each
# with its published copy builds the real commands.
k8s=$dir/k8s
if [ ! -f "$k8s/go.sum" ]; then
  rm -rf "$k8s"; mkdir -p "$k8s"
  {
    echo "module scimbridge.local/kubebuild"
    echo "go 1.25"
    echo "require k8s.io/kubernetes $K8S_VERSION"
    for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider \
             cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api \
             cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt \
             kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics \
             mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller streaming; do
      echo "replace k8s.io/$m => k8s.io/$m $STAGING_VERSION"
    done
  } >"$k8s/go.mod"
  cat >"$k8s/tools.go" <<'EOF'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
EOF
  echo "binaries.sh: resolving k8s.io/kubernetes $K8S_VERSION modules" >&2
  (cd "$k8s" && go mod tidy -e >&2) || { rm -f "$k8s/go.sum"; exit 1; }
fi
for cmd in kubectl kube-controller-manager kube-apiserver; do
  [ -x "$bin/$cmd" ] && continue
  echo "binaries.sh: building $cmd $K8S_VERSION ($(date -u +%T))" >&2
  t0=$SECONDS
  (cd "$k8s" && go build -trimpath -ldflags="$ld" -o "$bin/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd" >&2)
  mv "$bin/$cmd.tmp" "$bin/$cmd"
  echo "binaries.sh: $cmd built in $((SECONDS - t0))s" >&2
done

if [ ! -x "$bin/etcd" ]; then
  e=$dir/etcd
  mkdir -p "$e"
  if [ ! -f "$e/go.sum" ]; then
    printf 'module scimbridge.local/etcdbuild\ngo 1.25\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$e/go.mod"
    printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$e/tools.go"
    (cd "$e" && go mod tidy -e >&2) || { rm -f "$e/go.sum"; exit 1; }
  fi
  echo "binaries.sh: building etcd $ETCD_VERSION" >&2
  t0=$SECONDS
  (cd "$e" && go build -trimpath -ldflags="-s -w" -o "$bin/etcd.tmp" go.etcd.io/etcd/server/v3 >&2)
  mv "$bin/etcd.tmp" "$bin/etcd"
  echo "binaries.sh: etcd built in $((SECONDS - t0))s" >&2
fi
need "$bin"
echo "$bin"
