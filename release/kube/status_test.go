package kube

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/helmfleet/helmfleet/release"
)

var widgetsGR = schema.GroupResource{Group: "example.io", Resource: "widgets"}

func widget(ns, name string, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(1)}}}
	u.SetGroupVersionKind(widgetGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func TestApplyStatusPatchesTheSubresource(t *testing.T) {
	tests := []struct {
		name        string
		subresource string
		want        string
	}{
		{name: "object", subresource: "", want: ""},
		{name: "status", subresource: release.SubresourceStatus, want: "status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, dyn, _ := newFake(t)
			var got k8stesting.PatchAction
			dyn.PrependReactor("patch", "widgets", func(a k8stesting.Action) (bool, runtime.Object, error) {
				got = a.(k8stesting.PatchAction)
				return true, widget("a", "x", nil), nil
			})
			_, err := c.Apply(t.Context(), widget("a", "x", map[string]any{"phase": "Ready"}), release.ApplyOptions{FieldManager: "ctrl", Subresource: tt.subresource})
			require.NoError(t, err)
			require.NotNil(t, got)
			assert.Equal(t, tt.want, got.GetSubresource())
			assert.Equal(t, "application/apply-patch+yaml", string(got.GetPatchType()))
			assert.Contains(t, string(got.GetPatch()), `"status":{"phase":"Ready"}`)
		})
	}
}

func TestApplyUnknownSubresource(t *testing.T) {
	c, dyn, _ := newFake(t)
	called := false
	dyn.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		called = true
		return true, nil, nil
	})
	_, err := c.Apply(t.Context(), widget("a", "x", nil), release.ApplyOptions{Subresource: "scale"})
	require.Error(t, err)
	assert.ErrorContains(t, err, `subresource "scale"`)
	assert.ErrorContains(t, err, "cluster test")
	assert.False(t, called, "no request is sent")
}

func TestApplyStatusForbiddenNamesTheSubresource(t *testing.T) {
	c, dyn, _ := newFake(t)
	dyn.PrependReactor("patch", "widgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(widgetsGR, "x", errors.New("RBAC says no"))
	})
	_, err := c.Apply(t.Context(), widget("a", "x", nil), release.ApplyOptions{Subresource: release.SubresourceStatus})
	var fe *release.ForbiddenError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "patch", fe.Verb)
	assert.Equal(t, "widgets.example.io/status in namespace a", fe.Resource)
}

func TestApplyStatusNotFound(t *testing.T) {
	notFound := func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(widgetsGR, "x")
	}
	t.Run("absent object", func(t *testing.T) {
		c, dyn, _ := newFake(t)
		dyn.PrependReactor("patch", "widgets", notFound)
		_, err := c.Apply(t.Context(), widget("a", "x", nil), release.ApplyOptions{Subresource: release.SubresourceStatus})
		var nf *release.NotFoundError
		require.ErrorAs(t, err, &nf)
		assert.Equal(t, release.RefOf(widget("a", "x", nil)), nf.Object)
	})
	t.Run("kind without the subresource", func(t *testing.T) {
		c, dyn, _ := newFake(t, widget("a", "x", nil))
		dyn.PrependReactor("patch", "widgets", notFound)
		_, err := c.Apply(t.Context(), widget("a", "x", nil), release.ApplyOptions{Subresource: release.SubresourceStatus})
		require.Error(t, err)
		assert.NotErrorIs(t, err, release.ErrNotFound)
		assert.ErrorContains(t, err, "widgets.example.io has no status subresource")
	})
}
