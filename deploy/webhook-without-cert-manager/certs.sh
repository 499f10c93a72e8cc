#!/usr/bin/env bash
# Makes the nsguard webhook's TLS without cert-manager: a CA and a serving certificate for
# the webhook's Service, signed by it (openssl); writes them to the Secret nsguard-webhook-tls
# and puts the CA in the ValidatingWebhookConfiguration's caBundle, keeping the CA it held
# before so that Pods still serving the old certificate are trusted until kubelet updates
# their files. Run after kubectl apply -k deploy/webhook-without-cert-manager, and again to
# rotate (the certificates last DAYS days).
#
# Usage: certs.sh [--namespace NS] [--days DAYS] [--dry-run]
#   KUBECTL (default kubectl) and its usual environment (KUBECONFIG) pick the cluster.
set -euo pipefail

namespace=nsguard-system
days=365
dry_run=
while [ $# -gt 0 ]; do
	case "$1" in
	--namespace) namespace=$2; shift 2 ;;
	--namespace=*) namespace=${1#*=}; shift ;;
	--days) days=$2; shift 2 ;;
	--days=*) days=${1#*=}; shift ;;
	--dry-run) dry_run=1; shift ;;
	-h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "certs.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
case "$days" in
'' | *[!0-9]*) echo "certs.sh: --days $days: want a number of days" >&2; exit 2 ;;
esac
kubectl=${KUBECTL:-kubectl}
service=nsguard-webhook
secret=nsguard-webhook-tls
config=nsguard-webhook
command -v openssl >/dev/null || { echo "certs.sh: needs openssl" >&2; exit 1; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"

# The CA, and the serving certificate for the names the API server dials.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$days" \
	-subj "/CN=nsguard-webhook-ca" -keyout ca.key -out ca.crt \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-subj "/CN=$service.$namespace.svc" -keyout tls.key -out tls.csr 2>/dev/null
cat >ext.cnf <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:$service.$namespace.svc,DNS:$service.$namespace.svc.cluster.local
EXT
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
	-extfile ext.cnf -out tls.crt 2>/dev/null
openssl verify -CAfile ca.crt tls.crt >/dev/null

# caBundle: the new CA, then the one the configuration trusted until now, if any.
old=$("$kubectl" get validatingwebhookconfiguration "$config" -o jsonpath='{.webhooks[0].clientConfig.caBundle}')
cp ca.crt bundle.pem
if [ -n "$old" ]; then
	printf '%s' "$old" | base64 -d | awk '/BEGIN CERTIFICATE/{n++} n==1' >>bundle.pem
fi
bundle=$(base64 -w0 bundle.pem)

if [ -n "$dry_run" ]; then
	openssl x509 -in tls.crt -noout -subject -ext subjectAltName -enddate
	echo "certs.sh: --dry-run: caBundle would hold $(grep -c 'BEGIN CERTIFICATE' bundle.pem) certificates; nothing changed"
	exit 0
fi
# Trust first, then the new files: a Pod serving either is trusted throughout.
"$kubectl" patch validatingwebhookconfiguration "$config" --type=json \
	-p "[{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"$bundle\"}]" >/dev/null
"$kubectl" -n "$namespace" create secret tls "$secret" --cert=tls.crt --key=tls.key \
	--dry-run=client -o yaml | "$kubectl" apply -f - >/dev/null
echo "certs.sh: Secret $namespace/$secret and the caBundle of $config updated; the serving certificate expires $(openssl x509 -in tls.crt -noout -enddate | cut -d= -f2)"
