// Package controllers is the controller manager behind `myriad controllers`
// and `myriad up`: it builds one controllerctx.Context per process, starts
// the shared informers at once (so standbys stay warm), and runs the
// controllers listed in All while it holds the leader Lease.
package controllers
