//go:build !race

package simulation_test

// raceEnabled: the race detector slows the simulation several times.
const raceEnabled = false
