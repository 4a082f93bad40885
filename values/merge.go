package values

import (
	"fmt"
	"reflect"
)

// Merge deep-merges src over dst and returns the result, as Flux and Helm's
// --values do: maps merge recursively, everything else (lists, scalars,
// null) in src replaces what dst has at that key. Neither input is modified
// and the result shares nothing with them. A null in src stays null: Helm's
// coalescing later deletes the chart default at that key.
func Merge(dst, src map[string]any) map[string]any {
	out := copyMap(dst)
	mergeOwned(out, copyMap(src))
	return out
}

// mergeOwned merges src into dst in place; src becomes part of dst.
func mergeOwned(dst, src map[string]any) {
	for k, v := range src {
		if vm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeOwned(dm, vm)
				continue
			}
		}
		dst[k] = v
	}
}

// copyMap deep-copies m into plain map[string]any / []any trees; nil gives
// an empty map.
func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopy(v)
	}
	return out
}

// deepCopy copies a value tree, turning typed maps and slices (e.g.
// map[string]string, []string, named map types) into their generic form.
func deepCopy(v any) any {
	switch x := v.(type) {
	case nil, bool, string, float64, int64, int, float32, int32, uint64, uint:
		return x
	case map[string]any:
		return copyMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return normalize(v)
	}
}

// normalize converts a value of an uncommon type by reflection.
func normalize(v any) any {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		if rv.IsNil() {
			return nil
		}
		out := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			out[fmt.Sprint(it.Key().Interface())] = deepCopy(it.Value().Interface())
		}
		return out
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = deepCopy(rv.Index(i).Interface())
		}
		return out
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return deepCopy(rv.Elem().Interface())
	case reflect.String:
		return rv.String()
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint()
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	default:
		return fmt.Sprint(v)
	}
}
