// Package scenarios holds the `myriad bench` SLO scenarios (api-latency,
// watch-latency, churn, heartbeat, greedy-clients, restart-storm,
// density). Each is a Config with stated defaults and a Run method with
// the loadtest.Scenario signature: it drives load through client-go
// against the server in the harness's Env and records its figures,
// verdicts and series; the harness (internal/bench/loadtest) does the
// rest. Every scenario is bounded in count and time and stops by itself.
package scenarios
