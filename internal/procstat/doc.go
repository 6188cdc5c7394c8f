// Package procstat reads a process's CPU time, resident memory (RSS) and
// peak resident memory from /proc, for this process or another by PID. It
// is the one place the benchmarks, the load tests and the hollow nodes
// sample a process, so their figures mean the same thing: CPU is user plus
// system time of all threads, RSS is VmRSS and peak RSS is VmHWM, in bytes.
//
// This process's CPU time comes from getrusage(2), which counts in
// microseconds; another process's from /proc/PID/stat, which counts in
// clock ticks of 10 ms. A benchmark that divides a short phase's CPU by its
// calls needs the former.
//
// /proc is Linux's: elsewhere every read but this process's CPU time fails,
// and callers report zero.
package procstat
