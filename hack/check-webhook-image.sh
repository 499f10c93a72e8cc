#!/usr/bin/env bash
# Builds the nsguard webhook's image from deploy/webhook/Dockerfile with buildah, in
# hack/check-image.sh's storage, and checks it: user, entrypoint, port, its files, and that
# the image's own nsguard runs the webhook command (its help, and the error a Deployment
# without its certificate would log). Needs root (buildah mount); run under the same lock.
# Usage: hack/check-webhook-image.sh [TAG]   (default nsguard-webhook:test)
set -euo pipefail

tag=${1:-nsguard-webhook:test}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

if [ "$(id -u)" -ne 0 ]; then
	echo "check-webhook-image: needs root (buildah mount of the image)" >&2
	exit 1
fi
command -v buildah >/dev/null 2>&1 || { echo "check-webhook-image: needs buildah (hack/deps.sh installs it)" >&2; exit 1; }
store="${NSGUARD_CACHE:-$HOME/.cache/nsguard}/buildah"
mkdir -p "$store/root" "$store/runroot"
bah() { buildah --root "$store/root" --runroot "$store/runroot" --storage-driver vfs "$@"; }
fail() {
	echo "check-webhook-image: FAIL: $*" >&2
	exit 1
}

stage=bin/image-webhook
rm -rf "$stage"
mkdir -p "$stage/etc"
echo "check-webhook-image: building nsguard (CGO_ENABLED=0, -trimpath)" >&2
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$stage/nsguard" ./cmd/nsguard
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$stage/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$stage/etc/group"
chmod 0755 "$stage/nsguard"
chmod 0644 "$stage/etc/passwd" "$stage/etc/group"

echo "check-webhook-image: buildah bud -f deploy/webhook/Dockerfile -t $tag ." >&2
bah rmi -f "$tag" >/dev/null 2>&1 || true
bah bud --quiet -f deploy/webhook/Dockerfile -t "$tag" . >/dev/null

inspect() { bah inspect --type image --format "$1" "$tag"; }
user=$(inspect '{{.OCIv1.Config.User}}')
entrypoint=$(inspect '{{.OCIv1.Config.Entrypoint}}')
ports=$(inspect '{{range $p, $_ := .OCIv1.Config.ExposedPorts}}{{$p}} {{end}}')
[ "$user" = "65532:65532" ] || fail "user is \"$user\", want 65532:65532"
[ "$entrypoint" = '[/nsguard]' ] || fail "entrypoint is $entrypoint, want [\"/nsguard\"]"
[ "$ports" = "9443/tcp " ] || fail "exposed ports are \"$ports\", want 9443/tcp"

ctr=$(bah from --pull-never "$tag")
cleanup() {
	bah umount "$ctr" >/dev/null 2>&1 || true
	bah rm "$ctr" >/dev/null 2>&1 || true
	bah rmi --prune >/dev/null 2>&1 || true
}
trap cleanup EXIT
mnt=$(bah mount "$ctr")
files=$(cd "$mnt" && find . -type f | sort | tr '\n' ' ')
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
echo "check-webhook-image: ok: $tag user=$user entrypoint=$entrypoint ports=${ports% }${size:+ size=$size}"
