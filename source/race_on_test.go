//go:build race

package source

// allocFactor scales the allocation bounds of the hostile-input tests:
// the race detector allocates beside every allocation it watches.
const allocFactor = 12
