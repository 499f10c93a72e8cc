#!/usr/bin/env bash
# Builds the control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler), the node (kubelet, kube-proxy) and kubectl from tools/ into a
# cache outside the work tree and prints the bin directory as the last line of stdout.
# Usage: BIN=$(hack/build-tools.sh)
set -euo pipefail

K8S_VERSION=v1.37.2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sum=$(sha256sum "$root/tools/go.sum" | cut -c1-12)
dir="${NSGUARD_CACHE:-$HOME/.cache/nsguard}/k8s-${K8S_VERSION}-${sum}"
bin="$dir/bin"
tools=(kube-apiserver kubectl etcd kube-controller-manager kube-scheduler kubelet kube-proxy)

have_all() {
	local t
	for t in "${tools[@]}"; do [[ -x "$bin/$t" ]] || return 1; done
}

if have_all; then
	echo "$bin"
	exit 0
fi

mkdir -p "$dir"
# Parallel callers (several test packages) must not build twice.
exec 9>"$dir/.lock"
flock 9
if have_all; then
	echo "$bin"
	exit 0
fi

# Build into a scratch dir and rename, so an interrupted build never looks complete.
tmp=$(mktemp -d "$dir/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "building ${tools[*]} ${K8S_VERSION} into $bin (cold: ~7-13 CPU-minutes, 2.5 GB RSS)" >&2
start=$SECONDS
# Without the -X flags /version is unparsable and kubectl complains; etcd ignores them.
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${K8S_VERSION}"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"
(cd "$root/tools" && go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${tools[@]/#/./}") >&2
chmod 755 "$tmp"
rm -rf "$bin"
mv "$tmp" "$bin"
echo "built in $((SECONDS - start))s" >&2
echo "$bin"
