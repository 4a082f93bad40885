// Package fieldcheck holds the field checks that package release and
// package source share when they validate their kinds: a collector of
// field errors, the error that reports them for one object, and the
// checks of names, enums, durations, versions, URLs and signature
// verification. Both packages report the same *ValidationError, so a
// problem reads the same whichever package found it.
package fieldcheck
