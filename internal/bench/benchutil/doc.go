// Package benchutil holds what every benchmark harness in internal/bench
// shares: progress lines, nearest-rank quantiles, on-disk sizes and a
// realistic stored pod.
package benchutil
