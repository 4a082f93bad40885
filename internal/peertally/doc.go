// Package peertally counts the verdicts of the peer conformance suites
// (cases ported from Flux, Helm and Karmada test data): how many cases of
// a group were ported, how many agree with the peer, how many are
// documented differences and how many were skipped.
package peertally
