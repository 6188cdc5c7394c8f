// Package sim runs hollow nodes: thousands of simulated kubelets in one
// process that the control plane cannot tell from real ones. It is the
// instrument the load tests (internal/bench) measure a large cluster with.
//
// Each hollow node, as the API server sees it:
//
//   - registers its Node (capacity, allocatable, the well-known labels,
//     conditions, addresses, nodeInfo, taints) or reuses the one a previous run
//     left behind;
//   - renews its Lease in kube-node-lease every RenewInterval (KEP-0009) and
//     writes Node status only when something changed or every
//     NodeStatusInterval — or, with FullStatusHeartbeat, the whole Node status
//     every RenewInterval, the pre-Lease heartbeat;
//   - watches the pods bound to it (one watch per node with
//     fieldSelector=spec.nodeName=<node>, as a kubelet does, or one shared
//     watch for all nodes with PodWatch=PodWatchShared), admits them against
//     its allocatable like a kubelet (rejecting with OutOfcpu, OutOfmemory,
//     OutOfpods), runs them (status Running with IPs, container statuses and
//     conditions after PodStartupDelay ± PodStartupJitter, by default 1 s ±
//     200 ms, drawn from a per-node generator seeded with Config.Seed), runs
//     Job pods and pods annotated with AnnotationRunSeconds to Succeeded, and
//     honours graceful deletion (containers terminated, then a grace-0
//     delete with a UID precondition);
//   - optionally lists all Services every GreedyListInterval (the Civis
//     "greedy DaemonSet");
//   - with Config.Kubelet.Enabled (myriad sim's default; --kubelet-port -1
//     turns it off), answers the kubelet API the API server dials for
//     pods/log, exec, attach and portforward: one HTTPS listener for the
//     whole process (package kubeletserver), whose address every node
//     reports as its InternalIP (Kubelet.Address, default 127.0.0.1) and
//     whose port it reports in status.daemonEndpoints.kubeletEndpoint. Its
//     serving certificate comes from a kubernetes.io/kubelet-serving
//     CertificateSigningRequest (CN system:node:<first node>, IP SAN the
//     address, the node names as DNS SANs up to 64 nodes) that the
//     simulator approves itself and the cluster's signer issues, before
//     any node registers; Start fails if none is issued within
//     Kubelet.CertificateTimeout. Clients need a certificate from the
//     kubeconfig's CA unless Kubelet.Anonymous. Pods are found by name
//     through an index kept beside each node's pods, so a request costs
//     one map lookup whatever the number of nodes. The listener serves from
//     Start until Stop, which also closes open exec and port-forward
//     streams. Nodes report the listener's address in the status they
//     already write: the heartbeat costs nothing more.
//
// # API
//
//	s, err := sim.New(cfg)   // validates cfg, fills defaults
//	err = s.Start(ctx)       // registers every node, starts them; returns once all are registered
//	s.Fail("hollow-node-3")  // node stops heartbeating and reacting to pods
//	s.Recover("hollow-node-3")
//	st := s.Stats()          // counts, lease-renewal lateness p50/p99, CPU, RSS
//	s.Stop()                 // stops every node and waits; idempotent
//
// sim.Run(ctx, cfg) is New+Start, then waits for ctx and Stops.
//
// # Failing nodes
//
// A failed node stops renewing its Lease, writing its status and handling
// its pods, as if its kubelet had died, so the node lifecycle controller
// marks it NotReady and evicts its pods; a recovered one renews and writes
// Ready at once. Three ways to get there, all through Sim.Fail and
// Sim.Recover:
//
//   - from a program, calling them;
//   - on a schedule, with Config.Fail (myriad sim --fail-nodes N|NAME,...
//     --fail-after D --recover-after D): the nodes fail D after every node
//     registered, and optionally recover;
//   - over HTTP while it runs, with Sim.ControlHandler (myriad sim serves it
//     on --metrics-address): POST /fail?node=NAME, POST /recover?node=NAME,
//     GET /failed. It has no authentication, like the pprof handlers next
//     to it: keep the address on loopback.
//
// # Metrics API
//
// Sim.MetricsAPIHandler serves metrics.k8s.io/v1beta1 as metrics-server
// does (discovery, NodeMetrics and PodMetrics, get and list, label
// selectors), so kubectl top and the horizontal pod autoscaler have
// something to read; myriad sim serves it on --metrics-api-address, and
// with --register-metrics-api (Sim.RegisterMetricsAPI) over TLS to the API
// server's front proxy only, registered as the APIService
// v1beta1.metrics.k8s.io with a Service kube-system/metrics-server and an
// EndpointSlice pointing at the listener, so kubectl top and the HPA
// controller read it through the API server's aggregation layer. A
// running pod uses what its annotations say for the whole pod,
//
//	sim.myriad.io/cpu-usage: 250m
//	sim.myriad.io/memory-usage: 64Mi
//
// spread over its containers by their requests, else Config.UsageFraction
// (--usage-fraction, default 0.5) of each container's requests; annotate a
// running pod to change its load. A node's usage is the sum of its pods'.
// The API server does not route metrics.k8s.io here by itself: registering
// the handler as an APIService is the aggregation layer's job (issue 22),
// and until then the HPA controller reports FailedGetResourceMetric.
//
// # Timing
//
// Punctuality at 10,000 nodes is the point: node i renews at offset
// i*RenewInterval/Nodes of every period, so renewals are spread evenly, and
// one scheduler goroutine (a min-heap of due times) per work class hands due
// work to a bounded worker pool. There are three classes, each with its own
// scheduler and pool, so that a backlog of pod work or slow greedy lists can
// never delay a Lease renewal: heartbeats (Leases and Node status), pods, and
// greedy lists. The heartbeat pool holds a second's worth of renewals
// (Nodes/RenewInterval × 1 s), so renewals never wait for each other unless
// the server takes longer than that; a failed renewal is retried with the
// kubelet's backoff (200 ms doubling to 7 s) until the node's next slot.
// Lateness is the time a renewal was acknowledged by the server
// minus the time it was scheduled for; it is a Prometheus histogram and its
// p50/p99/max are in Stats. Stats.MaxRenewGap is the longest time any node
// went between two acknowledged renewals — it must stay under
// LeaseDuration (40 s) or the node lifecycle controller marks the node
// NotReady.
//
// # Memory
//
// Cached Nodes, Leases and pods drop their managedFields: they are a large
// share of each object, the simulator never reads them, and an update that
// omits them (nil, not empty) leaves the server's copy untouched. Most of
// the remaining memory at 10,000 nodes is the goroutines and HTTP/2 streams
// of the per-node pod watches (PodWatchShared avoids them).
//
// All nodes share one client speaking protobuf, without client-side rate
// limiting unless Config.QPS is set; its HTTP/2 connections are spread so
// that every Config.NodesPerConnection nodes have their own (spreadConns:
// one connection for all of them made every status write wait behind the
// others' watch events). Heartbeats —
// Lease renewals and Node status updates, nearly every request of an idle
// node — skip client-go's request building (one prepared PUT each on the
// same http.Client stack, heartbeatwire.go) and by default go over their
// own few HTTP/1.1 connections (Config.HeartbeatsOverHTTP2).
package sim
