// Package serviceip allocates Services' ClusterIPs and NodePorts: the
// addresses of a single-stack IPv4 range and the node ports of a port
// range, held in memory and rebuilt from the stored Services at start.
//
// It is an admission.AllocationInterface, not an admission plugin proper:
// what it takes must be given back when the write it was taken for is not
// stored (a dry run, a refusal by a later plugin, a lost compare-and-swap),
// and what an update or delete frees may be freed only once that write is
// stored, or a concurrent create could take an address that a failed
// update still holds. Upstream does the same in the service registry's
// BeginCreate/BeginUpdate hooks with a finish callback.
//
// With several API servers this state must move into the store (upstream's
// IPAddress objects); one server owns it for now.
package serviceip
