package source

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
)

// indexWindow is the size of the window a JSON index streams through.
const indexWindow = 256 << 10

func errTooLarge(limit int64) error {
	return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
}

// readChartEntries reads an index from r, at most limit bytes (size, when
// positive, is the length announced for it), and returns chartName's entries
// and the digest ("sha256:<hex>") of the bytes read.
//
// A JSON index is never held whole: it streams through a window of the
// given size (indexWindow; it grows only to hold the chart's array), the
// scanner keeps only that array, and each chunk is hashed as it is read
// into the window, so the digest costs no second pass and no copy. A YAML
// index is read whole (its scanner works on lines across the document) and
// hashed as it arrives. When the document must be parsed whole after all (a
// form the scanner does not read safely, see FindChartVersion), reopen
// supplies it again from the start and the digest is that of the bytes read
// then.
//
// Errors from r (including ErrTooLarge) are returned as they are, so the
// caller can tell a failed download from a bad index.
func readChartEntries(r io.Reader, size, limit int64, window int, chartName string, reopen func() (io.ReadCloser, error)) (*chartEntries, string, error) {
	if chartName == "" {
		return nil, "", fmt.Errorf("%w: the chart name is empty", ErrChartNotFound)
	}
	h := sha256.New()
	// pin 0 keeps every byte until the form is known: YAML is read whole.
	s := &jscan{r: r, buf: make([]byte, max(window, 1)), pin: 0, limit: limit, seen: func(b []byte) { h.Write(b) }}
	s.ws()
	c, ok := s.peek()
	s.pin = -1
	if s.err != nil {
		return nil, "", s.err
	}
	if !ok {
		return nil, "", fmt.Errorf("%w: the index is empty", ErrInvalidIndex)
	}
	if c != '{' {
		doc, err := readRest(r, s.b, size, limit, h)
		if err != nil {
			return nil, "", err
		}
		e, err := parseChartEntries(doc, chartName)
		return e, digestOf(h), err
	}
	e, res := scanJSON(s, chartName)
	if s.err != nil {
		return nil, "", s.err
	}
	var digest string
	full := func() ([]byte, error) {
		rc, err := reopen()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		doc, err := readCapped(rc, limit)
		if err != nil {
			return nil, err
		}
		digest = sha256Digest(doc)
		return doc, nil
	}
	e, err := settle(e, res, chartName, full)
	if digest == "" {
		digest = digestOf(h)
	}
	return e, digest, err
}

// readRest reads what follows head from r into one buffer (sized by the
// announced size when there is one), hashing it as it arrives.
func readRest(r io.Reader, head []byte, size, limit int64, h hash.Hash) ([]byte, error) {
	total := int64(len(head))
	if size <= 0 || size > limit {
		size = 0
	}
	doc := make([]byte, len(head), max(int(size), 2*len(head))+1)
	copy(doc, head)
	for {
		if len(doc) == cap(doc) {
			doc = append(doc, 0)[:len(doc)]
		}
		m, err := r.Read(doc[len(doc):cap(doc)])
		if m > 0 {
			total += int64(m)
			if total > limit {
				return nil, errTooLarge(limit)
			}
			h.Write(doc[len(doc) : len(doc)+m])
			doc = doc[:len(doc)+m]
		}
		if err == io.EOF {
			return doc, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// digestOf returns "sha256:<hex>" of what h has hashed.
func digestOf(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }
