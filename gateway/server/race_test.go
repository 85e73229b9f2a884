//go:build race

package server_test

// raceEnabled is true in a build with the race detector, which makes
// compiling a policy bundle several times slower.
const raceEnabled = true
