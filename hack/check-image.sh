#!/usr/bin/env bash
# Builds the nsguard CoreDNS image from deploy/Dockerfile with buildah (no daemon,
# no registry) and checks it: user, entrypoint, ports, the binary's file
# capability, CA certificates, and that the image's own coredns lists nsguard.
# Needs root (buildah mount), buildah and libcap2-bin; installs them if missing.
# Usage: hack/check-image.sh [TAG]       (default nsguard-coredns:test)
me=check-image
tag=${1:-nsguard-coredns:test}
source "$(dirname "${BASH_SOURCE[0]}")/image-lib.sh"

# 1. The build stage's input (see deploy/Dockerfile).
dir=bin/image
stage "$dir" coredns ./cmd/coredns
setcap cap_net_bind_service=+ep "$dir/coredns"
mkdir -p "$dir/etc/ssl/certs"
cp /etc/ssl/certs/ca-certificates.crt "$dir/etc/ssl/certs/ca-certificates.crt"
chmod 0644 "$dir/etc/ssl/certs/ca-certificates.crt"

# 2. The image and its configuration.
build deploy/Dockerfile
check_config /coredns "53/tcp 53/udp "

# 3. Its files, on the mounted image; and its own coredns, run on the host.
mount_image
caps=$(getcap "$mnt/coredns")
case "$caps" in
*"cap_net_bind_service=ep"*) ;;
*) fail "getcap of the image's /coredns says \"$caps\", want cap_net_bind_service=ep" ;;
esac
[ -s "$mnt/etc/ssl/certs/ca-certificates.crt" ] || fail "no CA certificates in the image"
grep -q '^nonroot:x:65532:65532:' "$mnt/etc/passwd" || fail "no user 65532 in the image's /etc/passwd"
[ "$files" = "./coredns ./etc/group ./etc/passwd ./etc/ssl/certs/ca-certificates.crt " ] ||
	fail "unexpected files in the image: $files"
plugins=$("$mnt/coredns" -plugins)
grep -qx 'nsguard' <<<"$plugins" || fail "the image's coredns -plugins does not list nsguard"
version=$("$mnt/coredns" -version | sed -n 1p) # sed reads it all: head could SIGPIPE coredns under pipefail
# deploy/ tags the image as this CoreDNS version, which kubeadm upgrade reads from the tag.
want=$(go list -m -f '{{.Version}}' github.com/coredns/coredns)
[ "$version" = "CoreDNS-${want#v}" ] || fail "the image's coredns -version says \"$version\", want CoreDNS-${want#v} (go.mod)"

size=$(inspect '{{.Size}}' 2>/dev/null || true)
echo "$me: ok: $tag ($version) user=$user entrypoint=$entrypoint ports=${ports% } caps=\"${caps#"$mnt"}\" nsguard listed${size:+ size=$size}"
