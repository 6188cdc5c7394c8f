// Package kubeletserver is the kubelet API of hollow nodes: one HTTPS
// server per simulator process that answers, for every pod any of its
// hollow nodes runs, the paths the API server dials on a real kubelet
// (pkg/kubelet/server in upstream Kubernetes):
//
//	GET      /healthz
//	GET      /containerLogs/{namespace}/{pod}/{container}   follow, tailLines (tail), limitBytes,
//	                                                        timestamps, sinceSeconds, sinceTime, previous, stream
//	GET|POST /exec/{namespace}/{pod}[/{uid}]/{container}    command=…&input=1&output=1&error=1&tty=1
//	GET|POST /attach/{namespace}/{pod}[/{uid}]/{container}
//	POST     /run/{namespace}/{pod}[/{uid}]/{container}     cmd=…
//	GET|POST /portForward/{namespace}/{pod}[/{uid}]         port=… (WebSocket)
//
// Exec, attach and port-forward go through upstream's streaming code
// (k8s.io/cri-streaming: remotecommand and portforward, SPDY and WebSocket,
// protocol negotiation and exit codes as the kubelet's CRI streaming server
// has them); what runs behind them is synthetic:
//
//   - logs: a container "has written" one line every LogInterval since it
//     started, of which the newest MaxLogLines are kept (as a rotated log
//     would be). Line k reads "<node> <namespace>/<pod>/<container> line k".
//     follow streams each new line when it is due until the client goes away
//     or the container stops. Lines go to stdout: stream=Stderr gets none.
//   - exec: see Exec for the commands it knows; anything else echoes its
//     command line and exits 0.
//   - attach: the container's log, followed.
//   - port-forward: every port echoes the bytes it receives.
//
// Errors match the kubelet's: 404 for a pod no hollow node of this process
// runs or a container the pod does not have, 400 for a container that has
// not started or a previous instance that does not exist, 422 for invalid
// log options, plain-text bodies; and 503 for a pod whose hollow node was
// made to fail (Pods.NodeDown), where a real node's dead kubelet would not
// answer at all.
//
// # Security
//
// The server is TLS only. Its serving certificate comes from the cluster
// as a kubelet's does: ServingCertificate files a certificates.k8s.io/v1
// CertificateSigningRequest for signer kubernetes.io/kubelet-serving,
// approves it when its credentials allow (kube-controller-manager never
// auto-approves serving certificates), and waits for the signer. Clients
// must present a certificate from the cluster CA — the API server's kubelet
// client certificate — unless Config.Anonymous is set; certificates of nodes
// (organization system:nodes) are refused, since no node has business
// calling another's kubelet. A real kubelet would also authorize each caller
// with a SubjectAccessReview (nodes/proxy, nodes/log, …); this one trusts
// any other client certificate of the CA.
package kubeletserver
