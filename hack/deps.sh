#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo need, and only those that are missing.
set -euo pipefail

# package:command, or package:/path of a file, that proves it is there
wanted=(
  musl-tools:musl-gcc
  libc-ares-dev:/usr/include/ares.h
  dnsutils:dig
  dnsperf:dnsperf
  util-linux:unshare
  iproute2:ip
  gcc:gcc
  buildah:buildah
  libcap2-bin:setcap
  openssl:openssl # deploy/webhook-without-cert-manager/certs.sh
  iptables:iptables
  # the e2e node: a CRI runtime, its OCI runtime, the CNI plugins, and conntrack for kube-proxy
  containerd:containerd
  runc:runc
  containernetworking-plugins:/usr/lib/cni/bridge
  conntrack:conntrack
  # the caches a refusal passes through (test/e2e/rfc8020_test.go); dnsmasq-base is the
  # program without the system service
  dnsmasq-base:/usr/sbin/dnsmasq
  unbound:/usr/sbin/unbound
)

missing=()
for w in "${wanted[@]}"; do
  pkg=${w%%:*} cmd=${w#*:}
  if [[ $cmd == /* ]]; then
    [ -e "$cmd" ] || missing+=("$pkg")
  else
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "missing Debian packages: ${missing[*]}" >&2
  echo "run as root, or install them first: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
# Where an init system starts Unbound's service on install, stop it: it would hold port 53 on
# localhost, and the tests run their own.
if [[ " ${missing[*]} " == *" unbound "* ]] && command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet unbound 2>/dev/null; then
  systemctl disable --now unbound >/dev/null 2>&1 || true
fi
