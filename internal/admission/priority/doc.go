// Package priority is upstream's Priority admission plugin: a pod that
// names a PriorityClass gets that class's value and preemption policy, and
// a pod naming a class that does not exist is refused.
//
// The lookup-free half (no class means priority 0; the two system classes
// have fixed values) is defaulting, done by the registry's pod strategy
// before admission runs, so a pod read back from a dry run or a client
// that never reaches admission sees it too.
package priority
