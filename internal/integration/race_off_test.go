//go:build !race

package integration

// raceDetector says the tests run under -race.
const raceDetector = false
