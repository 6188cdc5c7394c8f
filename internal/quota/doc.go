// Package quota is what the ResourceQuota admission plugin and the
// resource quota controller share: how much of each quota resource an
// object uses (upstream's quota evaluators for pods, services and
// persistentvolumeclaims, and an object count for everything else),
// whether a quota's scopes select it, which resources a pod must declare
// for a quota to admit it, and the ResourceList arithmetic both sides
// do, so that what admission charges and what the controller recounts
// are computed by the same code.
package quota
