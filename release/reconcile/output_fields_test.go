package reconcile

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestJSONFormsKeepEveryField: the JSON forms of Plan and Result
// (which mask what they print) carry every exported field, so a field
// added to either type is not dropped from JSON plans in silence.
func TestJSONFormsKeepEveryField(t *testing.T) {
	for _, tc := range []struct {
		name       string
		typ, shown reflect.Type
	}{
		{"Plan", reflect.TypeFor[Plan](), reflect.TypeFor[releasePlanJSON]()},
		{"Result", reflect.TypeFor[Result](), reflect.TypeFor[resultJSON]()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for f := range tc.typ.Fields() {
				if !f.IsExported() {
					continue
				}
				_, ok := tc.shown.FieldByName(f.Name)
				assert.True(t, ok, "%s.%s is missing from its JSON form", tc.name, f.Name)
			}
		})
	}
}
