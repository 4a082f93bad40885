package drift_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/drift"
)

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name     string
		rules    []drift.IgnoreRule
		opts     drift.Options
		sentinel error
		want     string
	}{
		{
			name:     "pointer without leading slash",
			rules:    []drift.IgnoreRule{{Paths: []string{"/spec/replicas"}}, {Paths: []string{"/spec", "spec/replicas"}}},
			sentinel: drift.ErrInvalidPointer,
			want:     `ignore[1].paths[1] "spec/replicas": invalid JSON pointer "spec/replicas" at offset 0: must be empty or start with "/"`,
		},
		{
			name:     "bad kind regex",
			rules:    []drift.IgnoreRule{{Paths: []string{"/spec"}, Target: &drift.Selector{Kind: "Deploy(ment"}}},
			sentinel: drift.ErrInvalidSelector,
			want:     `ignore[0].target.kind "Deploy(ment": invalid selector: error parsing regexp: missing closing ): ` + "`^(?:Deploy(ment)$`",
		},
		{
			name:     "bad label selector",
			rules:    []drift.IgnoreRule{{Paths: []string{"/spec"}, Target: &drift.Selector{LabelSelector: "app in (a"}}},
			sentinel: drift.ErrInvalidSelector,
		},
		{
			name:     "bad annotation selector on a manager rule",
			opts:     drift.Options{Managers: []drift.ManagerRule{{Managers: []string{"kubectl"}, Target: &drift.Selector{AnnotationSelector: "=x"}}}},
			sentinel: drift.ErrInvalidSelector,
		},
		{
			name:     "rule without paths",
			rules:    []drift.IgnoreRule{{Target: &drift.Selector{Kind: "Deployment"}}},
			sentinel: drift.ErrInvalidRule,
			want:     `ignore[0].paths "": invalid rule: a rule must list at least one path ("" ignores the whole object)`,
		},
		{
			name:     "empty manager name",
			opts:     drift.Options{Managers: []drift.ManagerRule{{Managers: []string{"kubectl", ""}}}},
			sentinel: drift.ErrInvalidRule,
			want:     `managers[0].managedFieldsManagers[1] "": invalid rule: a field manager name must not be empty`,
		},
		{
			name:     "unknown mode",
			opts:     drift.Options{Mode: "fix"},
			sentinel: drift.ErrInvalidRule,
			want:     `driftDetection.mode "fix": invalid rule: mode must be enabled, warn or disabled`,
		},
		{
			name:     "bad extra selector",
			opts:     drift.Options{Extra: &drift.Selector{Name: "*"}},
			sentinel: drift.ErrInvalidSelector,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := drift.Compile(tt.rules, tt.opts)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tt.sentinel), err.Error())
			var re *drift.RuleError
			require.ErrorAs(t, err, &re)
			if tt.want != "" {
				assert.EqualError(t, err, tt.want)
			}
		})
	}
}

func TestCompileModes(t *testing.T) {
	for in, want := range map[drift.Mode]drift.Mode{"": drift.ModeDisabled, drift.ModeWarn: drift.ModeWarn, drift.ModeEnabled: drift.ModeEnabled} {
		cfg, err := drift.Compile(nil, drift.Options{Mode: in})
		require.NoError(t, err)
		assert.Equal(t, want, cfg.Mode())
	}
}

// The rules decode from a Flux HelmRelease's spec.driftDetection as is.
func TestIgnoreRuleFluxYAML(t *testing.T) {
	var spec struct {
		Mode   drift.Mode         `json:"mode"`
		Ignore []drift.IgnoreRule `json:"ignore"`
	}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
mode: enabled
ignore:
- paths: ["/spec/replicas"]
  target:
    kind: Deployment
- paths: ["/data/generated"]
  target:
    group: ""
    kind: ConfigMap
    name: "cache-.*"
    namespace: default
    labelSelector: app=web
    annotationSelector: owner=me
`), &spec))
	assert.Equal(t, drift.ModeEnabled, spec.Mode)
	assert.Equal(t, []drift.IgnoreRule{
		{Paths: []string{"/spec/replicas"}, Target: &drift.Selector{Kind: "Deployment"}},
		{Paths: []string{"/data/generated"}, Target: &drift.Selector{Kind: "ConfigMap", Name: "cache-.*", Namespace: "default",
			LabelSelector: "app=web", AnnotationSelector: "owner=me"}},
	}, spec.Ignore)
	_, err := drift.Compile(spec.Ignore, drift.Options{Mode: spec.Mode})
	require.NoError(t, err)
}
