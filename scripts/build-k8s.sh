#!/usr/bin/env bash
# Builds the Kubernetes control plane the tests run against (etcd, kube-apiserver,
# kube-controller-manager, kubectl) from the modules pinned in tools/k8s/go.mod, and prints the
# directory holding the four binaries on standard output (nothing else goes there).
#
#   scripts/build-k8s.sh
#
# - The binaries go to a cache outside the repository, keyed by the pinned versions and a hash
#   of tools/k8s/go.mod, go.sum and this script:
#   ${KINFER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kinfer}/k8s/<k8s>-etcd-<etcd>-<hash>/.
#   A complete directory is reused as it is; a build is written beside it and renamed into
#   place, so an interrupted build never leaves a half directory that looks complete.
# - Concurrent callers (test binaries run in parallel) wait for one build on a lock file.
# - Needs Go (1.26, GOTOOLCHAIN=local: no toolchain download) and the Go module proxy; the
#   module and build caches are Go's own (GOMODCACHE, GOCACHE), also outside the repository.
# - Static binaries (CGO_ENABLED=0), version stamped as the Kubernetes release build stamps it.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
module="$root/tools/k8s"

# The version a module is required at in tools/k8s/go.mod.
required() { awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$module/go.mod"; }
k8s=$(required k8s.io/kubernetes)
etcd=$(required go.etcd.io/etcd/server/v3)
[ -n "$k8s" ] && [ -n "$etcd" ] || { echo "build-k8s: no pinned versions in $module/go.mod" >&2; exit 1; }
hash=$(cat "$module/go.mod" "$module/go.sum" "$0" | sha256sum | cut -c1-12)
cache_root="${KINFER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kinfer}/k8s"
out="$cache_root/$k8s-etcd-$etcd-$hash"
binaries=(etcd kube-apiserver kube-controller-manager kubectl)

complete() {
    for b in "${binaries[@]}"; do [ -x "$out/$b" ] || return 1; done
}
if complete; then echo "$out"; exit 0; fi

mkdir -p "$cache_root"
exec 9>"$out.lock"
flock 9
if complete; then echo "$out"; exit 0; fi

command -v go >/dev/null 2>&1 || {
    echo "build-k8s: the real control plane is built with Go 1.26, and 'go' is not on PATH" >&2
    exit 1
}

# The Kubernetes release stamps these (hack/lib/version.sh); a 1.34 server refuses to start
# with the unstamped default (its emulation version would be v0.0).
minor=${k8s#v1.}
minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean"
done

tmp=$(mktemp -d "$out.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
started=$(date +%s)
echo "build-k8s: building Kubernetes $k8s and etcd $etcd into $out (cold: about 5 minutes on 2 cores)" >&2
(
    cd "$module"
    export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=readonly
    go build -trimpath -ldflags "$ldflags" -o "$tmp/" tool
) >&2
# The etcd module's main package is its module root: go names the binary after "server".
mv "$tmp/server" "$tmp/etcd"
for b in "${binaries[@]}"; do
    [ -x "$tmp/$b" ] || { echo "build-k8s: $b was not built" >&2; exit 1; }
done
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "build-k8s: built in $(( $(date +%s) - started )) s" >&2
echo "$out"
