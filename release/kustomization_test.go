package release_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/helmfleet/helmfleet/release"
)

// fluxKustomization uses every spec field helmfleet acts on, as Flux's
// docs write them.
const fluxKustomization = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  retryInterval: 1m
  timeout: 5m
  path: ./apps/dev
  prune: true
  deletionPolicy: Delete
  wait: true
  sourceRef:
    kind: GitRepository
    name: fleet
  dependsOn:
    - name: infrastructure
    - name: cert-manager
      namespace: cert-manager
      kind: HelmRelease
  healthChecks:
    - apiVersion: apps/v1
      kind: Deployment
      name: web
      namespace: apps
  targetNamespace: apps
  namePrefix: dev-
  nameSuffix: -a
  commonMetadata:
    labels:
      team: web
    annotations:
      owner: web
  patches:
    - patch: |
        - op: replace
          path: /spec/replicas
          value: 2
      target:
        kind: Deployment
  images:
    - name: nginx
      newTag: "1.27"
  components:
    - ../components/tls
  ignoreMissingComponents: true
  suspend: false
  force: true
  postBuild:
    substituteStrategy: Always
    substitute:
      cluster_env: dev
    substituteFrom:
      - kind: ConfigMap
        name: cluster-vars
      - kind: Secret
        name: cluster-secrets
        optional: true
status:
  observedGeneration: 3
  lastAppliedRevision: main@sha1:abc
  lastAttemptedRevision: main@sha1:abc
  lastHandledReconcileAt: "2026-12-04T12:00:00Z"
  inventory:
    entries:
      - id: apps_web_apps_Deployment
        v: v1
