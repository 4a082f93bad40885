//go:build !race

package source

// allocFactor scales the allocation bounds of the hostile-input tests
// (see race_on_test.go).
const allocFactor = 1
