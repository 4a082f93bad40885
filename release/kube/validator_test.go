package kube

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
)

// countingVerifier answers from a table and counts the questions.
type countingVerifier struct {
	answers map[schema.GroupVersionKind]error
	asked   map[schema.GroupVersionKind]int
}

func (v *countingVerifier) HasSupport(gvk schema.GroupVersionKind) error {
	v.asked[gvk]++
	return v.answers[gvk]
}

// The server is asked once per kind whether it validates fields itself,
// for all the Builds of a Cluster; a kind it could not answer for (a CRD
// not served yet, a failed request) is asked again.
func TestSharedVerifierRemembersDefiniteAnswers(t *testing.T) {
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	old := schema.GroupVersionKind{Group: "old.example.com", Version: "v1", Kind: "Thing"}
	crd := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	next := &countingVerifier{
		answers: map[schema.GroupVersionKind]error{
			old: resource.NewParamUnsupportedError(old, resource.QueryParamFieldValidation),
			crd: errors.New("the server could not find the requested resource"),
		},
		asked: map[schema.GroupVersionKind]int{},
	}
	s := newSharedVerifier()
	s.once.Do(func() { s.next = next })
	for range 3 {
		assert.NoError(t, s.HasSupport(deploy))
		assert.True(t, resource.IsParamUnsupportedError(s.HasSupport(old)))
		assert.Error(t, s.HasSupport(crd))
	}
	assert.Equal(t, 1, next.asked[deploy], "supported: asked once")
	assert.Equal(t, 1, next.asked[old], "unsupported: asked once")
	assert.Equal(t, 3, next.asked[crd], "no answer: asked each time")
}
