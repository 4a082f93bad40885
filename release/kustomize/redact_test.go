package kustomize_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
)

const (
	oldCanary = fixture.SecretCanaryOld
	newCanary = fixture.SecretCanaryNew
)

// canaryTree uses ${TOKEN} plain, sliced, in a long string that YAML
// folds, in an escaped (double-quoted) string, quoted, with a default,
// in a map key, in an environment variable, and in a Secret object.
func canaryTree() fstest.MapFS {
	long := strings.Repeat("lorem ipsum dolor ", 6)
	return fstest.MapFS{
		"app/kustomization.yaml": file("resources: [cm.yaml, secret.yaml, deploy.yaml]\n"),
		"app/cm.yaml": file(`apiVersion: v1
kind: ConfigMap
metadata:
  name: canary
  namespace: apps
data:
  plain: ${TOKEN}
  sliced: ${TOKEN:9:10}
  folded: >-
    ` + long + `${TOKEN} ` + long + `
  escaped: "line one\nline two\t${TOKEN}\\end"
  quoted: '"${TOKEN}"'
  defaulted: ${TOKEN:=nothing}
  ${TOKEN:0:8}-key: literal
  literal: unchanged
`),
		"app/secret.yaml": file(`apiVersion: v1
kind: Secret
metadata:
  name: canary
  namespace: apps
stringData:
  token: ${TOKEN}
  literal: not-from-a-variable
`),
		"app/deploy.yaml": file(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx
        args: ["--token=${TOKEN}", "--verbose"]
        env:
        - name: TOKEN
          value: ${TOKEN}
`),
	}
}

// planOutputs renders everything a plan shows: each object's diff, the
// plan as JSON and its warnings.
func planOutputs(t *testing.T, p *kustomize.Plan) string {
	t.Helper()
	j, err := json.Marshal(p)
	require.NoError(t, err)
	var b strings.Builder
	for _, o := range p.Objects {
		b.WriteString(o.Diff)
	}
	b.Write(j)
	b.WriteString(strings.Join(p.Warnings, "\n"))
	return b.String()
}

// TestPlanMasksSecretVariables: no piece of a substituteFrom Secret's
// value shows in a plan, before a reconcile (created), after it
// (unchanged), or after the Secret is rotated (the live side holds the
// old value, the built side the new); the masked text still shows that
// the values changed; what is applied holds the real values.
func TestPlanMasksSecretVariables(t *testing.T) {
	src := &changingTree{}
	src.set("1", canaryTree())
	vars := fakeVars{"Secret/creds": {"TOKEN": oldCanary}}
	r := newReconciler(t, src, func(cfg *kustomize.ReconcilerConfig) { cfg.Variables = vars })
	k := ks("./app", func(k *release.Kustomization) {
		k.Spec.PostBuild = &release.PostBuild{SubstituteFrom: []release.SubstituteReference{{Kind: "Secret", Name: "creds"}}}
	})
	c := memory.New("dev")

	p, err := r.Plan(t.Context(), c, k)
	require.NoError(t, err)
	out := planOutputs(t, p)
	fixture.AssertNoSecretCanary(t, "the first plan", out)
	assert.Contains(t, out, "(secret value)")
	assert.Contains(t, out, "literal: unchanged", "literal values are shown")
	assert.Contains(t, out, "(secret key 1): (secret value)", "a key from a Secret is masked, with its value")

	_, err = r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	cm, err := c.Get(t.Context(), release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "apps", Name: "canary"})
	require.NoError(t, err)
	assert.Equal(t, oldCanary, cm.Object["data"].(map[string]any)["plain"], "what is applied is real")
	assert.Equal(t, "q7Z9wX4kP2", cm.Object["data"].(map[string]any)["sliced"])

	p, err = r.Plan(t.Context(), c, k)
	require.NoError(t, err)
	fixture.AssertNoSecretCanary(t, "the plan after apply", planOutputs(t, p))
	assert.False(t, p.Changed(), "%+v", p.Objects)

	vars["Secret/creds"]["TOKEN"] = newCanary // rotated
	p, err = r.Plan(t.Context(), c, k)
	require.NoError(t, err)
	out = planOutputs(t, p)
	fixture.AssertNoSecretCanary(t, "the plan after the rotation", out)
	assert.True(t, p.Changed())
	for _, o := range p.Objects {
		assert.Equal(t, kustomize.PlanUpdate, o.Action, o.Object.String())
	}
	assert.Contains(t, out, "-  plain: (secret value, old)")
	assert.Contains(t, out, "+  plain: (secret value, new)")
}

// leakyCluster refuses to apply one object with an error that quotes
// the object's content, as an API server's validation does
// ("Invalid value: …").
type leakyCluster struct {
	*memory.Cluster
	kind string
}

func (c *leakyCluster) Apply(ctx context.Context, obj *unstructured.Unstructured, opts release.ApplyOptions) (*unstructured.Unstructured, error) {
	if obj.GetKind() == c.kind {
		j, _ := json.Marshal(obj.Object)
		return nil, fmt.Errorf("%s %q is invalid: Invalid value: %s", obj.GetKind(), obj.GetName(), j)
	}
	return c.Cluster.Apply(ctx, obj, opts)
}

// TestErrorsWithholdSecretVariables: an error that may quote a value
// substituted from a Secret (the cluster refusing such an object, a
// HelmRelease whose substituted field does not decode, a substituted
// object that is no YAML) is a release.WithheldError naming the
// Kustomization and the object, in the returned error, the Ready
// condition and the plan; errors about objects without such values keep
// their text.
func TestErrorsWithholdSecretVariables(t *testing.T) {
	secretRef := func(k *release.Kustomization) {
		k.Spec.PostBuild = &release.PostBuild{SubstituteFrom: []release.SubstituteReference{{Kind: "Secret", Name: "creds"}}}
	}
	for _, tc := range []struct {
		name     string
		files    fstest.MapFS
		leaky    string // kind the cluster refuses
		origin   string // what the withheld error names
		withheld bool
	}{
		{name: "apply refused", files: canaryTree(), leaky: "ConfigMap", origin: "ConfigMap apps/canary", withheld: true},
		{name: "apply of a Secret refused", files: canaryTree(), leaky: "Secret", origin: "Secret apps/canary", withheld: true},
		{name: "apply without Secret values refused keeps its text", files: fstest.MapFS{
			"app/kustomization.yaml": file("resources: [cm.yaml]\n"),
			"app/cm.yaml":            file(configMap("plain")),
		}, leaky: "ConfigMap"},
		{name: "decode", files: fstest.MapFS{
			"app/kustomization.yaml": file("resources: [hr.yaml]\n"),
			"app/hr.yaml": file(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: ${TOKEN}
  chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: web}}}
`),
		}, origin: "app/hr.yaml", withheld: true},
		{name: "substituted text is no YAML", files: fstest.MapFS{
			"app/kustomization.yaml": file("resources: [cm.yaml]\n"),
			"app/cm.yaml":            file("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y, namespace: apps}\ndata:\n  a: '${TOKEN}'\n"),
		}, origin: "ConfigMap apps/y", withheld: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &changingTree{}
			src.set("1", tc.files)
			token := oldCanary
			if tc.name == "substituted text is no YAML" {
				token = oldCanary + "' : [ ' ] {"
			}
			r := newReconciler(t, src, func(cfg *kustomize.ReconcilerConfig) {
				cfg.Variables = fakeVars{"Secret/creds": {"TOKEN": token}}
			})
			c := &leakyCluster{Cluster: memory.New("dev")}
			k := ks("./app", secretRef)
			if tc.leaky != "" {
				// Applied once, so that the plan's dry run has a live
				// object and fails too.
				_, err := r.Reconcile(t.Context(), c, k)
				require.NoError(t, err)
				c.kind = tc.leaky
			}
			_, perr := r.Plan(t.Context(), c, k)
			_, err := r.Reconcile(t.Context(), c, k)
			for _, e := range []error{perr, err} {
				require.Error(t, e)
				fixture.AssertNoSecretCanary(t, "the error", e.Error())
				assert.Equal(t, tc.withheld, errors.Is(e, release.ErrWithheld), "%v", e)
				if tc.withheld {
					assert.Contains(t, e.Error(), "Kustomization apps/app")
					assert.Contains(t, e.Error(), tc.origin)
				}
			}
			ready := k.Status.GetCondition(release.ConditionReady)
			require.NotNil(t, ready)
			fixture.AssertNoSecretCanary(t, "the Ready condition", ready.Message)
			if !tc.withheld {
				assert.Contains(t, err.Error(), "Invalid value", "an error without Secret values keeps its text")
			}
		})
	}
}

// TestBuildErrorsWithheldWithSecretData: kustomize quotes the nodes it
// fails on, so its error is withheld when the tree holds a Secret object
// or a secretGenerator's data, and keeps its text otherwise.
func TestBuildErrorsWithheldWithSecretData(t *testing.T) {
	// A patch of an object that does not exist: kustomize quotes the
	// patch, which here holds the Secret's data.
	patch := "patches:\n- patch: |\n    apiVersion: v1\n    kind: Secret\n    metadata: {name: missing}\n    stringData: {token: " + strings.ReplaceAll(oldCanary, "\t", " ") + "}\n"
	for _, tc := range []struct {
		name     string
		files    fstest.MapFS
		withheld bool
	}{
		{name: "Secret object", files: fstest.MapFS{
			"app/kustomization.yaml": file("resources: [secret.yaml]\n" + patch),
			"app/secret.yaml":        file("apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: apps}\nstringData: {token: x}\n"),
		}, withheld: true},
		{name: "secretGenerator", files: fstest.MapFS{
			"app/kustomization.yaml": file("secretGenerator:\n- name: g\n  literals: [token=x]\n" + patch),
		}, withheld: true},
		{name: "no Secret data", files: fstest.MapFS{
			"app/kustomization.yaml": file("resources: [cm.yaml]\n" + strings.ReplaceAll(patch, "kind: Secret", "kind: ConfigMap")),
			"app/cm.yaml":            file(configMap("c")),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &changingTree{}
			src.set("1", tc.files)
			r := newReconciler(t, src)
			k := ks("./app")
			_, err := r.Build(t.Context(), k)
			require.Error(t, err)
			assert.Equal(t, tc.withheld, errors.Is(err, release.ErrWithheld), "%v", err)
			if tc.withheld {
				assert.Equal(t, "Kustomization apps/app: kustomize build failed at app: the error text is withheld because it may contain Secret values", err.Error())
				return
			}
			_, ok := errors.AsType[*kustomize.BuildError](err)
			assert.True(t, ok, "%T %v", err, err)
			assert.Contains(t, err.Error(), "missing", "kustomize's text is kept")
		})
	}
}

