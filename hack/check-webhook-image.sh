#!/usr/bin/env bash
# Builds the nsguard webhook's image from deploy/webhook/Dockerfile with buildah, in
# hack/check-image.sh's storage, and checks it: user, entrypoint, port, its files, and that
# the image's own nsguard runs the webhook command (its help, and the error a Deployment
# without its certificate would log). Needs root (buildah mount); run under the same lock.
# Usage: hack/check-webhook-image.sh [TAG]   (default nsguard-webhook:test)
me=check-webhook-image
tag=${1:-nsguard-webhook:test}
source "$(dirname "${BASH_SOURCE[0]}")/image-lib.sh"

stage bin/image-webhook nsguard ./cmd/nsguard
build deploy/webhook/Dockerfile
check_config /nsguard "9443/tcp "

mount_image
[ "$files" = "./etc/group ./etc/passwd ./nsguard " ] || fail "unexpected files in the image: $files"
[ -z "$(getcap "$mnt/nsguard" 2>/dev/null)" ] || fail "the image's /nsguard has file capabilities"
help=$("$mnt/nsguard" webhook --help 2>&1)
for flag in --kubeconfig --bind-address --secure-port --tls-cert-file --tls-private-key-file --deny; do
	grep -q -- "$flag" <<<"$help" || fail "nsguard webhook --help does not list $flag"
done
set +e
err=$("$mnt/nsguard" webhook 2>&1)
code=$?
set -e
[ "$code" = 2 ] && grep -q -- '--tls-cert-file' <<<"$err" || fail "nsguard webhook without certificates: exit $code: $err"

size=$(inspect '{{.Size}}' 2>/dev/null || true)
echo "$me: ok: $tag user=$user entrypoint=$entrypoint ports=${ports% }${size:+ size=$size}"
