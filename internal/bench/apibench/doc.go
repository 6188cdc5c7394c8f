// Package apibench measures a Myriad (or any Kubernetes-compatible) API
// server the way real clients see it: over HTTPS, on client-go's HTTP/2
// transport and credentials, with protobuf bodies. The measured pod requests
// are checked but not decoded (wire.go; TypedClient decodes them through the
// clientset), so the client's own cost stays small beside a server on the
// same cores. Measured calls report the server's CPU per call when it can be
// read (in-process, or a local server's PID) and, for a server in another
// process, the client's own. It runs up to four phases, each optional:
//
//  1. pod creates from many concurrent workers, pods spread over node names,
//     `app` labels and namespaces;
//  2. reads with the pods loaded: GET of one pod, LIST by node
//     (fieldSelector=spec.nodeName), by label (labelSelector=app=) and by
//     namespace, and one unfiltered LIST of every pod (time, bytes and, for
//     an in-process or local server, the server's peak RSS during it);
//  3. coordination.k8s.io Lease updates, one Lease per node, renewed in a
//     loop by several workers, as kubelets heartbeat;
//  4. the server's idle RSS with everything loaded.
//
// Each phase reports throughput and p50/p90/p99/max latency per call.
// Without a kubeconfig, Run starts an in-process control plane
// (controlplane.Run) on a temporary data directory and a free port, so the
// server and the client share the process (and its CPU). `myriad bench api`
// calls Run.
package apibench
