#!/usr/bin/env bash
# Runs upstream's [sig-api-machinery] [Conformance] specs (k8s.io/kubernetes
# test/e2e at the version in go.mod) against `myriad up` with three hollow
# nodes, and writes a summary of what passed, failed and was skipped.
#
#   test/conformance/run.sh [report-dir]
#
# Environment:
#   FOCUS        ginkgo focus regex (default: API-machinery conformance specs)
#   EXTRA_SKIP   more regex alternatives to skip, '|'-separated
#   E2E_ARGS     extra arguments for e2e.test
#   PROCS        parallel ginkgo processes (default 8): a failing spec often
#                waits out a 5-minute timeout, so a serial run takes hours.
#                [Serial] specs still run alone, at the end.
#   KEEP=1       leave the data dir (its path is printed)
#
# Manual harness (about 12 minutes, plus a first e2e.test build of several
# minutes); not part of `make test` or .ci/run.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
REPORT_DIR=$(mkdir -p "${1:-$HERE/report}" && cd "${1:-$HERE/report}" && pwd)
FOCUS=${FOCUS:-'\[sig-api-machinery\].*\[Conformance\]'}
PROCS=${PROCS:-8}

# Specs that cannot pass on hollow nodes, which run no containers: each one
# deploys an image that must serve (a webhook, an aggregated API server, a
# conversion webhook) before it tests anything in the API server.
SKIPS=(
	# sample webhook server (agnhost webhook) deployed as a pod and called
	# through a Service.
	'\[sig-api-machinery\] AdmissionWebhook'
	# sample-apiserver deployed as a pod behind an APIService.
	'\[sig-api-machinery\] Aggregator'
	# CRD conversion webhook (agnhost crd-conversion-webhook) deployed as a pod.
	'\[sig-api-machinery\] CustomResourceConversionWebhook'
	# Also deploys the CRD conversion webhook, and upstream's spec returns
	# early (and so passes) when it cannot create its CRD: without the
	# webhook it proves nothing either way.
	'\[sig-api-machinery\] CustomResourceFieldSelectors'
)
SKIP=$(IFS='|'; echo "${SKIPS[*]}")
[ -n "${EXTRA_SKIP:-}" ] && SKIP="$SKIP|$EXTRA_SKIP"

log() { echo "[$(date +%T)] $*" >&2; }

# --- build -------------------------------------------------------------------
log "building myriad"
(cd "$ROOT" && go build -o bin/myriad ./cmd/myriad)
MYRIAD=$ROOT/bin/myriad
if [ ! -x "$HERE/e2e.test" ]; then
	log "building e2e.test (several minutes, several GB of RAM)"
	(cd "$HERE" && nice -n 10 go test -c -o e2e.test k8s.io/kubernetes/test/e2e)
fi
# The ginkgo CLI runs the suite's processes in parallel (e2e.test alone
# cannot: its SynchronizedBeforeSuite needs the CLI's server).
if [ ! -x "$HERE/ginkgo" ]; then
	(cd "$HERE" && go build -o ginkgo github.com/onsi/ginkgo/v2/ginkgo)
fi

# --- cluster -----------------------------------------------------------------
WORK=$(mktemp -d /tmp/myriad-conformance-XXXXXX)
KC=$WORK/data/kubeconfig
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	if [ -z "${KEEP:-}" ]; then rm -rf "$WORK/data"; fi
	log "logs in $WORK"
}
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
log "starting myriad up on 127.0.0.1:$PORT (data dir $WORK/data)"
"$MYRIAD" up --data-dir "$WORK/data" --secure-port "$PORT" >"$WORK/myriad.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 600); do
	[ -f "$KC" ] && kubectl --kubeconfig "$KC" get --raw /readyz >/dev/null 2>&1 && break
	kill -0 "${PIDS[0]}" 2>/dev/null || { tail -50 "$WORK/myriad.log"; exit 1; }
	sleep 0.1
done
kubectl --kubeconfig "$KC" get --raw /readyz >/dev/null

