package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

const (
	oldSecretCanary = fixture.SecretCanaryOld
	newSecretCanary = fixture.SecretCanaryNew
)

// secretRepo uses ${TOKEN} plain, sliced, folded, escaped, quoted, in a
// key and in a Secret object.
var secretRepo = fstest.MapFS{
	"app/kustomization.yaml": {Data: []byte("resources: [cm.yaml, secret.yaml]\n")},
	"app/cm.yaml": {Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: canary, namespace: apps}
data:
  plain: ${TOKEN}
  sliced: ${TOKEN:9:10}
  folded: >-
    ` + strings.Repeat("lorem ipsum dolor ", 6) + `${TOKEN} ` + strings.Repeat("lorem ipsum dolor ", 6) + `
  escaped: "line one\nline two\t${TOKEN}\\end"
  quoted: '"${TOKEN}"'
  ${TOKEN:0:8}-key: literal
`)},
	"parent/kustomization.yaml": {Data: []byte("resources: [child.yaml]\n")},
	"parent/child.yaml": {Data: []byte(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: child, namespace: flux-system}
spec:
  interval: 10m
  path: ./app
  sourceRef: {kind: GitRepository, name: fleet}
  postBuild:
    substitute: {TOKEN: "${TOKEN}"}
`)},
	"app/secret.yaml": {Data: []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: canary, namespace: apps}\nstringData:\n  token: ${TOKEN}\n")},
}

// refusingCluster is a member whose API server, once refuse is set,
// refuses the ConfigMap canary with a message that quotes the object,
// as validation does ("Invalid value: …").
type refusingCluster struct {
	*memory.Cluster
	mu     sync.Mutex
	refuse bool
}

func (c *refusingCluster) Apply(ctx context.Context, obj *unstructured.Unstructured, opts release.ApplyOptions) (*unstructured.Unstructured, error) {
	c.mu.Lock()
	refuse := c.refuse
	c.mu.Unlock()
	if refuse && !opts.DryRun && obj.GetKind() == "ConfigMap" && obj.GetName() == "canary" {
		j, _ := json.Marshal(obj.Object)
		return nil, fmt.Errorf("ConfigMap %q is invalid: Invalid value: %s", obj.GetName(), j)
	}
	return c.Cluster.Apply(ctx, obj, opts)
}

func setSecret(t *testing.T, c *memory.Cluster, token string) {
	t.Helper()
	s := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "creds", "namespace": "flux-system"},
		"stringData": map[string]any{"TOKEN": token}}}
	_, err := c.Apply(t.Context(), s, release.ApplyOptions{FieldManager: "test", Force: true})
	require.NoError(t, err)
}

// events records a fleet's events as text.
type events struct {
	mu    sync.Mutex
	lines []string
}

func (e *events) add(ev fleet.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lines = append(e.lines, fmt.Sprintf("%+v", ev))
	if ev.Err != nil {
		e.lines = append(e.lines, ev.Err.Error())
	}
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.lines, "\n")
}

// secretFleet is a fleet of one member, dev-1, whose Kustomizations
// read secretRepo.
func secretFleet(t *testing.T, member release.Cluster) (*fleet.Fleet, *events) {
	t.Helper()
	ev := &events{}
	rec, err := reconcile.New(reconcile.Config{Charts: fixture.Charts(), PollInterval: time.Millisecond})
	require.NoError(t, err)
	f, err := fleet.New(fleet.Config{
		Members:    []release.Member{{Cluster: member, Facts: policy.Cluster{Labels: map[string]string{"env": "dev"}}}},
		Reconciler: rec,
		KustomizeConfig: &kustomize.ReconcilerConfig{
			Sources:      kustomize.MapSources{"GitRepository/flux-system/fleet": {FS: secretRepo, Revision: "main@sha1:0123abc"}},
			PollInterval: time.Millisecond,
		},
		Events: ev.add,
	})
	require.NoError(t, err)
	return f, ev
}

