package source

import (
	"encoding/hex"
	"fmt"
	"hash"
	"hash/maphash"
	"io"
	"strconv"
)

// indexWindow is the size of the window a JSON index streams through.
const indexWindow = 256 << 10

func errTooLarge(limit int64) error {
	return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
}

// indexSums hashes an index as it is read: always its cache key (a keyed
// 64-bit maphash and the length: about 10 GB/s, see IndexCache), and its
// SHA-256 revision (about 1.7 GB/s on this kind of machine, so it would
// double the cost of a scan) only when the revision was asked for.
type indexSums struct {
	key maphash.Hash
	n   int64
	sha hash.Hash // nil when the revision is not wanted
}

// Write hashes the next bytes of the index; it never fails.
func (h *indexSums) Write(b []byte) (int, error) {
	h.key.Write(b)
	h.n += int64(len(b))
	if h.sha != nil {
		h.sha.Write(b)
	}
	return len(b), nil
}

// reset forgets what was hashed, for a document read again from the start.
func (h *indexSums) reset() {
	h.key.Reset()
	h.n = 0
	if h.sha != nil {
		h.sha.Reset()
	}
}

// cacheKey returns the key of the bytes hashed so far.
func (h *indexSums) cacheKey() string {
	return "maphash:" + strconv.FormatInt(h.n, 10) + ":" + strconv.FormatUint(h.key.Sum64(), 16)
}

// revision returns "sha256:<hex>" of the bytes hashed so far, or "" when
// the revision was not wanted.
func (h *indexSums) revision() string {
	if h.sha == nil {
		return ""
	}
	return "sha256:" + hex.EncodeToString(h.sha.Sum(nil))
}

// readChartEntries reads an index from r, at most limit bytes (size, when
// positive, is the length announced for it), returns chartName's entries
// and hashes the bytes read into sums.
//
// A JSON index is never held whole: it streams through a window of the
// given size (indexWindow; it grows only to hold the chart's array), the
// scanner keeps only that array, and each chunk is hashed as it is read
// into the window, so the sums cost no second pass and no copy. A YAML
// index is read whole (its scanner works on lines across the document) and
// hashed as it arrives. When the document must be parsed whole after
// all (a form the scanner does not read safely, see FindChartVersion),
// reopen supplies it again from the start and the sums are those of the
// bytes read then.
//
// Errors from r (including ErrTooLarge) are returned as they are, so the
// caller can tell a failed download from a bad index.
func readChartEntries(r io.Reader, size, limit int64, window int, chartName string, reopen func() (io.ReadCloser, error), sums *indexSums) (*chartEntries, error) {
	if chartName == "" {
		return nil, fmt.Errorf("%w: the chart name is empty", ErrChartNotFound)
	}
	// pin 0 keeps every byte until the form is known: YAML is read whole.
	s := &jscan{r: r, buf: make([]byte, max(window, 1)), pin: 0, limit: limit, seen: sums}
	s.ws()
	c, ok := s.peek()
	s.pin = -1
	if s.err != nil {
		return nil, s.err
	}
	if !ok {
		return nil, fmt.Errorf("%w: the index is empty", ErrInvalidIndex)
	}
	if c != '{' {
		doc, err := readRest(r, s.b, size, limit, sums)
		if err != nil {
			return nil, err
		}
		return parseChartEntries(doc, chartName)
	}
	e, res := scanJSON(s, chartName)
	if s.err != nil {
		return nil, s.err
	}
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
		sums.reset()
		sums.Write(doc)
		return doc, nil
	}
	return settle(e, res, chartName, full)
}

// readRest reads what follows head from r into one buffer (sized by the
// announced size when there is one), hashing it as it arrives.
func readRest(r io.Reader, head []byte, size, limit int64, h *indexSums) ([]byte, error) {
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