`

func TestLoadKustomization(t *testing.T) {
	objs, err := release.Load(strings.NewReader(fluxKustomization))
	require.NoError(t, err)
	require.Len(t, objs.Kustomizations, 1)
	k := objs.Kustomizations[0]
	assert.Equal(t, "apps", k.Name)
	assert.Equal(t, release.KustomizationSourceReference{Kind: "GitRepository", Name: "fleet", Namespace: "flux-system"}, k.Spec.SourceRef, "sourceRef.namespace defaults to the Kustomization's")
	assert.Equal(t, []release.DependencyReference{
		{Name: "infrastructure", Namespace: "flux-system"},
		{Name: "cert-manager", Namespace: "cert-manager", Kind: "HelmRelease"},
	}, k.Spec.DependsOn)
	assert.Equal(t, release.KustomizationKind, k.Spec.DependsOn[0].GetKind(release.KustomizationKind), "an empty kind is the dependent's own")
	assert.Equal(t, release.Kind, k.Spec.DependsOn[1].GetKind(release.KustomizationKind))
	assert.Equal(t, 5*time.Minute, k.GetTimeout())
	assert.Equal(t, time.Minute, k.GetRetryInterval())
	assert.Equal(t, release.SubstituteStrategyAlways, k.GetSubstituteStrategy())
	assert.True(t, k.DeletesInventory())
	assert.Equal(t, []release.SubstituteReference{{Kind: "ConfigMap", Name: "cluster-vars"}, {Kind: "Secret", Name: "cluster-secrets", Optional: true}}, k.Spec.PostBuild.SubstituteFrom)
	assert.Equal(t, []release.ResourceRef{{ID: "apps_web_apps_Deployment", Version: "v1"}}, k.Status.Inventory.Entries)

	cp := k.DeepCopy()
	cp.Spec.PostBuild.Substitute["cluster_env"] = "prod"
	cp.Spec.Components[0] = "x"
	assert.Equal(t, "dev", k.Spec.PostBuild.Substitute["cluster_env"], "DeepCopy copies maps")
	assert.Equal(t, "../components/tls", k.Spec.Components[0], "DeepCopy copies slices")
}

func TestKustomizationDefaults(t *testing.T) {
	k := &release.Kustomization{Spec: release.KustomizationSpec{Interval: metav1.Duration{Duration: 10 * time.Minute}}}
	assert.Equal(t, 9*time.Minute+30*time.Second, k.GetTimeout(), "interval less 30s")
	k.Spec.Interval.Duration = 40 * time.Second
	assert.Equal(t, 30*time.Second, k.GetTimeout(), "at least 30s")
	assert.Equal(t, 40*time.Second, k.GetRetryInterval())
	assert.Equal(t, release.DeletionPolicyMirrorPrune, k.GetDeletionPolicy())
	assert.False(t, k.DeletesInventory(), "MirrorPrune without prune orphans")
	k.Spec.Prune = true
	assert.True(t, k.DeletesInventory())
	k.Spec.DeletionPolicy = release.DeletionPolicyOrphan
	assert.False(t, k.DeletesInventory())
	assert.Equal(t, release.SubstituteStrategyWithVariables, k.GetSubstituteStrategy())
}

func TestKustomizationValidate(t *testing.T) {
	valid := func() *release.Kustomization {
		objs, err := release.Load(strings.NewReader(fluxKustomization))
		require.NoError(t, err)
		return objs.Kustomizations[0]
	}
	tests := []struct {
		name, path, value, msg string
		mutate                 func(k *release.Kustomization)
	}{
		{"source kind", "spec.sourceRef.kind", "HelmRepository", "must be one of OCIRepository, GitRepository, Bucket, ExternalArtifact",
			func(k *release.Kustomization) { k.Spec.SourceRef.Kind = "HelmRepository" }},
		{"source name", "spec.sourceRef.name", "", "is required", func(k *release.Kustomization) { k.Spec.SourceRef.Name = "" }},
		{"path leaves the source", "spec.path", "./apps/../../etc", "must not leave the source's root",
			func(k *release.Kustomization) { k.Spec.Path = "./apps/../../etc" }},
		{"component leaves the source", "spec.components[0]", "../../../x", "must not leave the source's root",
			func(k *release.Kustomization) { k.Spec.Components = []string{"../../../x"} }},
		{"interval", "spec.interval", "0s", "is required and must be positive",
			func(k *release.Kustomization) { k.Spec.Interval.Duration = 0 }},
		{"dependency kind", "spec.dependsOn[0].kind", "GitRepository", "must be one of HelmRelease, Kustomization",
			func(k *release.Kustomization) { k.Spec.DependsOn[0].Kind = "GitRepository" }},
		{"depends on itself", "spec.dependsOn[0].name", "apps", "a Kustomization cannot depend on itself",
			func(k *release.Kustomization) { k.Spec.DependsOn[0].Name = "apps" }},
		{"deletion policy", "spec.deletionPolicy", "Sometimes", "must be one of MirrorPrune, Delete, WaitForTermination, Orphan",
			func(k *release.Kustomization) { k.Spec.DeletionPolicy = "Sometimes" }},
		{"health check kind", "spec.healthChecks[0].kind", "", "is required", func(k *release.Kustomization) { k.Spec.HealthChecks[0].Kind = "" }},
		{"target namespace", "spec.targetNamespace", "Apps", "a lowercase RFC 1123 label",
			func(k *release.Kustomization) { k.Spec.TargetNamespace = "Apps" }},
		{"variable name", "spec.postBuild.substitute", "cluster-env", "invalid variable name",
			func(k *release.Kustomization) { k.Spec.PostBuild.Substitute["cluster-env"] = "x" }},
		{"substituteFrom kind", "spec.postBuild.substituteFrom[0].kind", "Values", "must be one of ConfigMap, Secret",
			func(k *release.Kustomization) { k.Spec.PostBuild.SubstituteFrom[0].Kind = "Values" }},
		{"substitute strategy", "spec.postBuild.substituteStrategy", "Never", "must be one of WithVariables, Always",
			func(k *release.Kustomization) { k.Spec.PostBuild.SubstituteStrategy = "Never" }},
		{"patch", "spec.patches[0].patch", "", "is required", func(k *release.Kustomization) { k.Spec.Patches[0].Patch = " " }},
		{"patch target", "spec.patches[0].target.kind", "(", "invalid regular expression",
			func(k *release.Kustomization) { k.Spec.Patches[0].Target.Kind = "(" }},
		{"kubeConfig unsupported", "spec.kubeConfig", "", "is not supported",
			func(k *release.Kustomization) {
				k.Spec.KubeConfig = &release.KubeConfigReference{SecretRef: &release.SecretKeyReference{Name: "kc"}}
			}},
		{"decryption unsupported", "spec.decryption", "sops", "is not supported",
			func(k *release.Kustomization) { k.Spec.Decryption = &release.Decryption{Provider: "sops"} }},
		{"healthCheckExprs expression not CEL", "spec.healthCheckExprs[1].failed", "status.phase ==",
			"is not valid CEL: ERROR: <input>:1:16: Syntax error: mismatched input '<EOF>'",
			func(k *release.Kustomization) {
				k.Spec.HealthCheckExprs = []release.CustomHealthCheck{
					{APIVersion: "x.io/v1", Kind: "X", HealthCheckExpressions: release.HealthCheckExpressions{Current: "true"}},
					{APIVersion: "y.io/v1", HealthCheckExpressions: release.HealthCheckExpressions{Current: "status.phase == 'Ready'", Failed: "status.phase =="}},
				}
			}},
		{"healthCheckExprs without current", "spec.healthCheckExprs[0].current", "", "is required",
			func(k *release.Kustomization) {
				k.Spec.HealthCheckExprs = []release.CustomHealthCheck{{APIVersion: "x.io/v1", Kind: "X"}}
			}},
		{"healthCheckExprs twice for a group and kind", "spec.healthCheckExprs[1]", "X.x.io", "checks the same group and kind as spec.healthCheckExprs[0]",
			func(k *release.Kustomization) {
				k.Spec.HealthCheckExprs = []release.CustomHealthCheck{
					{APIVersion: "x.io/v1", Kind: "X", HealthCheckExpressions: release.HealthCheckExpressions{Current: "true"}},
					{APIVersion: "x.io/v2", Kind: "X", HealthCheckExpressions: release.HealthCheckExpressions{Current: "true"}},
				}
			}},
		{"readyExpr not a bool", "spec.dependsOn[0].readyExpr", "dep.status.ready", "must yield a bool, not dyn",
			func(k *release.Kustomization) { k.Spec.DependsOn[0].ReadyExpr = "dep.status.ready" }},
	}
	require.NoError(t, valid().Validate())
	withCEL := valid()
	withCEL.Spec.HealthCheckExprs = []release.CustomHealthCheck{{APIVersion: "x.io/v1", HealthCheckExpressions: release.HealthCheckExpressions{
		Current: "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')", Failed: "status.phase == 'Failed'"}}}
	withCEL.Spec.DependsOn[0].ReadyExpr = "dep.status.ready == true"
	require.NoError(t, withCEL.Validate(), "Flux's CEL is accepted, kind optional")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := valid()
			tc.mutate(k)
			err := k.Validate()
			var ve *release.ValidationError
			require.True(t, errors.As(err, &ve), "%v", err)
			assert.Equal(t, "Kustomization", ve.Kind)
			assert.Equal(t, "flux-system", ve.Namespace)
			assert.Equal(t, "apps", ve.Name)
			require.Len(t, ve.Errors, 1, "%v", err)
			assert.Equal(t, tc.path, ve.Errors[0].Path)
			assert.Equal(t, tc.value, ve.Errors[0].Value)
			assert.Contains(t, ve.Errors[0].Message, tc.msg)
		})
	}
}

func TestKustomizationDecodeStrict(t *testing.T) {
	doc := strings.Replace(fluxKustomization, "  prune: true\n", "  prune: true\n  pruneAll: true\n", 1)
	_, err := release.Decode(strings.NewReader(doc))
	var de *release.DecodeError
	require.ErrorAs(t, err, &de)
	require.Len(t, de.Problems, 1)
	assert.Equal(t, "spec.pruneAll", de.Problems[0].Path)
	assert.Equal(t, "Kustomization", de.Problems[0].Kind)

	_, err = release.Decode(strings.NewReader(strings.Replace(fluxKustomization, "kustomize.toolkit.fluxcd.io/v1", "kustomize.toolkit.fluxcd.io/v1beta2", 1)))
	require.ErrorAs(t, err, &de)
	assert.Contains(t, de.Error(), "v1beta2")
}

func TestKustomizationScheme(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, release.AddToScheme(s))
	objs, err := release.Load(strings.NewReader(fluxKustomization))
	require.NoError(t, err)
	gvks, _, err := s.ObjectKinds(objs.Kustomizations[0])
	require.NoError(t, err)
	assert.Equal(t, release.KustomizationGroupVersion.WithKind("Kustomization"), gvks[0])

	codecs := serializer.NewCodecFactory(s)
	obj, _, err := codecs.UniversalDeserializer().Decode([]byte(fluxKustomization), nil, nil)
	require.NoError(t, err)
	k, ok := obj.(*release.Kustomization)
	require.True(t, ok, "%T", obj)
	assert.Equal(t, "./apps/dev", k.Spec.Path)
	list := &release.KustomizationList{Items: []release.Kustomization{*k}}
	assert.Equal(t, list, list.DeepCopyObject())
}

func TestReleaseDependsOnKind(t *testing.T) {
	doc := `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 5m
  chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: charts}}}
  dependsOn:
    - {name: web, kind: Kustomization}
    - {name: infra, kind: Kustomization}
    - {name: db}
`
	objs, err := release.Load(strings.NewReader(doc))
	require.NoError(t, err, "a Release may depend on a Kustomization of its own name")
	deps := objs.Releases[0].Spec.DependsOn
	assert.Equal(t, "Kustomization", deps[1].GetKind(release.Kind))
	assert.Equal(t, "HelmRelease", deps[2].GetKind(release.Kind))

	_, err = release.Load(strings.NewReader(strings.Replace(doc, "{name: db}", "{name: db, kind: Bucket}", 1)))
	require.ErrorContains(t, err, "spec.dependsOn[2].kind: must be one of HelmRelease, Kustomization (value: Bucket)")
}
