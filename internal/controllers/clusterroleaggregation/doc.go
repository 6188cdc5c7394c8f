// Package clusterroleaggregation is upstream's ClusterRole aggregation
// controller: a ClusterRole with an aggregationRule (admin, edit and view
// by default) gets as its rules the union of the rules of every other
// ClusterRole its clusterRoleSelectors select, taken in name order with
// duplicates dropped, and is written (a server-side apply owning only
// rules) only when that union differs from what it holds.
package clusterroleaggregation
