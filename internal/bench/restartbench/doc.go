// Package restartbench measures how long the control plane takes to come
// back with a large store: it writes N pods straight into an embedded store
// (the stored form the API server would have written, realistic in size),
// then starts the control plane on it and reports the time until every
// watch cache is synced and serving, and the process memory once ready.
package restartbench
