// Package scheduler connects the scheduling core to a Kubernetes API
// server, as kube-scheduler does: client-go informers feed nodes and
// assigned pods into the cache and pending pods (spec.schedulerName equal to
// ours) into the queue; pods are bound through the pods/binding
// subresource; unschedulable pods get the PodScheduled=False condition and
// a FailedScheduling event; preemption nominates and deletes victims; and a
// Lease (kube-system/kube-scheduler, like upstream's) elects one active
// scheduler among replicas, the standbys keeping their informers warm and
// taking over at once when the leader releases the Lease (package
// leaderelect, shared with the controller manager).
//
//	informers ──► cache (nodes, bound+assumed pods) ◄── assume ─┐
//	          └─► queue (active / backoff / unschedulable) ──► core ──► Binder (pods/binding)
//	                                                             └──► Reporter (events, status, victims)
//
// VolumeBinding reads claims, volumes and classes from three more
// informers (a list+watch each, caching what the cluster holds: nothing
// in a cluster without storage) and looks at them only for pods that
// mount claims; such pods are scheduled one at a time, and their binding
// first pre-binds their volumes (volumes.go).
//
// The core (packages core, queue, cache, plugins, framework) has no
// client-go dependency; this package is the thin layer around it.
package scheduler
