package values

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
)

// RedactedPrefix starts every redaction marker, e.g.
// "<redacted sha256:1a2b3c4d>". The 8 hex digits are a hash of the value, so
// a changed Secret value shows as a changed marker in plans and diffs.
const RedactedPrefix = "<redacted "

// redactor prints redaction markers, keyed when the request gave a key.
type redactor struct {
	key []byte
}

func (r *redactor) marker(v any) string {
	var h hash.Hash
	label := "sha256:"
	if len(r.key) > 0 {
		h = hmac.New(sha256.New, r.key)
		label = "hmac-sha256:"
	} else {
		h = sha256.New()
	}
	e := encoder{w: h}
	e.value(v)
	return RedactedPrefix + label + hex.EncodeToString(h.Sum(nil))[:8] + ">"
}

// redactTree returns a copy of v in which every leaf the tracker marks as
// Secret-sourced is replaced by its marker.
func redactTree(v any, path string, t *tracker, r *redactor) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 || path == "" {
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = redactTree(e, childKey(path, k), t, r)
			}
			return out
		}
	case []any:
		if len(x) > 0 {
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = redactTree(e, childIndex(path, i), t, r)
			}
			return out
		}
	}
	if t.sensitive(path) {
		return r.marker(v)
	}
	return deepCopy(v)
}
