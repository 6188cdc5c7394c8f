#!/usr/bin/env bash
# Issue 26's density profiles (docs/bench/loadtest.md, History 2026-11-26):
#
#   hack/density-profile.sh BIN OUT NODES PODS_PER_NODE PROFILE_SECONDS [extra myriad up flags...]
#
# Starts `BIN up` on OUT/data, runs `BIN bench density` against it with a
# CPU profile of the bench process (OUT/bench.pprof), takes a server CPU
# profile of PROFILE_SECONDS from when the Deployments are being created
# (OUT/server.pprof; 0 for none), and keeps the server's /metrics at the
# end (OUT/metrics.end). Then:
#
#   hack/profile-buckets.py BIN OUT/server.pprof [more profiles...]
set -u
BIN=$1 OUT=$2 NODES=$3 PPN=$4 SECS=$5
shift 5
PORT=${PORT:-16443}
D=$OUT/data
rm -rf "$OUT"; mkdir -p "$D"
uptime > "$OUT/uptime.before"
nice -n 5 "$BIN" up --data-dir "$D" --secure-port "$PORT" --log-level warn "$@" > "$OUT/server.log" 2>&1 &
SP=$!
for _ in $(seq 1 240); do [ -f "$D/kubeconfig" ] && break; sleep 0.5; done
TOKEN=$(awk '/token:/ {print $2; exit}' "$D/kubeconfig")
get() { curl -sk -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$PORT$1"; }
for _ in $(seq 1 240); do get /readyz | grep -q ok && break; sleep 0.5; done
nice -n 5 "$BIN" bench density --kubeconfig "$D/kubeconfig" --server-pid "$SP" --nodes "$NODES" --pods-per-node "$PPN" \
	--out "$OUT" --cpuprofile "$OUT/bench.pprof" > "$OUT/bench.out" 2> "$OUT/bench.err" &
BP=$!
for _ in $(seq 1 1200); do grep -q "create deployments" "$OUT/bench.err" 2>/dev/null && break; sleep 0.25; done
if [ "$SECS" -gt 0 ]; then get "/debug/pprof/profile?seconds=$SECS" > "$OUT/server.pprof"; fi
wait $BP
get /metrics > "$OUT/metrics.end"
uptime > "$OUT/uptime.after"
kill $SP; wait $SP
