#!/usr/bin/env bash
# Builds the nsguard CoreDNS image from deploy/Dockerfile with buildah (no daemon,
# no registry) and checks it: user, entrypoint, ports, the binary's file
# capability, CA certificates, and that the image's own coredns lists nsguard.
# Needs root (buildah mount), buildah and libcap2-bin; installs them if missing.
# Usage: hack/check-image.sh [TAG]       (default nsguard-coredns:test)
set -euo pipefail

tag=${1:-nsguard-coredns:test}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

if [ "$(id -u)" -ne 0 ]; then
	echo "check-image: needs root (buildah mount of the image)" >&2
	exit 1
fi
missing=()
command -v buildah >/dev/null 2>&1 || missing+=(buildah)
command -v setcap >/dev/null 2>&1 || missing+=(libcap2-bin)
[ -r /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
if [ ${#missing[@]} -gt 0 ]; then
	echo "check-image: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# A storage of our own, with vfs: no overlay or fuse needed, and nothing shared
# with other buildah or podman users of this machine.
store="${NSGUARD_CACHE:-$HOME/.cache/nsguard}/buildah"
mkdir -p "$store/root" "$store/runroot"
bah() { buildah --root "$store/root" --runroot "$store/runroot" --storage-driver vfs "$@"; }

fail() {
	echo "check-image: FAIL: $*" >&2
	exit 1
}

# 1. The build stage's input (see deploy/Dockerfile): built by the host toolchain.
stage=bin/image
rm -rf "$stage"
mkdir -p "$stage/etc/ssl/certs"
echo "check-image: building coredns (CGO_ENABLED=0, -trimpath)" >&2
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$stage/coredns" ./cmd/coredns
setcap cap_net_bind_service=+ep "$stage/coredns"
cp /etc/ssl/certs/ca-certificates.crt "$stage/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$stage/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$stage/etc/group"
chmod 0755 "$stage/coredns"
chmod 0644 "$stage/etc/passwd" "$stage/etc/group" "$stage/etc/ssl/certs/ca-certificates.crt"

# 2. The image.
echo "check-image: buildah bud -f deploy/Dockerfile -t $tag ." >&2
bah rmi -f "$tag" >/dev/null 2>&1 || true # the last run's, so the store does not grow
bah bud --quiet -f deploy/Dockerfile -t "$tag" . >/dev/null

# 3. Its configuration.
inspect() { bah inspect --type image --format "$1" "$tag"; }
user=$(inspect '{{.OCIv1.Config.User}}')
entrypoint=$(inspect '{{.OCIv1.Config.Entrypoint}}')
ports=$(inspect '{{range $p, $_ := .OCIv1.Config.ExposedPorts}}{{$p}} {{end}}')
[ "$user" = "65532:65532" ] || fail "user is \"$user\", want 65532:65532"
[ "$entrypoint" = '[/coredns]' ] || fail "entrypoint is $entrypoint, want [\"/coredns\"]"
[ "$ports" = "53/tcp 53/udp " ] || fail "exposed ports are \"$ports\", want 53/tcp 53/udp"

# 4. Its files, on the mounted image; and its own coredns, run on the host.
ctr=$(bah from --pull-never "$tag")
cleanup() {
	bah umount "$ctr" >/dev/null 2>&1 || true
	bah rm "$ctr" >/dev/null 2>&1 || true
	bah rmi --prune >/dev/null 2>&1 || true # dangling images of earlier runs
}
trap cleanup EXIT
mnt=$(bah mount "$ctr")
caps=$(getcap "$mnt/coredns")
case "$caps" in
*"cap_net_bind_service=ep"*) ;;
*) fail "getcap of the image's /coredns says \"$caps\", want cap_net_bind_service=ep" ;;
esac
[ -s "$mnt/etc/ssl/certs/ca-certificates.crt" ] || fail "no CA certificates in the image"
grep -q '^nonroot:x:65532:65532:' "$mnt/etc/passwd" || fail "no user 65532 in the image's /etc/passwd"
files=$(cd "$mnt" && find . -type f | sort | tr '\n' ' ')
[ "$files" = "./coredns ./etc/group ./etc/passwd ./etc/ssl/certs/ca-certificates.crt " ] ||
	fail "unexpected files in the image: $files"
plugins=$("$mnt/coredns" -plugins)
grep -qx 'nsguard' <<<"$plugins" || fail "the image's coredns -plugins does not list nsguard"
version=$("$mnt/coredns" -version | sed -n 1p) # sed reads it all: head could SIGPIPE coredns under pipefail
# deploy/ tags the image as this CoreDNS version, which kubeadm upgrade reads from the tag.
want=$(go list -m -f '{{.Version}}' github.com/coredns/coredns)
[ "$version" = "CoreDNS-${want#v}" ] || fail "the image's coredns -version says \"$version\", want CoreDNS-${want#v} (go.mod)"

size=$(inspect '{{.Size}}' 2>/dev/null || true)
echo "check-image: ok: $tag ($version) user=$user entrypoint=$entrypoint ports=${ports% } caps=\"${caps#"$mnt"}\" nsguard listed${size:+ size=$size}"
