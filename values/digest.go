package values

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"math"
	"reflect"
	"slices"
	"strconv"
)

// Digest returns a stable digest of values, "sha256:" and 64 hex digits.
//
// It hashes a canonical encoding: map keys sorted, every value tagged with its
// type and length-prefixed, numbers compared as JSON compares them (5 and 5.0
// are equal, as they are once Helm stores the values as JSON). Map iteration
// order, list capacity and integer width do not change it; any change of a
// key, a value or a list order does.
func Digest(values map[string]any) string {
	h := sha256.New()
	e := encoder{w: h}
	e.value(values)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// encoder writes the canonical encoding of a value tree to a hash.
type encoder struct {
	w   hash.Hash
	buf [9]byte
}

func (e *encoder) tag(t byte, n int) {
	e.buf[0] = t
	binary.BigEndian.PutUint64(e.buf[1:], uint64(n))
	e.w.Write(e.buf[:])
}

func (e *encoder) str(t byte, s string) {
	e.tag(t, len(s))
	e.w.Write([]byte(s))
}

func (e *encoder) value(v any) {
	switch x := v.(type) {
	case nil:
		e.tag('n', 0)
	case bool:
		if x {
			e.tag('b', 1)
		} else {
			e.tag('b', 0)
		}
	case string:
		e.str('s', x)
	case map[string]any:
		e.tag('m', len(x))
		keys := sortedKeys(x)
		for _, k := range keys {
			e.str('k', k)
			e.value(x[k])
		}
	case []any:
		e.tag('l', len(x))
		for _, el := range x {
			e.value(el)
		}
	case float64:
		e.number(x)
	case float32:
		e.number(float64(x))
	case int:
		e.number(float64(x))
	case int64:
		e.number(float64(x))
	case int32:
		e.number(float64(x))
	case uint64:
		e.number(float64(x))
	case uint:
		e.number(float64(x))
	default:
		e.other(reflect.ValueOf(v))
	}
}

func (e *encoder) number(f float64) {
	if f == 0 {
		f = 0 // -0 and 0 are one JSON number
	}
	if math.IsNaN(f) {
		e.str('f', "NaN")
		return
	}
	e.str('f', strconv.FormatFloat(f, 'g', -1, 64))
}

// other encodes values of types that callers may put in inline values
// (typed maps and slices, other numbers) the way their generic form encodes.
func (e *encoder) other(rv reflect.Value) {
	e.value(normalize(rv.Interface()))
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
