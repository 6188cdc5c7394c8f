#!/usr/bin/env bash
# The idle-nodes measurement of docs/bench/sim.md (issue 26):
#
#   hack/idle-run.sh BIN TAG MEASURE_SECONDS [extra myriad up flags...]
#
# starts BIN up and BIN sim --nodes $NODES (default 10000); after every node
# registered and a 60-s warm-up, samples the server's CPU (utime+stime) and
# RSS every 10 s for MEASURE_SECONDS and the simulator's heartbeat counters
# at both ends, then takes a 60-s CPU profile and a heap profile (PROFILE=0:
# none). Results in $OUT/TAG (default /tmp/idle/TAG): summary.txt,
# samples.txt, metrics.txt (the server's /metrics at the end; the Go
# runtime's memory lines go into summary.txt), cpu.pprof, heap.pprof, the
# logs. PORT and SIMMET choose the server's port and the simulator's
# metrics address. Needs curl and python3.
set -u
BIN=$1; TAG=$2; DUR=$3; shift 3
D=${OUT:-/tmp/idle}/$TAG; rm -rf $D; mkdir -p $D
PORT=${PORT:-46911}; SIMMET=${SIMMET:-127.0.0.1:39111}; NODES=${NODES:-10000}
nice -n 5 $BIN up --data-dir $D/data --secure-port $PORT "$@" >$D/up.log 2>&1 &
UP=$!; echo $UP > $D/up.pid
for i in $(seq 1 120); do [ -f $D/data/kubeconfig ] && break; sleep 1; done
nice -n 5 $BIN sim --kubeconfig $D/data/kubeconfig --nodes $NODES --metrics-address $SIMMET >$D/sim.log 2>&1 &
SIM=$!; echo $SIM > $D/sim.pid
for i in $(seq 1 600); do grep -q "hollow nodes registered in" $D/sim.log 2>/dev/null && break; sleep 1; done
echo "registered after ${i}s" > $D/summary.txt
sleep 60
TCK=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' /proc/$UP/stat; }
rss() { awk '/VmRSS/{print $2}' /proc/$UP/status; }
scpu() { awk '{print $14+$15}' /proc/$SIM/stat; }
hb() { curl -s http://$SIMMET/metrics | awk '/^myriad_sim_lease_renewals_total/{l=$2} /^myriad_sim_node_status_updates_total/{n=$2} END{print l+0, n+0}'; }
h0=$(hb); c0=$(cpu); s0=$(scpu); t0=$(date +%s.%N)
: > $D/samples.txt
end=$(( $(date +%s) + DUR ))
while [ $(date +%s) -lt $end ]; do sleep 10; echo "$(date +%s) $(cpu) $(rss) $(scpu)" >> $D/samples.txt; done
c1=$(cpu); s1=$(scpu); t1=$(date +%s.%N); h1=$(hb)
echo "heartbeats at start (leases status): $h0; at end: $h1" >> $D/summary.txt
python3 - "$c0" "$c1" "$s0" "$s1" "$t0" "$t1" "$TCK" $D/samples.txt >> $D/summary.txt <<'PY'
import sys
c0,c1,s0,s1,t0,t1,tck=map(float,sys.argv[1:8])
rs=[int(l.split()[2]) for l in open(sys.argv[8]) if l.strip()]
el=t1-t0
print(f"server cores {(c1-c0)/tck/el:.3f}  sim cores {(s1-s0)/tck/el:.3f}  over {el:.0f}s")
print(f"server RSS MiB mean {sum(rs)/len(rs)/1024:.0f} max {max(rs)/1024:.0f}")
PY
TOKEN=$(awk '/token:/{print $2; exit}' $D/data/kubeconfig)
curl -sk -H "Authorization: Bearer $TOKEN" -o $D/metrics.txt "https://127.0.0.1:$PORT/metrics"
grep -E '^go_(memstats_(stack_inuse|heap_inuse|heap_alloc|next_gc|sys)_bytes|gc_duration_seconds_count|goroutines) ' $D/metrics.txt >> $D/summary.txt
if [ "${PROFILE:-1}" = 1 ]; then
curl -sk -H "Authorization: Bearer $TOKEN" -o $D/cpu.pprof "https://127.0.0.1:$PORT/debug/pprof/profile?seconds=60"
curl -sk -H "Authorization: Bearer $TOKEN" -o $D/heap.pprof "https://127.0.0.1:$PORT/debug/pprof/heap?gc=1"
fi

tail -3 $D/sim.log >> $D/summary.txt
kill -INT $SIM; sleep 3; kill -INT $UP; wait $SIM $UP 2>/dev/null
cat $D/summary.txt
