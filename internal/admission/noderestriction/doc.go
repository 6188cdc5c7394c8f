// Package noderestriction is upstream's NodeRestriction admission plugin:
// what the Node authorizer lets every node do to a kind of object (create
// pods, update pod status, patch nodes, write leases), this plugin narrows
// to the node's own objects. A node may create only mirror pods bound to
// itself and owned by its Node, referencing no API objects; update the
// status of, delete and evict only pods bound to it; modify only its own
// Node, without changing its taints, owner references or configSource and
// without setting labels under node-restriction.kubernetes.io or the
// kubernetes.io and k8s.io namespaces beyond the kubelet's own; write only
// its own Lease, CSINode and ResourceSlices; request tokens only bound to
// its pods, for audiences they use; and ask for kubelet certificates only
// in its own name. The messages are upstream's.
package noderestriction
