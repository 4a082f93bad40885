package values

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInlineCreditsNameThePolicy(t *testing.T) {
	const (
		prod   = "OverridePolicy apps/prod rule 0 overriders.plaintext[0]"
		canary = "OverridePolicy apps/canary rule 1 overriders.valuesOverrider[0]"
	)
	tests := []struct {
		name    string
		credits []Credit
		want    map[string]string // path -> Origin.Source.String()
		// wantOverrode is Origin.Overrode of the paths given.
		wantOverrode map[string][]string
	}{
		{
			name:    "no credits: everything inline",
			credits: nil,
			want:    map[string]string{"replicaCount": "inline values", "image.tag": "inline values", "ui.message": "file \"values.yaml\""},
		},
		{
			name:    "a leaf and a map set by two policies",
			credits: []Credit{{Pointer: "/replicaCount", By: prod}, {Pointer: "/image", By: canary}},
			want:    map[string]string{"replicaCount": prod, "image.tag": canary, "ui.message": "file \"values.yaml\""},
		},
		{
			name:         "a later policy on the same place wins and lists the earlier",
			credits:      []Credit{{Pointer: "/replicaCount", By: prod}, {Pointer: "/replicaCount", By: canary}},
			want:         map[string]string{"replicaCount": canary, "image.tag": "inline values"},
			wantOverrode: map[string][]string{"replicaCount": {prod}},
		},
		{
			name:    "all of spec.values replaced: only what the inline values set is credited",
			credits: []Credit{{Pointer: "", By: prod}},
			want:    map[string]string{"replicaCount": prod, "image.tag": prod, "ui.message": "file \"values.yaml\""},
		},
		{
			name:    "a pointer that names nothing credits nothing",
			credits: []Credit{{Pointer: "/nosuch/key", By: prod}},
			want:    map[string]string{"replicaCount": "inline values"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Compose(context.Background(), nil, Request{
				Release:       "apps/podinfo",
				Files:         []File{{Name: "values.yaml", Data: []byte("ui: {message: hello}\nreplicaCount: 1\n")}},
				Inline:        map[string]any{"replicaCount": 3, "image": map[string]any{"tag": "6.5.1"}},
				InlineCredits: tc.credits,
			})
			require.NoError(t, err)
			for path, want := range tc.want {
				got := res.Explain(path)
				require.Len(t, got, 1, path)
				assert.Equal(t, want, got[0].Source.String(), path)
			}
			for path, want := range tc.wantOverrode {
				var got []string
				for _, s := range res.Explain(path)[0].Overrode {
					got = append(got, s.String())
				}
				assert.Equal(t, want, got[len(got)-len(want):], path)
			}
		})
	}
}

func TestCreditsOf(t *testing.T) {
	got, err := CreditsOf(map[string]string{CreditsAnnotation: `[{"pointer":"/a","by":"OverridePolicy x/y rule 0 overriders.plaintext[0]"}]`})
	require.NoError(t, err)
	assert.Equal(t, []Credit{{Pointer: "/a", By: "OverridePolicy x/y rule 0 overriders.plaintext[0]"}}, got)

	got, err = CreditsOf(nil)
	require.NoError(t, err)
	assert.Nil(t, got)

	for _, bad := range []string{`{`, `[{"pointer":"a","by":"p"}]`, `[{"pointer":"/a"}]`} {
		_, err := CreditsOf(map[string]string{CreditsAnnotation: bad})
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), CreditsAnnotation)
		assert.Contains(t, err.Error(), strconv.Quote(bad))
	}
}