// TestFleetKustomizationMasksSecretVariables: no piece of a
// substituteFrom Secret's value, before or after the Secret is rotated
// on the member, shows in the fleet's plan (table, diff, JSON, errors),
// its apply report, its events or the Kustomization's status, also when
// the member refuses an object that holds the value.
func TestFleetKustomizationMasksSecretVariables(t *testing.T) {
	ctx := t.Context()
	member := &refusingCluster{Cluster: memory.New("dev-1")}
	setSecret(t, member.Cluster, oldSecretCanary)
	f, ev := secretFleet(t, member)
	in := decodeInputs(t, kustomizationYAML("canary", "./app", "  postBuild:\n    substituteFrom: [{kind: Secret, name: creds}]\n")+
		placeOn("canary", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", everywhere))
	key := kkey("dev-1", "canary")

	planOutputs := func(what string) *fleet.Plan {
		t.Helper()
		plan, err := f.Plan(ctx, in)
		require.NoError(t, err)
		j, err := json.Marshal(plan)
		require.NoError(t, err)
		out := plan.Table() + plan.Diff() + string(j)
		for _, e := range plan.Errors {
			out += e.Error()
		}
		fixture.AssertNoSecretCanary(t, what, out)
		return plan
	}
	applyOutputs := func(what string, plan *fleet.Plan) error {
		t.Helper()
		rep, err := f.Apply(ctx, plan, fleet.ApplyOptions{})
		out := rep.Table()
		for _, it := range rep.Items {
			if it.Err != nil {
				out += it.Err.Error()
			}
		}
		if err != nil {
			out += err.Error()
		}
		out += ev.String()
		st, ok := f.KustomizationStatus(key)
		require.True(t, ok)
		j, jerr := json.Marshal(st)
		require.NoError(t, jerr)
		fixture.AssertNoSecretCanary(t, what, out+string(j))
		return err
	}

	plan := planOutputs("the first plan")
	assert.Contains(t, plan.Diff(), "plain: (secret value)")
	require.NoError(t, applyOutputs("the first apply", plan))
	cm, err := member.Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: "canary"})
	require.NoError(t, err)
	assert.Equal(t, oldSecretCanary, cm.Object["data"].(map[string]any)["plain"], "what is applied is real")

	setSecret(t, member.Cluster, newSecretCanary)
	plan = planOutputs("the plan after the rotation")
	kp, ok := plan.Kustomization(key)
	require.True(t, ok)
	assert.Equal(t, reconcile.StateOutOfSync, kp.State)
	assert.Contains(t, plan.Diff(), "-  plain: (secret value, old)")
	assert.Contains(t, plan.Diff(), "+  plain: (secret value, new)")

	member.mu.Lock()
	member.refuse = true
	member.mu.Unlock()
	err = applyOutputs("the refused apply", plan)
	require.Error(t, err)
	assert.ErrorIs(t, err, release.ErrWithheld)
	assert.Contains(t, err.Error(), "Kustomization flux-system/canary: apply failed at ConfigMap apps/canary")
}

// TestFleetKustomizationMasksPassedOnSecretVariables: a parent
// Kustomization that substitutes a Secret's value into the
// postBuild.substitute of a child it produces (as a cluster's variables
// are passed on) makes the child's plan mask it too.
func TestFleetKustomizationMasksPassedOnSecretVariables(t *testing.T) {
	ctx := t.Context()
	member := memory.New("dev-1")
	setSecret(t, member, oldSecretCanary)
	f, _ := secretFleet(t, member)
	in := decodeInputs(t, kustomizationYAML("parent", "./parent", "  postBuild:\n    substituteFrom: [{kind: Secret, name: creds}]\n")+
		placeOn("parent", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", everywhere))
	plan, err := f.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	child, ok := plan.Kustomization(kkey("dev-1", "child"))
	require.True(t, ok, "the parent produces the child")
	assert.Contains(t, child.Diff, "plain: (secret value)")
	j, err := json.Marshal(plan)
	require.NoError(t, err)
	fixture.AssertNoSecretCanary(t, "the plan", plan.Table()+plan.Diff()+string(j))
	_, err = f.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	cm, err := member.Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: "canary"})
	require.NoError(t, err)
	assert.Equal(t, oldSecretCanary, cm.Object["data"].(map[string]any)["plain"], "what is applied is real")
}
