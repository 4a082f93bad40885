package postrender

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// The digests must equal Flux's: the JSON Flux's API types encode to, as
// json.Encoder writes it.
func TestDigestIsFluxs(t *testing.T) {
	renderers := []Kustomize{
		{
			Patches: []Patch{
				{Patch: "- op: add\n  path: /a\n  value: <b>\n", Target: &Selector{Kind: "Deployment", LabelSelector: "app=web"}},
				{Patch: replicas3},
			},
			Images: []Image{{Name: "nginx", NewTag: "1.25"}},
		},
		{},
	}
	flux := `[{"kustomize":{"patches":[{"patch":"- op: add\n  path: /a\n  value: \u003cb\u003e\n","target":{"kind":"Deployment","labelSelector":"app=web"}},` +
		`{"patch":"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n"}],"images":[{"name":"nginx","newTag":"1.25"}]}},{"kustomize":{}}]` + "\n"
	assert.Equal(t, sha(flux), Digest(renderers))

	common := &CommonMetadata{Labels: map[string]string{"z": "1", "a": "2"}, Annotations: map[string]string{"owner": "platform"}}
	assert.Equal(t, sha(`{"annotations":{"owner":"platform"},"labels":{"a":"2","z":"1"}}`+"\n"), DigestCommonMetadata(common))
}

func TestDigestChanges(t *testing.T) {
	base := func() []Kustomize {
		return []Kustomize{{
			Patches: []Patch{{Patch: replicas3}, {Patch: "- op: remove\n  path: /a\n", Target: &Selector{Kind: "Service"}}},
			Images:  []Image{{Name: "nginx", NewTag: "1"}, {Name: "redis", Digest: "sha256:00"}},
		}}
	}
	want := Digest(base())
	assert.Equal(t, want, Digest(base()), "stable")
	tests := []struct {
		name   string
		change func(k []Kustomize) []Kustomize
	}{
		{"patch text", func(k []Kustomize) []Kustomize { k[0].Patches[0].Patch += "#"; return k }},
		{"patch order", func(k []Kustomize) []Kustomize {
			k[0].Patches[0], k[0].Patches[1] = k[0].Patches[1], k[0].Patches[0]
			return k
		}},
		{"target added", func(k []Kustomize) []Kustomize { k[0].Patches[0].Target = &Selector{}; return k }},
		{"target field", func(k []Kustomize) []Kustomize { k[0].Patches[1].Target.AnnotationSelector = "a"; return k }},
		{"image order", func(k []Kustomize) []Kustomize {
			k[0].Images[0], k[0].Images[1] = k[0].Images[1], k[0].Images[0]
			return k
		}},
		{"image field", func(k []Kustomize) []Kustomize { k[0].Images[1].NewName = "r"; return k }},
		{"renderer split", func(k []Kustomize) []Kustomize {
			return []Kustomize{{Patches: k[0].Patches}, {Images: k[0].Images}}
		}},
		{"empty renderer appended", func(k []Kustomize) []Kustomize { return append(k, Kustomize{}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.NotEqual(t, want, Digest(tt.change(base())))
		})
	}
	assert.Equal(t, "", Digest(nil))
}

func TestDigestCommonMetadata(t *testing.T) {
	a := &CommonMetadata{Labels: map[string]string{"a": "1", "b": "2"}}
	b := &CommonMetadata{Labels: map[string]string{"b": "2", "a": "1"}}
	assert.Equal(t, DigestCommonMetadata(a), DigestCommonMetadata(b), "map order does not matter")
	assert.NotEqual(t, DigestCommonMetadata(a), DigestCommonMetadata(&CommonMetadata{Annotations: a.Labels}), "labels are not annotations")
	assert.Equal(t, "", DigestCommonMetadata(nil))
	assert.Equal(t, "", DigestCommonMetadata(&CommonMetadata{Labels: map[string]string{}}))
}