// TestHealthMessagesWithheld: a failed health check names the objects
// and their status, but not the status message of an object that holds
// values from Secrets (a controller may echo them); other objects keep
// theirs.
func TestHealthMessagesWithheld(t *testing.T) {
	src := &changingTree{}
	files := canaryTree()
	files["app/plain.yaml"] = file(configMap("plain"))
	files["app/kustomization.yaml"] = file("resources: [cm.yaml, plain.yaml]\n")
	src.set("1", files)
	r := newReconciler(t, src, func(cfg *kustomize.ReconcilerConfig) {
		cfg.Variables = fakeVars{"Secret/creds": {"TOKEN": oldCanary}}
	})
	c := memory.New("dev", memory.WithHealth(func(o *unstructured.Unstructured) memory.Health {
		j, _ := json.Marshal(o.Object["data"])
		return memory.Health{Failed: true, Message: "rejected " + string(j)}
	}))
	k := ks("./app", func(k *release.Kustomization) {
		k.Spec.Wait = true
		k.Spec.PostBuild = &release.PostBuild{SubstituteFrom: []release.SubstituteReference{{Kind: "Secret", Name: "creds"}}}
	})
	_, err := r.Reconcile(t.Context(), c, k)
	require.Error(t, err)
	fixture.AssertNoSecretCanary(t, "the health error", err.Error())
	fixture.AssertNoSecretCanary(t, "the Ready condition", k.Status.GetCondition(release.ConditionReady).Message)
	assert.Contains(t, err.Error(), "ConfigMap apps/canary")
	assert.Contains(t, err.Error(), "status message withheld")
	assert.Contains(t, err.Error(), `rejected {"k":"v"}`, "the message of an object without Secret values is kept")
}
