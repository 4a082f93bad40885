package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Command and args overriders reach Jobs and the pod template of a CronJob's
// jobTemplate; image overriders without a predicate reach Jobs but not
// CronJobs, as in Karmada.
func TestCommandArgsOnJobsAndCronJobs(t *testing.T) {
	const rules = `resourceSelectors: [{apiVersion: batch/v1, kind: Job}, {apiVersion: batch/v1, kind: CronJob}]
  overrideRules:
    - overriders:
        commandOverrider: [{containerName: pi, operator: add, value: [--fast]}]
        argsOverrider: [{containerName: pi, operator: remove, value: [-v]}]
        imageOverrider: [{component: Registry, operator: replace, value: mirror.local}]`
	e := engine(t, "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterOverridePolicy\nmetadata: {name: batch}\nspec:\n  "+rules+"\n")
	tests := []struct {
		name, doc, image string
		path             []string
	}{
		{"Job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: pi, namespace: n}\nspec: {template: {spec: {containers: [{name: pi, image: perl, command: [perl], args: [-v, -e]}]}}}\n",
			"mirror.local/perl", []string{"spec", "template", "spec", "containers", "0"}},
		{"CronJob", "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: pi, namespace: n}\nspec: {schedule: '@daily', jobTemplate: {spec: {template: {spec: {containers: [{name: pi, image: perl, command: [perl], args: [-v, -e]}]}}}}}\n",
			"perl", []string{"spec", "jobTemplate", "spec", "template", "spec", "containers", "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, applied, err := e.Override(object(t, tt.doc), Cluster{Name: "m"})
			require.NoError(t, err)
			c, ok := lookup(out.Object, tt.path)
			require.True(t, ok)
			cm := c.(map[string]any)
			assert.Equal(t, []any{"perl", "--fast"}, cm["command"])
			assert.Equal(t, []any{"-e"}, cm["args"])
			assert.Equal(t, tt.image, cm["image"])
			assert.Len(t, applied, 3)
		})
	}
}

// An image overrider never writes a reference that does not parse; the
// image is left as it was.
func TestImageOverriderNeverWritesInvalidReference(t *testing.T) {
	const digest = "sha256:dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9c"
	tests := []struct {
		name, image string
		o           ImageOverrider
		want        string
	}{
		{"repository removed", "ghcr.io/stefanprodan/podinfo:6.5.0", ImageOverrider{Component: ImageRepository, Operator: OverriderOpRemove}, "ghcr.io/stefanprodan/podinfo:6.5.0"},
		{"tag added as a digest", "ghcr.io/podinfo:6.5.0", ImageOverrider{Component: ImageTag, Operator: OverriderOpAdd, Value: digest}, "ghcr.io/podinfo:6.5.0"},
		{"tag replaced by text that is neither tag nor digest", "podinfo:6.5.0", ImageOverrider{Component: ImageTag, Operator: OverriderOpReplace, Value: "not a tag"}, "podinfo:6.5.0"},
		{"tag grown past 128 characters", "podinfo:v1", ImageOverrider{Component: ImageTag, Operator: OverriderOpAdd, Value: strings.Repeat("a", 127)}, "podinfo:v1"},
		{"repository with white space", "podinfo:1", ImageOverrider{Component: ImageRepository, Operator: OverriderOpReplace, Value: "a b"}, "podinfo:1"},
		{"tag removed, then the digest", "podinfo@" + digest, ImageOverrider{Component: ImageTag, Operator: OverriderOpRemove}, "podinfo"},
		{"tag replaced by a digest", "podinfo:1", ImageOverrider{Component: ImageTag, Operator: OverriderOpReplace, Value: digest}, "podinfo@" + digest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := overrideImage(tt.image, &tt.o)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			_, err = ParseImage(got)
			assert.NoError(t, err)
		})
	}
}

// Leaving an image unchanged is not silent: Place warns, naming the rule.
func TestWarnImageOverrideInvalid(t *testing.T) {
	e := engine(t, `apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: all}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: images}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  overrideRules:
    - overriders:
        imageOverrider:
          - {component: Registry, operator: replace, value: mirror.local}
          - {component: Repository, operator: remove}
`)
	p, err := e.Place(objects(t, podinfoDeployment), clusterNames("m"))
	require.NoError(t, err)
	var got []Warning
	for _, w := range p.Warnings {
		if w.Code == WarnImageOverrideInvalid {
			got = append(got, w)
		}
	}
	require.Len(t, got, 1)
	assert.Equal(t, "spec.overrideRules[0].overriders.imageOverrider[1]", got[0].Path)
	assert.Equal(t, "ClusterOverridePolicy images spec.overrideRules[0].overriders.imageOverrider[1]: it would write an invalid image reference, so the image is left unchanged on kind Deployment (e.g. Deployment shop/podinfo)", got[0].Message)
}
