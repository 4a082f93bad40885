package reconcile

import (
	"encoding/json"
	"reflect"
	"strconv"
)

// inlineValues returns spec.values with every number a float64, as Flux
// hands them to Helm: helm-controller reads the raw JSON of spec.values
// into a map with encoding/json (sigs.k8s.io/yaml in older versions), and
// Helm reads values files the same way, so 9007199254740993 becomes
// 9007199254740992 and renders as 9.007199254740992e+15, and a template's
// `eq .Values.n 2.0` holds. Decode gives that tree already; a Release read
// through a Kubernetes codec (controller-runtime's clients keep whole
// numbers as int64) or built in Go would otherwise render, and digest,
// differently. in is not modified.
func inlineValues(in map[string]any) map[string]any {
	if in == nil {
		return nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = jsonNumbers(v)
	}
	return out
}

// jsonNumbers is v with its numbers as encoding/json decodes them.
func jsonNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return inlineValues(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonNumbers(e)
		}
		return out
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint())
	case reflect.Float32:
		// As JSON carries it: 0.1, not 0.10000000149011612.
		f, _ := strconv.ParseFloat(strconv.FormatFloat(rv.Float(), 'g', -1, 32), 64)
		return f
	}
	return v
}
