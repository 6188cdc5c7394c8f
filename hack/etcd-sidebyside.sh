#!/usr/bin/env bash
# Issue 23's side-by-side benchmarks (docs/etcd.md), on a quiet machine:
#
#   hack/etcd-sidebyside.sh [OUT]
#
# for the embedded store, one etcd member and three members: pod creates,
# reads and lease renewals at 200,000 pods (bench api), restart to ready
# at 200,000 pods (bench restart) and density 1,000x30; then density on
# one member with events and leases in a second etcd (sharding). Builds
# bin/myriad and bin/etcd (go.mod's etcd). Results in OUT (default
# /tmp/etcd-sidebyside): one report per run; the log says what ran when.
# About 35 minutes.
set -u
cd "$(dirname "$0")/.."
go build -o bin/myriad ./cmd/myriad && go build -o bin/etcd go.etcd.io/etcd/server/v3 || exit 1
M=$PWD/bin/myriad
E=$PWD/bin/etcd
OUT=${1:-/tmp/etcd-sidebyside}
WORK=$(mktemp -d)
mkdir -p $OUT
stop_etcd() { # and wait until the members are gone: their ports are reused
  pkill -f "$E --name"
  for _ in $(seq 1 60); do pgrep -f "$E --name" >/dev/null || break; sleep 0.5; done
  rm -rf $WORK/etcd-data-*
}
start_etcd() { # $1 = members (1 or 3), $2 = port base (default 2379)
  stop_etcd
  local n=$1 base=${2:-2379} cluster="" urls=""
  for i in $(seq 1 $n); do
    cport=$((base + (i-1)*10000)); pport=$((cport + 1))
    cluster="${cluster:+$cluster,}m$i=http://127.0.0.1:$pport"
    urls="${urls:+$urls,}http://127.0.0.1:$cport"
  done
  for i in $(seq 1 $n); do
    cport=$((base + (i-1)*10000)); pport=$((cport + 1))
    $E --name m$i --data-dir $WORK/etcd-data-$base-$i --quota-backend-bytes=8589934592 \
      --listen-client-urls http://127.0.0.1:$cport --advertise-client-urls http://127.0.0.1:$cport \
      --listen-peer-urls http://127.0.0.1:$pport --initial-advertise-peer-urls http://127.0.0.1:$pport \
      --initial-cluster "$cluster" --initial-cluster-state new --log-level warn > $WORK/etcd-$base-$i.log 2>&1 &
  done
  # A fresh three-member cluster needs a leader before it takes writes.
  for u in ${urls//,/ }; do
    for _ in $(seq 1 60); do curl -sf $u/health | grep -q '"health":"true"' && break; sleep 0.5; done
  done
  ETCD_URLS=$urls
}
run() { echo "=== $(date -u +%H:%M:%S) $*"; "$@" > $OUT/last.log 2>&1; echo "rc=$? $(date -u +%H:%M:%S)"; tail -3 $OUT/last.log | tr '\r' '\n' | tail -3; }

for cfg in embedded etcd1 etcd3; do
  flags=(); sflags=()
  case $cfg in
    etcd1) start_etcd 1; flags=(--storage etcd --etcd-servers $ETCD_URLS); sflags=(--server-flag=--storage=etcd --server-flag=--etcd-servers=$ETCD_URLS);;
    etcd3) start_etcd 3; flags=(--storage etcd --etcd-servers $ETCD_URLS); sflags=(--server-flag=--storage=etcd --server-flag=--etcd-servers=$ETCD_URLS);;
  esac
  run $M bench api --pods 200000 --phases create,reads,leases --out $OUT/api-$cfg "${flags[@]}"
  case $cfg in etcd1) start_etcd 1;; etcd3) start_etcd 3;; esac
  run $M bench restart --pods 200000 "${flags[@]}"
  cp $OUT/last.log $OUT/restart-$cfg.log
  case $cfg in etcd1) start_etcd 1;; etcd3) start_etcd 3;; esac
  run $M bench density --nodes 1000 --pods-per-node 30 --out $OUT/density-$cfg "${sflags[@]}"
done
# Sharding: events and leases in their own one-member etcd beside a one-member main etcd.
start_etcd 1 2379; MAIN=$ETCD_URLS
$E --name side --data-dir $WORK/etcd-data-side --quota-backend-bytes=8589934592 \
  --listen-client-urls http://127.0.0.1:4379 --advertise-client-urls http://127.0.0.1:4379 \
  --listen-peer-urls http://127.0.0.1:4380 --initial-advertise-peer-urls http://127.0.0.1:4380 \
  --initial-cluster side=http://127.0.0.1:4380 --log-level warn > $WORK/etcd-side.log 2>&1 &
sleep 3
run $M bench density --nodes 1000 --pods-per-node 30 --out $OUT/density-etcd1-sharded \
  --server-flag=--storage=etcd --server-flag=--etcd-servers=$MAIN \
  "--server-flag=--etcd-servers-overrides=/events#http://127.0.0.1:4379,coordination.k8s.io/leases#http://127.0.0.1:4379"
pkill -f "$E --name"; sleep 2; rm -rf $WORK/etcd-data-*
echo "=== done $(date -u +%H:%M:%S)"
