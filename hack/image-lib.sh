# Sourced by hack/check-image.sh and hack/check-webhook-image.sh: what building and checking
# either image shares. The caller sets $me (its name in messages) and $tag.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

fail() {
	echo "$me: FAIL: $*" >&2
	exit 1
}

if [ "$(id -u)" -ne 0 ]; then
	echo "$me: needs root (buildah mount of the image)" >&2
	exit 1
fi
missing=()
command -v buildah >/dev/null 2>&1 || missing+=(buildah)
command -v setcap >/dev/null 2>&1 || missing+=(libcap2-bin)
[ -r /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
if [ ${#missing[@]} -gt 0 ]; then
	echo "$me: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# A storage of our own, with vfs: no overlay or fuse needed, and nothing shared
# with other buildah or podman users of this machine.
store="${NSGUARD_CACHE:-$HOME/.cache/nsguard}/buildah"
mkdir -p "$store/root" "$store/runroot"
bah() { buildah --root "$store/root" --runroot "$store/runroot" --storage-driver vfs "$@"; }

# stage DIR BINARY PACKAGE: the Dockerfile's input, built by the host toolchain, with a
# passwd and group that name the nonroot user 65532.
stage() {
	rm -rf "$1"
	mkdir -p "$1/etc"
	echo "$me: building $2 (CGO_ENABLED=0, -trimpath)" >&2
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$1/$2" "$3"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$1/etc/passwd"
	printf 'root:x:0:\nnonroot:x:65532:\n' >"$1/etc/group"
	chmod 0755 "$1/$2"
	chmod 0644 "$1/etc/passwd" "$1/etc/group"
}

# build DOCKERFILE, then check_config ENTRYPOINT PORTS: the image and its configuration.
build() {
	echo "$me: buildah bud -f $1 -t $tag ." >&2
	bah rmi -f "$tag" >/dev/null 2>&1 || true # the last run's, so the store does not grow
	bah bud --quiet -f "$1" -t "$tag" . >/dev/null
}
inspect() { bah inspect --type image --format "$1" "$tag"; }
check_config() {
	user=$(inspect '{{.OCIv1.Config.User}}')
	entrypoint=$(inspect '{{.OCIv1.Config.Entrypoint}}')
	ports=$(inspect '{{range $p, $_ := .OCIv1.Config.ExposedPorts}}{{$p}} {{end}}')
	[ "$user" = "65532:65532" ] || fail "user is \"$user\", want 65532:65532"
	[ "$entrypoint" = "[$1]" ] || fail "entrypoint is $entrypoint, want [\"$1\"]"
	[ "$ports" = "$2" ] || fail "exposed ports are \"$ports\", want ${2% }"
}

# mount_image: the image's files at $mnt, until the script exits.
mount_image() {
	ctr=$(bah from --pull-never "$tag")
	trap cleanup EXIT
	mnt=$(bah mount "$ctr")
	files=$(cd "$mnt" && find . -type f | sort | tr '\n' ' ')
}
cleanup() {
	bah umount "$ctr" >/dev/null 2>&1 || true
	bah rm "$ctr" >/dev/null 2>&1 || true
	bah rmi --prune >/dev/null 2>&1 || true # dangling images of earlier runs
}
