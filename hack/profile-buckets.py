#!/usr/bin/env python3
# Shares of CPU profiles by component (docs/bench/loadtest.md, History
# 2026-11-26):
#
#   hack/profile-buckets.py BINARY PROFILE [PROFILE...]
#
# Each sample goes to the innermost
# frame (leaf to root) that matches a component; runtime/reflect/sync frames are
# passed over; GC background work is its own bucket.
import re, subprocess, sys, collections
cats = [
 ("GC background", r"^runtime\.gcBgMarkWorker"),
 ("managedFields (SMD)", r"managedfields|structured-merge-diff|internal/patch\."),
 ("admission", r"internal/admission|apiserver\.\(\*Server\)\.admission|pod-security"),
 ("validation", r"/validation\.|[Vv]alidat"),
 ("store (storage, pebble)", r"internal/storage|cockroachdb/pebble|internal/encryption"),
 ("watch cache", r"internal/cache\."),
 ("protobuf encode/decode", r"serializer/protobuf|k8s.io/api/.*\.(Unmarshal|Marshal|MarshalToSizedBuffer|Size)$|gogo/protobuf|protoprune"),
 ("JSON", r"encoding/json|sigs.k8s.io/json|json-iterator|serializer/json"),
 ("deepcopy", r"DeepCopy"),
 ("scheduler (in-process)", r"internal/scheduler"),
 ("controllers (in-process)", r"internal/controllers"),
 ("client-go", r"k8s.io/client-go"),
 ("APF", r"flowcontrol"),
 ("authn", r"internal/apiserver/authn"),
 ("authz", r"internal/apiserver/authz"),
 ("impersonation", r"internal/apiserver/impersonation"),
 ("audit", r"internal/apiserver/audit"),
 ("filters", r"internal/apiserver/filters|internal/controlplane\.buildChain"),
 ("apiserver handlers", r"internal/apiserver\.|internal/registry"),
 ("inmemory transport", r"internal/inmemory"),
 ("TLS", r"crypto/"),
 ("HTTP/2 + net/http", r"^net/http\.|x/net/http2|^net/textproto"),
 ("syscalls/netpoll", r"^syscall\.|internal/poll|^net\."),
 ("apimachinery other", r"k8s.io/apimachinery|k8s.io/apiserver"),
]
skip = re.compile(r"^(runtime\.|reflect\.|sync\.|internal/|strconv\.|strings\.|bytes\.|fmt\.|sort\.|slices\.|maps\.|unicode|math|time\.|container/|bufio\.|io\.|context\.|errors\.|aeshash|memeqbody|cmpbody|indexbyte)")
def load(b, p):
    raw = subprocess.run(["go","tool","pprof","-raw",b,p],capture_output=True,text=True).stdout
    locs = {}; cur = None
    for line in raw.split("\nLocations\n")[1].splitlines():
        m = re.match(r"\s*(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", line)
        if m: cur = m.group(1); locs[cur] = [m.group(2)]; continue
        m = re.match(r"\s{10,}(\S+) ", line)
        if cur and m: locs[cur].append(m.group(1))
    out = collections.Counter(); total = 0
    for line in raw.split("Samples:")[1].split("\nLocations\n")[0].splitlines():
        m = re.match(r"\s*(\d+)\s+(\d+): ([\d ]+)", line)
        if not m: continue
        v = int(m.group(2)); total += v
        fns = [f for i in m.group(3).split() for f in locs.get(i, [])]
        name = None
        if any(re.search(cats[0][1], f) for f in fns): name = cats[0][0]
        else:
            for f in fns:
                if skip.match(f) and not re.search(r"^runtime\.gcBgMarkWorker", f): continue
                for n, rx in cats[1:]:
                    if re.search(rx, f): name = n; break
                if name: break
        if name is None:
            name = "runtime (malloc, GC assist, scheduler)" if all(skip.match(f) for f in fns) else "other"
        out[name] += v
    return out, total
res = [load(sys.argv[1], p) for p in sys.argv[2:]]
names = [c[0] for c in cats] + ["runtime (malloc, GC assist, scheduler)", "other"]
print("%-40s" % "" + "".join("%16s" % ("total %.1fs" % (t/1e9)) for _, t in res))
for n in names:
    if any(o[n] for o, _ in res):
        print("%-40s" % n + "".join("%15.1f%%" % (100*o[n]/t) for o, t in res))
