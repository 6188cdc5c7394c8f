// Package resources answers, from API discovery, which resources the
// namespace controller and the garbage collector can list, watch and
// delete — one preferred version per group and resource, no subresources.
package resources
