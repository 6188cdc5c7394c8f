// Package bootstrapsigner is kube-controller-manager's bootstrapsigner
// controller: it keeps kube-public/cluster-info signed for every bootstrap
// token marked usage-bootstrap-signing=true and not expired — a detached
// JWS of the ConfigMap's kubeconfig under jws-kubeconfig-<token id>
// (k8s.io/cluster-bootstrap's token/jws), which a joining node that knows
// its token checks before trusting the CA in it (kubeadm join's
// token-based discovery). Signatures of tokens that are gone, expired or
// no longer for signing are removed; the ConfigMap is rewritten only when
// a signature changes.
package bootstrapsigner
