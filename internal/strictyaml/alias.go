package strictyaml

import (
	"bytes"
	"fmt"

	yamlv3 "go.yaml.in/yaml/v3"
)

// Alias expansion budget: a document may expand, its aliases replaced by
// what they name, to at most AliasFactor times the nodes it is written
// with plus AliasFloor. YAML parsers expand an alias by copying what it
// names, so a few lines of anchors aliasing anchors (a "billion laughs")
// expand exponentially; the budget keeps the decoded document within a
// small multiple of the written one, while a document that repeats a
// block through an alias a few times, as values files and indexes do,
// passes.
const (
	AliasFactor = 4
	AliasFloor  = 10000
)

// AliasError reports a YAML document whose aliases expand beyond the
// budget.
type AliasError struct {
	// Written is the number of nodes of the document as written.
	Written int
	// Limit is the budget: AliasFactor × Written + AliasFloor.
	Limit int
}

// Error says what the document expands to and the budget.
func (e *AliasError) Error() string {
	return fmt.Sprintf("YAML aliases expand the document past %d nodes (%d written; the budget is %d × written + %d): refused",
		e.Limit, e.Written, AliasFactor, AliasFloor)
}

// CheckAliases returns an *AliasError when the aliases of the YAML
// document data expand it past the budget (see AliasFactor), and nil
// otherwise, including for a document that does not parse (the decoder
// that follows reports that). It parses data once without expanding
// anything, so it costs time and memory linear in len(data); data with no
// anchor and alias indicators is not parsed at all.
func CheckAliases(data []byte) error {
	if bytes.IndexByte(data, '&') < 0 || bytes.IndexByte(data, '*') < 0 {
		return nil
	}
	var root yamlv3.Node
	if yamlv3.Unmarshal(data, &root) != nil {
		return nil
	}
	return checkNode(&root)
}

// CheckAliasesStream is CheckAliases for every document of the YAML
// stream data (documents separated by "---"), each within its own
// budget: the error of the first document past it says which, counting
// from 1. It stops, returning nil, at the first document that does not
// parse (the decoder that follows reports that). It costs time and memory
// linear in len(data), one document's nodes held at a time.
func CheckAliasesStream(data []byte) error {
	if bytes.IndexByte(data, '&') < 0 || bytes.IndexByte(data, '*') < 0 {
		return nil
	}
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	for i := 1; ; i++ {
		var root yamlv3.Node
		if dec.Decode(&root) != nil {
			return nil // io.EOF, or not YAML
		}
		if err := checkNode(&root); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
	}
}

// checkNode applies the budget to one parsed document.
func checkNode(root *yamlv3.Node) error {
	written := 0
	sizes := map[*yamlv3.Node]int{} // expanded size of each anchored node
	var expanded func(n *yamlv3.Node) int
	expanded = func(n *yamlv3.Node) int {
		if n == nil {
			return 0
		}
		if n.Kind == yamlv3.AliasNode {
			written++
			if n.Alias == nil {
				return 1
			}
			if s, ok := sizes[n.Alias]; ok {
				return s
			}
			return 1 // an alias inside the node it names: the parser refuses it
		}
		written++
		total := 1
		for _, c := range n.Content {
			total = satAdd(total, expanded(c))
		}
		if n.Anchor != "" {
			sizes[n] = total
		}
		return total
	}
	total := expanded(root)
	limit := satAdd(satMul(AliasFactor, written), AliasFloor)
	if total > limit {
		return &AliasError{Written: written, Limit: limit}
	}
	return nil
}

// satAdd and satMul saturate instead of overflowing: sizes grow
// exponentially with nested aliases.
func satAdd(a, b int) int {
	if s := a + b; s >= a {
		return s
	}
	return int(^uint(0) >> 1)
}

func satMul(a, b int) int {
	if a != 0 && b > int(^uint(0)>>1)/a {
		return int(^uint(0) >> 1)
	}
	return a * b
}
