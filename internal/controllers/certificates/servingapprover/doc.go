// Package servingapprover approves kubelet serving certificate requests
// (signer kubernetes.io/kubelet-serving) by policy, as kubelet-csr-approver
// style operators do where upstream leaves them to a human: a request is
// approved only when its requestor is the node it names (username
// system:node:<n> equal to the CN, in group system:nodes), its subject and
// usages are the signer's (O=system:nodes, server auth), and every DNS
// name and IP address it asks for is one of that Node object's
// status.addresses (or the node's name). Anything else stays pending for
// a human (kubectl certificate approve) — it is never denied, since the
// node may not have reported a new address yet: a node that appears or
// changes its addresses brings its pending requests back (an index of
// serving requests by requestor).
//
// What this trusts: a node's own status. NodeRestriction confines a
// kubelet to its own Node, so a node can obtain a certificate only for
// the names and addresses it reports for itself; a compromised node that
// reports a foreign address can get a certificate for it, which is why
// operators who cannot accept that disable the controller
// (--controllers=*,-kubelet-serving-approver) and approve by hand.
package servingapprover
