#!/usr/bin/env bash
# Starts `myriad up` and N upstream kubemark hollow nodes (the real v1.34
# kubelet over a fake container runtime) joined to it, and waits until the
# nodes are Ready. With a command after `--`, runs it with KUBECONFIG set to
# the admin kubeconfig and stops everything when it exits; without one,
# keeps the cluster up until interrupted.
#
#   test/kubemark/run.sh                    # 3 nodes, until Ctrl-C
#   NODES=5 test/kubemark/run.sh -- kubectl get nodes -o wide
#
# Environment:
#   NODES       number of kubemark nodes (default 3)
#   WORK        working directory (default: a new /tmp/myriad-kubemark-XXXXXX)
#   KEEP=1      leave the data dir (logs are always left in WORK)
#   MYRIAD      myriad binary (default: build bin/myriad)
#   KUBEMARK    kubemark binary (default: build test/kubemark/kubemark)
#   AUDIT=1     write an audit log (level Metadata) to WORK/audit.log, to
#               see every request the kubelets send and the code it got;
#               AUDIT=Request or RequestResponse logs bodies too
#   KUBEMARK_V  kubelet log verbosity (default 2)
#   MYRIAD_ARGS more flags for `myriad up`, space-separated
#
#   JOIN        how nodes get credentials: "bootstrap" (TLS bootstrap with a
#               bootstrap token from `myriad kubeconfig --bootstrap`; the
#               default when myriad has that flag) or "cert" (a node client
#               certificate from `myriad kubeconfig --node NAME`)
#
# Each node runs as its own process with its own identity
# (system:node:NAME in system:nodes), so the Node authorizer and
# NodeRestriction see exactly what a real kubelet sends.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
NODES=${NODES:-3}
if [ "${1:-}" = "--" ]; then shift; fi

log() { echo "[$(date +%T)] $*" >&2; }

# --- build -------------------------------------------------------------------
if [ -z "${MYRIAD:-}" ]; then
	log "building myriad"
	(cd "$ROOT" && go build -o bin/myriad ./cmd/myriad)
	MYRIAD=$ROOT/bin/myriad
fi
if [ -z "${KUBEMARK:-}" ]; then
	KUBEMARK=$HERE/kubemark
	if [ ! -x "$KUBEMARK" ]; then
		log "building kubemark (a few minutes the first time)"
		(cd "$HERE" && nice -n 10 go build -ldflags "$(./ldflags.sh)" -o kubemark k8s.io/kubernetes/cmd/kubemark)
	fi
fi

# --- cluster -----------------------------------------------------------------
WORK=${WORK:-$(mktemp -d /tmp/myriad-kubemark-XXXXXX)}
mkdir -p "$WORK"
KC=$WORK/data/kubeconfig
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	if [ -z "${KEEP:-}" ]; then rm -rf "$WORK/data" "$WORK"/tmp-*; fi
	log "logs in $WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

PORT=$(freeport)
AUDIT_ARGS=()
if [ -n "${AUDIT:-}" ]; then
	level=$AUDIT
	[ "$level" = 1 ] && level=Metadata
	printf 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: %s\n' "$level" >"$WORK/audit-policy.yaml"
	AUDIT_ARGS=(--audit-policy-file "$WORK/audit-policy.yaml" --audit-log-path "$WORK/audit.log")
fi
log "starting myriad up on 127.0.0.1:$PORT (data dir $WORK/data)"
# shellcheck disable=SC2086 # MYRIAD_ARGS is split on purpose
"$MYRIAD" up --data-dir "$WORK/data" --secure-port "$PORT" "${AUDIT_ARGS[@]}" ${MYRIAD_ARGS:-} >"$WORK/myriad.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 600); do
	[ -f "$KC" ] && kubectl --kubeconfig "$KC" get --raw /readyz >/dev/null 2>&1 && break
	kill -0 "${PIDS[0]}" 2>/dev/null || { tail -50 "$WORK/myriad.log"; exit 1; }
	sleep 0.1
done
kubectl --kubeconfig "$KC" get --raw /readyz >/dev/null

if [ -z "${JOIN:-}" ]; then
	JOIN=cert
	case $("$MYRIAD" kubeconfig --help 2>&1 || true) in *-bootstrap*) JOIN=bootstrap ;; esac
fi
CRED_ARGS=()
if [ "$JOIN" = bootstrap ]; then
	"$MYRIAD" kubeconfig --data-dir "$WORK/data" --bootstrap \
		--server "https://127.0.0.1:$PORT" -o "$WORK/bootstrap.kubeconfig"
fi

log "starting $NODES kubemark nodes (credentials: $JOIN)"
for i in $(seq 0 $((NODES - 1))); do
	name=kubemark-$i
	if [ "$JOIN" = bootstrap ]; then
		# The kubelet asks for its client certificate with a CSR and
		# writes --kubeconfig itself.
		CRED_ARGS=(--bootstrap-kubeconfig="$WORK/bootstrap.kubeconfig" --cert-dir="$WORK/certs-$name")
	else
		"$MYRIAD" kubeconfig --data-dir "$WORK/data" --node "$name" \
			--server "https://127.0.0.1:$PORT" -o "$WORK/$name.kubeconfig"
	fi
	# kubemark puts the kubelet's root dir, pod manifests and pod logs in a
	# fresh directory under TMPDIR: one per node, removed with the data dir.
	mkdir -p "$WORK/tmp-$name"
	# Every node listens on its own kubelet and read-only ports (the kubelet
	# binds 0.0.0.0); the healthz port (127.0.0.1:10248) is shared, and only
	# the first node's healthz server binds it: the kubelet logs the others'
	# failures and goes on.
	TMPDIR=$WORK/tmp-$name "$KUBEMARK" \
		--morph=kubelet \
		--use-host-image-service=false \
		--name="$name" \
		--kubeconfig="$WORK/$name.kubeconfig" "${CRED_ARGS[@]}" \
		--kubelet-port="$(freeport)" \
		--kubelet-read-only-port=0 \
		--v="${KUBEMARK_V:-2}" \
		>"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
done

for _ in $(seq 240); do
	[ "$(kubectl --kubeconfig "$KC" get nodes --no-headers 2>/dev/null | wc -l)" -ge "$NODES" ] && break
	sleep 0.5
done
kubectl --kubeconfig "$KC" wait --for=condition=Ready node --all --timeout="${READY_TIMEOUT:-120s}"
kubectl --kubeconfig "$KC" get nodes -o wide

if [ $# -gt 0 ]; then
	KUBECONFIG=$KC "$@"
else
	log "cluster up: KUBECONFIG=$KC (Ctrl-C stops it)"
	while :; do sleep 3600; done
fi
