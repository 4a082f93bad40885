package kustomize

import (
	"errors"
	"fmt"
	"strings"

	"github.com/helmfleet/helmfleet/release"
)

// Sentinels matched (errors.Is) by the errors Build returns, whatever the
// entry or object.
var (
	// ErrRemote: an entry names a URL or a git repository. Build reads
	// only the given file system; it never fetches anything.
	ErrRemote = errors.New("remote bases and resources are not supported: Build reads only the given file system")
	// ErrOutsideFS: an entry's path leaves the root of the file system.
	ErrOutsideFS = errors.New("path leaves the root of the file system")
	// ErrOutsideRoot: with LoadRestrictionsRootOnly, a file entry is not
	// under the directory of its kustomization file.
	ErrOutsideRoot = errors.New("file is not under the kustomization's directory (LoadRestrictionsRootOnly)")
	// ErrUnsupported: the kustomization asks for something Build refuses
	// to run (Helm chart inflation, plugins, KRM functions).
	ErrUnsupported = errors.New("not supported")
	// ErrNoKustomization: a directory has no kustomization file.
	ErrNoKustomization = errors.New("no kustomization.yaml, kustomization.yml or Kustomization in the directory")
	// ErrLimit is matched by every *LimitError.
	ErrLimit = errors.New("input limit exceeded")
	// ErrCycle is matched by every *CycleError.
	ErrCycle = errors.New("cycle of kustomizations")
	// ErrNotRegular: a file of the tree is a FIFO, device, socket or
	// other non-regular file, or became one while Build read the tree.
	ErrNotRegular = errors.New("not a regular file")
)

// EntryError reports one entry of one kustomization file.
type EntryError struct {
	// File is the kustomization file, a path in the file system given to
	// Build, e.g. "infrastructure/dev/kustomization.yaml".
	File string
	// Field is the entry, e.g. "resources[2]" or
	// "secretGenerator[0].files[1]"; empty when the whole file is at
	// fault.
	Field string
	// Value is the entry as written (a path or URL; never a literal or
	// the content of a file).
	Value string
	// Err says what is wrong: one of the sentinels above, fs.ErrNotExist,
	// a *LimitError, a *SymlinkError or a *CycleError, or kustomize's own
	// parse error.
	Err error
}

// Error renders `file: field "value": reason`.
func (e *EntryError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
		if e.Value != "" {
			fmt.Fprintf(&b, " %q", e.Value)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the reason.
func (e *EntryError) Unwrap() error { return e.Err }

// LimitError reports an input larger than Options allow.
type LimitError struct {
	// What is limited: "file size", "total size", "files",
	// "kustomizations" (each inclusion counts, so a base included twice
	// counts twice), "depth" (of nested kustomizations) or "YAML
	// aliases" (a document whose aliases expand excessively).
	What string
	// Limit is the cap that applied, Got what was found (at least
	// Limit+1; counting stops there). Both are 0 for "YAML aliases",
	// whose budget applies to each YAML document of a file and is given
	// in the error's text, with the file and the document.
	Limit, Got int64
	detail     string
}

// Error names the limit and the option that sets it.
func (e *LimitError) Error() string {
	if e.detail != "" {
		return e.What + ": " + e.detail
	}
	return fmt.Sprintf("%s %d exceeds the limit of %d (kustomize.Options)", e.What, e.Got, e.Limit)
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// SymlinkError reports a symbolic link Build does not follow.
type SymlinkError struct {
	// Path is the link, in the file system; Target what it points to.
	Path, Target string
	// Reason says why: it leaves the file system, or too many links.
	Reason string
}

// Error names the link, its target and the reason.
func (e *SymlinkError) Error() string {
	return fmt.Sprintf("symlink %s -> %s: %s", e.Path, e.Target, e.Reason)
}

// Is makes errors.Is(err, ErrOutsideFS) true for a link that leaves the
// file system.
func (e *SymlinkError) Is(target error) bool {
	return target == ErrOutsideFS && e.Reason == reasonLeaves
}

const reasonLeaves = "leaves the root of the file system"

// CycleError reports kustomizations that include each other.
type CycleError struct {
	// Cycle lists the kustomization directories, the first repeated last.
	Cycle []string
}

// Error renders the cycle as "a -> b -> a".
func (e *CycleError) Error() string {
	return "cycle of kustomizations: " + strings.Join(e.Cycle, " -> ")
}

// Is makes errors.Is(err, ErrCycle) true.
func (e *CycleError) Is(target error) bool { return target == ErrCycle }

// BuildError is an error of kustomize itself while it built the tree (a
// patch whose target is missing, a conflict between generated names).
// When the tree holds Secret data (a secretGenerator's, or a file with a
// Secret object), which kustomize may quote, Build returns a
// *release.WithheldError in its place.
type BuildError struct {
	// Dir is the directory Build was given.
	Dir string
	// Message is kustomize's message.
	Message string
}

// Error renders "kustomize build dir: message".
func (e *BuildError) Error() string {
	return fmt.Sprintf("kustomize build %s: %s", e.Dir, e.Message)
}

// Problem is one thing wrong with one object of the build's output.
type Problem struct {
	// Origin is the file the object came from, a path in the file system
	// given to Build; for a generated object, the kustomization file that
	// generated it; empty when kustomize does not know.
	Origin string
	// Kind, Namespace and Name of the object after kustomize's
	// transformations, as decoded.
	Kind, Namespace, Name string
	// FieldError names the field, its value and what is wrong, as
	// release.Decode and release.Validate report it.
	release.FieldError
}

// Error renders "origin: Kind namespace/name: path: message (value: …)".
func (p Problem) Error() string {
	var b strings.Builder
	if p.Origin != "" {
		b.WriteString(p.Origin)
		b.WriteString(": ")
	}
	id := p.Name
	if p.Namespace != "" {
		id = p.Namespace + "/" + p.Name
	}
	if obj := strings.TrimSpace(p.Kind + " " + id); obj != "" {
		b.WriteString(obj)
		b.WriteString(": ")
	}
	b.WriteString(p.FieldError.Error())
	return b.String()
}

// DecodeError reports every problem of the objects kustomize built that
// helmfleet decodes (HelmReleases, Flux sources, Karmada policies): what
// release.Load reports, pointed at the objects' files.
type DecodeError struct {
	// Problems in the order of kustomize's output, then by field path.
	Problems []Problem
}

// Error lists every problem, one a line.
func (e *DecodeError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}
