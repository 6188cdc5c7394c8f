// Package defaultclass is upstream's DefaultIngressClass and
// DefaultStorageClass admission plugins: an Ingress created without a
// class gets the cluster's default IngressClass, a PersistentVolumeClaim
// created without one the default StorageClass.
//
// The two are one plugin here, parameterised by which objects it admits
// and which class annotation marks the default: upstream's are the same
// code twice (list the classes, keep those annotated as default, take the
// newest, set its name), and keeping one copy keeps their rules — the
// tie-break, the 403 on a failed lookup — from drifting apart.
//
// Classes are read on every create of an object that names none; an
// object that names a class (or, as upstream, carries the older class
// annotation) costs nothing.
package defaultclass
