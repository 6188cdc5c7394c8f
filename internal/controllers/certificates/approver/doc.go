// Package approver is kube-controller-manager's csrapproving controller:
// it approves kubelet client certificate requests (signer
// kubernetes.io/kube-apiserver-client-kubelet, CN system:node:<name>,
// O system:nodes) whose requestor is authorized to have them approved —
// "selfnodeclient" when a node renews its own certificate, "nodeclient"
// for a new node bootstrapping. Everything else stays pending for a human
// (kubectl certificate approve) or another approver.
package approver
