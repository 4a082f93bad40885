package celhealth

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

type statusCase struct {
	Name       string         `json:"name"`
	Check      Check          `json:"check"`
	Object     map[string]any `json:"object"`
	Status     Status         `json:"status"`
	Err        string         `json:"err"`
	CompileErr string         `json:"compileErr"`
}

func readCases[T any](t *testing.T, file string) []T {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	// Through apimachinery's JSON, as objects are decoded: integers
	// become int64, not float64.
	js, err := yaml.YAMLToJSON(data)
	require.NoError(t, err)
	var cases []T
	require.NoError(t, utiljson.Unmarshal(js, &cases))
	require.NotEmpty(t, cases)
	return cases
}

// TestEvaluatorStatus runs Flux's status evaluator table.
func TestEvaluatorStatus(t *testing.T) {
	for _, tc := range readCases[statusCase](t, "testdata/status.yaml") {
		t.Run(tc.Name, func(t *testing.T) {
			ev, err := NewEvaluator("spec.healthCheckExprs[0]", tc.Check)
			if tc.CompileErr != "" {
				require.Error(t, err)
				var inv *InvalidError
				require.ErrorAs(t, err, &inv)
				assert.Contains(t, err.Error(), tc.CompileErr)
				return
			}
			require.NoError(t, err)
			res, err := ev.Status(context.Background(), &unstructured.Unstructured{Object: tc.Object})
			if tc.Err != "" {
				var ee *EvalError
				require.ErrorAs(t, err, &ee)
				assert.Contains(t, err.Error(), tc.Err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.Status, res.Status)
			assert.NotEmpty(t, res.Message)
		})
	}
}

type readyCase struct {
	Name       string         `json:"name"`
	Expr       string         `json:"expr"`
	Self       map[string]any `json:"self"`
	Dep        map[string]any `json:"dep"`
	Ready      bool           `json:"ready"`
	Err        string         `json:"err"`
	CompileErr string         `json:"compileErr"`
}

func TestReadyExpr(t *testing.T) {
	for _, tc := range readCases[readyCase](t, "testdata/ready.yaml") {
		t.Run(tc.Name, func(t *testing.T) {
			r, err := NewReadyExpr("spec.dependsOn[0].readyExpr", tc.Expr)
			if tc.CompileErr != "" {
				var fe *FieldError
				require.ErrorAs(t, err, &fe)
				assert.Equal(t, "spec.dependsOn[0].readyExpr", fe.Field)
				assert.Equal(t, tc.Expr, fe.Value)
				assert.Contains(t, err.Error(), tc.CompileErr)
				return
			}
			require.NoError(t, err)
			if tc.Self == nil {
				tc.Self = map[string]any{}
			}
			ready, err := r.Ready(context.Background(), tc.Self, tc.Dep)
			if tc.Err != "" {
				var ee *EvalError
				require.ErrorAs(t, err, &ee)
				assert.Contains(t, err.Error(), tc.Err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.Ready, ready)
		})
	}
}

// TestSetFor ports Flux's TestStatusReader_Supports and adds the
// precedence of a check naming the kind over one for its whole group.
func TestSetFor(t *testing.T) {
	set, err := NewSet("spec.healthCheckExprs", []Check{
		{APIVersion: "test/v1", Kind: "Test", Current: "'kind' == 'kind'"},
		{APIVersion: "group/v1", Current: "'group' == 'group'"},
		{APIVersion: "group/v2", Kind: "Special", Current: "'special' == 'special'"},
	})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		gk   schema.GroupKind
		want string // the current expression of the matching check
	}{
		{"supported", schema.GroupKind{Group: "test", Kind: "Test"}, "'kind' == 'kind'"},
		{"unsupported", schema.GroupKind{Group: "test", Kind: "Unsupported"}, ""},
		{"group-only healthcheck supports any kind in that group", schema.GroupKind{Group: "group", Kind: "AnyKind"}, "'group' == 'group'"},
		{"group-only healthcheck does not support other groups", schema.GroupKind{Group: "other", Kind: "AnyKind"}, ""},
		{"group-only healthcheck supports GK with empty Kind in that group", schema.GroupKind{Group: "group"}, "'group' == 'group'"},
		{"a check naming the kind wins over the group's, whatever the version", schema.GroupKind{Group: "group", Kind: "Special"}, "'special' == 'special'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := set.For(tc.gk)
			if tc.want == "" {
				assert.Nil(t, ev)
				return
			}
			require.NotNil(t, ev)
			assert.Equal(t, tc.want, ev.current.src)
		})
	}
}

func TestNewSetProblems(t *testing.T) {
	_, err := NewSet("spec.healthCheckExprs", []Check{
		{APIVersion: "x.io/v1", Kind: "A", Current: "true"},
		{APIVersion: "x.io/v2", Kind: "A", Current: "true"},
		{Kind: "B", Current: "status.ready =="},
		{APIVersion: "a/b/c", Current: "true", Failed: "x.("},
	})
	var inv *InvalidError
	require.ErrorAs(t, err, &inv)
	var got []string
	for _, p := range inv.Problems {
		got = append(got, p.Field+": "+p.Value+": "+firstWords(p.Reason, 5))
	}
	assert.Equal(t, []string{
		"spec.healthCheckExprs[1]: A.x.io: checks the same group and",
		"spec.healthCheckExprs[2].apiVersion: : is required",
		"spec.healthCheckExprs[2].current: status.ready ==: is not valid CEL: ERROR:",
		"spec.healthCheckExprs[3].apiVersion: a/b/c: is not a group/version",
		"spec.healthCheckExprs[3].failed: x.(: is not valid CEL: ERROR:",
	}, got)
}

func firstWords(s string, n int) string {
	w := strings.Fields(s)
	if len(w) > n {
		w = w[:n]
	}
	return strings.Join(w, " ")
}

func TestSetStatus(t *testing.T) {
	set, err := NewSet("spec.healthCheckExprs", []Check{{APIVersion: "example.com/v1", Kind: "Widget", Current: "status.phase == 'Ready'", Failed: "status.phase == 'Broken'"}})
	require.NoError(t, err)
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "status": map[string]any{"phase": "Broken"}}}
	res, ok, err := set.Status(context.Background(), obj)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, Result{Status: Failed, Message: "spec.healthCheckExprs[0].failed is true"}, res)

	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}
	_, ok, err = set.Status(context.Background(), other)
	require.NoError(t, err)
	assert.False(t, ok, "no check applies: kstatus judges")
}

// TestBounded: an expression from a tenant cannot run away, by cost or
// past its context.
func TestBounded(t *testing.T) {
	expensive := "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, a+b+c+d > 0))))"
	obj := &unstructured.Unstructured{Object: map[string]any{}}

	ev, err := NewEvaluator("spec.healthCheckExprs[0]", Check{Current: expensive}, WithCostLimit(1000))
	require.NoError(t, err)
	_, err = ev.Status(context.Background(), obj)
	var ee *EvalError
	require.ErrorAs(t, err, &ee)
	assert.Contains(t, err.Error(), "cost limit exceeded")

	ev, err = NewEvaluator("spec.healthCheckExprs[0]", Check{Current: expensive})
	require.NoError(t, err)
	res, err := ev.Status(context.Background(), obj)
	require.NoError(t, err, "the default limit allows ten thousand steps")
	assert.Equal(t, Current, res.Status)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_, err = ev.Status(ctx, obj)
	require.Error(t, err)
	assert.True(t, errors.As(err, &ee))
	assert.Contains(t, err.Error(), "operation interrupted")
	assert.Less(t, time.Since(start), time.Second)
}
