// Package loadtest is the harness the `myriad bench` SLO scenarios run in:
// it connects to (or starts, as a `myriad up` subprocess) the API server
// under test, records per-call latencies, scrapes the server's /metrics and
// its process's CPU and RSS over time, shows a live progress line, and
// writes the report directory (report.md, results.json with a versioned
// schema, SVG plots). It also compares two results.json files.
//
// The scenarios themselves live in internal/bench/scenarios; this package
// knows nothing about what they do beyond the figures they report.
package loadtest