log "starting three hollow nodes"
"$MYRIAD" sim --kubeconfig "$KC" --nodes 3 --status-interval 0 >"$WORK/sim.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 120); do
	[ "$(kubectl --kubeconfig "$KC" get nodes --no-headers 2>/dev/null | wc -l)" -ge 3 ] && break
	sleep 0.5
done
kubectl --kubeconfig "$KC" wait --for=condition=Ready node --all --timeout=60s
# The framework waits for the default ServiceAccount and kube-root-ca.crt in
# every test namespace; make sure their controllers run before it starts.
for _ in $(seq 120); do
	kubectl --kubeconfig "$KC" -n default get serviceaccount default >/dev/null 2>&1 &&
		kubectl --kubeconfig "$KC" -n default get configmap kube-root-ca.crt >/dev/null 2>&1 && break
	sleep 0.5
done
kubectl --kubeconfig "$KC" get nodes -o wide

# --- run ---------------------------------------------------------------------
rm -f "$REPORT_DIR"/junit_*.xml
log "running e2e.test: focus $FOCUS"
log "skip $SKIP"
set +e
# shellcheck disable=SC2086 # E2E_ARGS is split on purpose
"$HERE/ginkgo" \
	--procs="$PROCS" \
	--focus="$FOCUS" \
	--skip="$SKIP" \
	--timeout=60m \
	-v \
	--no-color \
	"$HERE/e2e.test" -- \
	--kubeconfig "$KC" \
	--provider=skeleton \
	--report-dir "$REPORT_DIR" \
	--e2e-output-dir "$REPORT_DIR" \
	--dump-logs-on-failure=false \
	--disable-log-dump \
	${E2E_ARGS:-} \
	2>&1 | tee "$REPORT_DIR/e2e.log"
rc=${PIPESTATUS[0]}
set -e
cp "$WORK/myriad.log" "$WORK/sim.log" "$REPORT_DIR/" 2>/dev/null || true

# --- summary -----------------------------------------------------------------
python3 - "$REPORT_DIR" "$FOCUS" "$SKIP" <<'EOF' | tee "$REPORT_DIR/summary.txt"
import glob, re, sys, xml.etree.ElementTree as ET

report_dir, focus, skip = sys.argv[1], re.compile(sys.argv[2]), re.compile(sys.argv[3])
passed, failed, skipped = [], [], []
for path in sorted(glob.glob(report_dir + "/junit_*.xml")):
    for tc in ET.parse(path).getroot().iter("testcase"):
        name = tc.get("name", "")
        status = tc.get("status", "")
        # Ginkgo lists every spec; keep the ones the focus selected, plus the
        # suite-level nodes if they failed.
        if not focus.search(name):
            if status == "failed" or tc.find("failure") is not None:
                failed.append((name, tc))
            continue
        if status == "passed":
            passed.append((name, tc))
        elif status in ("failed", "panicked", "interrupted", "timedout") or tc.find("failure") is not None or tc.find("error") is not None:
            failed.append((name, tc))
        else:
            skipped.append((name, tc))

def first_line(tc):
    for tag in ("failure", "error"):
        e = tc.find(tag)
        if e is not None:
            msg = (e.get("message") or e.text or "").strip()
            return msg.splitlines()[0][:300] if msg else ""
    return ""

print(f"passed {len(passed)}  failed {len(failed)}  skipped {len(skipped)}")
print("\nFAILED")
for name, tc in sorted(failed, key=lambda x: x[0]):
    print(f"  {name}\n      {first_line(tc)}")
print("\nSKIPPED")
for name, tc in sorted(skipped, key=lambda x: x[0]):
    why = "skip list" if skip.search(name) else "skipped by the suite"
    print(f"  {name}  ({why})")
print("\nPASSED")
for name, _ in sorted(passed, key=lambda x: x[0]):
    print(f"  {name}")
EOF
log "summary in $REPORT_DIR/summary.txt (e2e.test exit $rc)"
exit "$rc"
