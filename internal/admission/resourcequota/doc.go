// Package resourcequota is upstream's ResourceQuota admission plugin: a
// write that would take a namespace past one of its ResourceQuotas is
// refused with 403 "exceeded quota: ...", a pod that does not declare a
// resource a quota makes mandatory with "failed quota: ...", and any
// other write a quota tracks is charged to it (status.used) before it is
// admitted.
//
// Charging writes quota status with compare-and-swap before the object
// is stored, so two creates racing for the last unit cannot both pass:
// at most one swap wins and the loser is checked again against what it
// wrote. Concurrent requests of one namespace are batched: the first
// becomes the batch's runner, reads the namespace's quotas once, checks
// every request waiting by then in arrival order and writes each changed
// quota once, so a burst of N creates costs a few quota writes instead
// of N swaps that mostly conflict (50 concurrent creates: 2 writes).
//
// A charged write whose storage write then fails (a create of a name that
// exists, an update that lost its compare-and-swap) is refunded: the
// plugin is also an allocation step, whose Finish(false) takes the charge
// back. Upstream leaves that to the controller's next recount (up to 5
// minutes), during which a retried `kubectl create` of an existing object
// holds quota it does not use.
//
// The plugin is the last validating plugin, as upstream's, so it charges
// the object as it will be stored. Its cost for a namespace without
// quotas is one read of the quotas watch cache (Quotas.Cached).
package resourcequota
