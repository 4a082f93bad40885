//go:build !race

package release

// allocFactor scales the allocation bounds of the hostile-input tests
// (see race_on_test.go).
const allocFactor = 1
