// Package nodelifecycle is the node lifecycle controller: it judges node
// health from Leases, marks nodes whose Lease went stale Ready=Unknown,
// keeps the not-ready/unreachable taints in step with the Ready condition
// (rate-limited per zone, slowed or stopped when much of a zone fails at
// once), and evicts pods that do not tolerate a node's NoExecute taints
// once their toleration time runs out.
package nodelifecycle
