// Package e2e drives the real myriad binary over HTTPS with client-go and
// kubectl, the way users and controllers do. TestMain builds the binary once
// and starts one shared control plane; tests that kill or restart a server
// start their own.
package e2e
