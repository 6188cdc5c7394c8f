// Package benchutil holds what every benchmark harness in internal/bench
// shares: progress lines, nearest-rank quantiles and on-disk sizes.
package benchutil
