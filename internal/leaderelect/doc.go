// Package leaderelect is the one leader election of Myriad's components
// (the scheduler and the controller manager): client-go's LeaderElector on
// a Lease, plus a watch on that Lease that makes a hot standby take over
// at once, either when the leader releases the Lease on shutdown or when
// the leader stopped renewing it for LeaseDuration.
package leaderelect
