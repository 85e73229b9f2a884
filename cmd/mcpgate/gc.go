package main

import "runtime/debug"

// defaultGCPercent is the garbage collector's target (GOGC) of mcpgate
// serve when the operator sets neither GOGC nor GOMEMLIMIT: the heap may
// grow to three times what is live before a collection, instead of Go's
// twice (GOGC=100). A gateway allocates per call and keeps little (its live
// heap is the policy, the caches and the connections, tens of MiB), so
// collections were a tenth of its CPU per call; at 200 they run half as
// often, for about the live heap again in resident memory (README,
// "Configuration").
const defaultGCPercent = 200

// setDefaultGC applies defaultGCPercent unless the operator chose the
// collector's settings: a GOGC or GOMEMLIMIT in the environment (read
// through getenv, which is the process's environment in main) always wins,
// as the Go runtime already applied it. It reports whether it changed the
// target.
func setDefaultGC(getenv func(string) string) bool {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return false
	}
	debug.SetGCPercent(defaultGCPercent)
	return true
}
