package drift_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/drift"
)

type objects = map[string]*unstructured.Unstructured

func TestDetect(t *testing.T) {
	replicasOnDeployments := []drift.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &drift.Selector{Kind: "Deployment"}}}
	scale := func(t testing.TB, live objects) {
		require.NoError(t, unstructured.SetNestedField(live["Deployment/podinfo"].Object, int64(5), "spec", "replicas"))
		takeOwnership(live["Deployment/podinfo"], "kubectl", "scale", "f:spec", "f:replicas")
	}
	tests := []struct {
		name          string
		rules         []drift.IgnoreRule
		opts          drift.Options
		mutateDesired func(t testing.TB, desired objects)
		mutateLive    func(t testing.TB, live objects)
		dropLive      []string
		want          map[string]drift.Status
		check         func(t *testing.T, rep *drift.Report)
		golden        string
	}{
		{
			name: "in sync despite server defaults, status, canonical quantities and others' labels",
			want: map[string]drift.Status{"Deployment/podinfo": drift.StatusUnchanged, "Service/podinfo": drift.StatusUnchanged,
				"ConfigMap/podinfo-config": drift.StatusUnchanged, "Secret/podinfo-auth": drift.StatusUnchanged},
			check: func(t *testing.T, rep *drift.Report) {
				assert.False(t, rep.Drifted())
				assert.Empty(t, rep.Corrections())
			},
		},
		{
			name:       "flux: ignore /spec/replicas on Deployments hides a scale",
			rules:      append(replicasOnDeployments, drift.IgnoreRule{Paths: []string{"/spec/replicas"}, Target: &drift.Selector{Kind: "StatefulSet"}}),
			mutateLive: scale,
			want:       map[string]drift.Status{"Deployment/podinfo": drift.StatusUnchanged, "Service/podinfo": drift.StatusUnchanged},
			check: func(t *testing.T, rep *drift.Report) {
				require.Len(t, rep.Rules, 2)
				assert.Equal(t, []drift.ObjectRef{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "default", Name: "podinfo"}}, rep.Rules[0].Objects)
				assert.Equal(t, []string{"ignore[1]"}, rep.Unmatched())
			},
			golden: "flux-replicas.txt",
		},
		{
			name:       "without the rule a scale is drift owned by the scaler",
			mutateLive: scale,
			want:       map[string]drift.Status{"Deployment/podinfo": drift.StatusModified},
			check: func(t *testing.T, rep *drift.Report) {
				o := find(t, rep, "Deployment", "podinfo")
				require.Len(t, o.Changes, 1)
				assert.Equal(t, drift.FieldChange{Field: "spec.replicas", Path: "/spec/replicas", Op: "replace",
					Live: int64(5), Desired: int64(2), Managers: []string{"kubectl"}}, o.Changes[0])
				assert.Equal(t, drift.Patch{{Op: "replace", Path: "/spec/replicas", Value: int64(2)}}, o.Patch)
			},
		},
		{
			name: "image edited, label changed and removed, sidecar and foreign label ignored",
			mutateLive: func(t testing.TB, live objects) {
				d := live["Deployment/podinfo"]
				c := container(t, d, "podinfo")
				c["image"] = "ghcr.io/stefanprodan/podinfo:6.6.0"
				takeOwnership(d, "kubectl-edit", "", "f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"podinfo"}`, "f:image")
				containers := d.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
				containers["containers"] = append([]any{map[string]any{"name": "istio-proxy", "image": "istio/proxyv2:1.24"}},
					containers["containers"].([]any)...)
				labels := d.GetLabels()
				labels["helm.sh/chart"] = "podinfo-6.4.0"
				delete(labels, "team")
				labels["injected-by"] = "istio"
				d.SetLabels(labels)
			},
			want: map[string]drift.Status{"Deployment/podinfo": drift.StatusModified},
			check: func(t *testing.T, rep *drift.Report) {
				o := find(t, rep, "Deployment", "podinfo")
				var fields []string
				for _, c := range o.Changes {
					fields = append(fields, c.Field)
				}
				assert.Equal(t, []string{`metadata.labels["helm.sh/chart"]`, "metadata.labels.team",
					"spec.template.spec.containers[name=podinfo].image"}, fields)
				assert.Equal(t, "/spec/template/spec/containers/1/image", o.Changes[2].Path)
				assert.Equal(t, []string{"kubectl-edit"}, o.Changes[2].Managers)
				assert.Equal(t, "/metadata/labels/helm.sh~1chart", o.Changes[0].Path)
			},
			golden: "edited.txt",
		},
		{
			name: "several rules without target all apply",
			rules: []drift.IgnoreRule{
				{Paths: []string{"/spec/replicas"}},
				{Paths: []string{"/metadata/labels/team"}},
				{Paths: []string{"/data/LOG_LEVEL"}},
			},
			mutateLive: func(t testing.TB, live objects) {
				scale(t, live)
				labels := live["Deployment/podinfo"].GetLabels()
				labels["team"] = "someone-else"
				live["Deployment/podinfo"].SetLabels(labels)
				require.NoError(t, unstructured.SetNestedField(live["ConfigMap/podinfo-config"].Object, "debug", "data", "LOG_LEVEL"))
			},
			want: map[string]drift.Status{"Deployment/podinfo": drift.StatusUnchanged, "ConfigMap/podinfo-config": drift.StatusUnchanged},
			check: func(t *testing.T, rep *drift.Report) {
				for _, rr := range rep.Rules {
					assert.Len(t, rr.Objects, 4, rr.Rule)
				}
			},
		},
		{
			name:  "opt-out annotation on desired or live, whole-object rule",
			rules: []drift.IgnoreRule{{Paths: []string{""}, Target: &drift.Selector{Kind: "Service", Name: "pod.*"}}},
			mutateDesired: func(t testing.TB, desired objects) {
				desired["ConfigMap/podinfo-config"].SetAnnotations(map[string]string{drift.DisableAnnotation: drift.DisableValue})
			},
			mutateLive: func(t testing.TB, live objects) {
				scale(t, live)
				a := live["Deployment/podinfo"].GetAnnotations()
				a[drift.DisableAnnotation] = drift.DisableValue
				live["Deployment/podinfo"].SetAnnotations(a)
				require.NoError(t, unstructured.SetNestedField(live["Service/podinfo"].Object, "NodePort", "spec", "type"))
			},
			want: map[string]drift.Status{"Deployment/podinfo": drift.StatusExcluded, "Service/podinfo": drift.StatusExcluded,
				"ConfigMap/podinfo-config": drift.StatusExcluded, "Secret/podinfo-auth": drift.StatusUnchanged},
			golden: "excluded.txt",
		},
		{
			name: "missing and extra objects",
			opts: drift.Options{Extra: &drift.Selector{AnnotationSelector: "meta.helm.sh/release-name=podinfo"}},
			mutateLive: func(t testing.TB, live objects) {
				old := live["ConfigMap/podinfo-config"].DeepCopy()
				old.SetName("podinfo-legacy")
				live["ConfigMap/podinfo-legacy"] = old
				other := live["ConfigMap/podinfo-config"].DeepCopy()
				other.SetName("someone-elses")
				other.SetAnnotations(nil)
				live["ConfigMap/someone-elses"] = other
			},
			dropLive: []string{"Service/podinfo"},
			want: map[string]drift.Status{"Service/podinfo": drift.StatusMissing, "ConfigMap/podinfo-legacy": drift.StatusExtra,
				"Deployment/podinfo": drift.StatusUnchanged},
			check: func(t *testing.T, rep *drift.Report) {
				assert.Len(t, rep.Objects, 5, "the unlabelled ConfigMap is not the release's")
				cs := rep.Corrections()
				require.Len(t, cs, 1)
				assert.Equal(t, drift.ActionCreate, cs[0].Action)
				assert.Equal(t, "podinfo", cs[0].Create.GetName())
			},
			golden: "missing-extra.txt",
		},
		{
			name: "secret data masked in the report",
			mutateLive: func(t testing.TB, live objects) {
				require.NoError(t, unstructured.SetNestedField(live["Secret/podinfo-auth"].Object, "bGVha2Vk", "data", "password"))
				takeOwnership(live["Secret/podinfo-auth"], "kubectl-edit", "", "f:data", "f:password")
				unstructured.RemoveNestedField(live["Secret/podinfo-auth"].Object, "data", "token")
			},
			want: map[string]drift.Status{"Secret/podinfo-auth": drift.StatusModified},
			check: func(t *testing.T, rep *drift.Report) {
				o := find(t, rep, "Secret", "podinfo-auth")
				assert.Equal(t, drift.Patch{{Op: "replace", Path: "/data/password", Value: "***"}, {Op: "add", Path: "/data/token", Value: "***"}}, o.Patch)
				assert.NotContains(t, rep.String(), "czNjcjN0LXBhNTU=")
				assert.NotContains(t, rep.String(), "bGVha2Vk")
				cs := rep.Corrections()
				require.Len(t, cs, 1)
				assert.Equal(t, drift.Patch{{Op: "replace", Path: "/data/password", Value: "czNjcjN0LXBhNTU="},
					{Op: "add", Path: "/data/token", Value: "dG9rZW4tdmFsdWU="}}, cs[0].Patch)
				assert.NotContains(t, cs[0].String(), "czNjcjN0LXBhNTU=")
			},
			golden: "secret.txt",
		},
		{
			name: "ignore by field manager, argo style",
			opts: drift.Options{Managers: []drift.ManagerRule{{Managers: []string{"vpa-updater"}, Target: &drift.Selector{Kind: "Deployment"}}}},
			mutateLive: func(t testing.TB, live objects) {
				d := live["Deployment/podinfo"]
				c := container(t, d, "podinfo")
				c["resources"].(map[string]any)["requests"].(map[string]any)["memory"] = "96Mi"
				takeOwnership(d, "vpa-updater", "", "f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"podinfo"}`, "f:resources", "f:requests", "f:memory")
				c["env"].([]any)[0].(map[string]any)["value"] = "#ff0000"
			},
			want: map[string]drift.Status{"Deployment/podinfo": drift.StatusModified},
			check: func(t *testing.T, rep *drift.Report) {
				o := find(t, rep, "Deployment", "podinfo")
				require.Len(t, o.Changes, 1)
				assert.Equal(t, "spec.template.spec.containers[name=podinfo].env[name=PODINFO_UI_COLOR].value", o.Changes[0].Field)
				require.Len(t, o.Ignored, 1)
				assert.Equal(t, []string{"vpa-updater"}, o.Ignored[0].Managers)
				assert.Equal(t, []string{"managers[0]"}, o.Rules)
			},
			golden: "managers.txt",
		},
		{
			name: "configmap data: changed value, removed key, empty value",
			mutateLive: func(t testing.TB, live objects) {
				data := live["ConfigMap/podinfo-config"].Object["data"].(map[string]any)
				data["UI_MESSAGE"] = "hacked"
				delete(data, "EMPTY")
				data["ADDED_BY_OTHERS"] = "x"
			},
			want: map[string]drift.Status{"ConfigMap/podinfo-config": drift.StatusModified},
			check: func(t *testing.T, rep *drift.Report) {
				o := find(t, rep, "ConfigMap", "podinfo-config")
				assert.Equal(t, drift.Patch{{Op: "add", Path: "/data/EMPTY", Value: ""}, {Op: "replace", Path: "/data/UI_MESSAGE", Value: "greetings from podinfo"}}, o.Patch)
			},
		},
		{
			name:       "warn mode reports without corrections",
			opts:       drift.Options{Mode: drift.ModeWarn},
			mutateLive: scale,
			want:       map[string]drift.Status{"Deployment/podinfo": drift.StatusModified},
			check: func(t *testing.T, rep *drift.Report) {
				assert.True(t, rep.Drifted())
				assert.Empty(t, rep.Corrections())
			},
		},
		{
			name:       "disabled mode compares nothing",
			opts:       drift.Options{Mode: drift.ModeDisabled},
			mutateLive: scale,
			check: func(t *testing.T, rep *drift.Report) {
				assert.Empty(t, rep.Objects)
				assert.False(t, rep.Drifted())
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := loadObjects(t, "podinfo-desired.yaml")
			live := loadObjects(t, "podinfo-live.yaml")
			if tt.mutateDesired != nil {
				tt.mutateDesired(t, byName(desired))
			}
			liveByName := byName(live)
			if tt.mutateLive != nil {
				tt.mutateLive(t, liveByName)
			}
			for _, n := range tt.dropLive {
				delete(liveByName, n)
			}
			live = live[:0]
			for _, o := range liveByName {
				live = append(live, o)
			}
			opts := tt.opts
			if opts.Mode == "" {
				opts.Mode = drift.ModeEnabled
			}
			cfg, err := drift.Compile(tt.rules, opts)
			require.NoError(t, err)
			rep, err := drift.Detect(desired, live, cfg)
			require.NoError(t, err)
			for name, want := range tt.want {
				var got drift.Status
				for _, o := range rep.Objects {
					if o.Object.Kind+"/"+o.Object.Name == name {
						got = o.Status
					}
				}
				assert.Equal(t, want, got, name)
			}
			if tt.check != nil {
				tt.check(t, rep)
			}
			if tt.golden != "" {
				golden(t, tt.golden, rep.String())
			}
			if opts.Mode != drift.ModeEnabled {
				return
			}
			// The corrections restore every desired field: detecting again
			// finds no drift.
			after := applyCorrections(t, live, rep.Corrections())
			again, err := drift.Detect(desired, after, cfg)
			require.NoError(t, err)
			assert.False(t, again.Drifted(), again.String())
		})
	}
}

func find(t *testing.T, rep *drift.Report, kind, name string) drift.ObjectResult {
	t.Helper()
	for _, o := range rep.Objects {
		if o.Object.Kind == kind && o.Object.Name == name {
			return o
		}
	}
	t.Fatalf("no %s/%s in report:\n%s", kind, name, rep)
	return drift.ObjectResult{}
}

// The report does not depend on the order of the input lists or on map
// iteration order: golden files stay stable.
func TestDetectDeterministic(t *testing.T) {
	cfg, err := drift.Compile([]drift.IgnoreRule{{Paths: []string{"/spec/replicas"}}},
		drift.Options{Mode: drift.ModeEnabled, Extra: &drift.Selector{LabelSelector: "app.kubernetes.io/managed-by=Helm"}})
	require.NoError(t, err)
	var first string
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20; i++ {
		desired := loadObjects(t, "podinfo-desired.yaml")
		live := loadObjects(t, "podinfo-live.yaml")
		lv := byName(live)
		c := container(t, lv["Deployment/podinfo"], "podinfo")
		c["image"] = "x"
		c["env"] = []any{}
		lv["ConfigMap/podinfo-config"].Object["data"] = map[string]any{"UI_MESSAGE": "y"}
		desired = desired[1:] // the Deployment is no longer desired: extra
		rng.Shuffle(len(desired), func(a, b int) { desired[a], desired[b] = desired[b], desired[a] })
		rng.Shuffle(len(live), func(a, b int) { live[a], live[b] = live[b], live[a] })
		rep, err := drift.Detect(desired, live, cfg)
		require.NoError(t, err)
		raw, err := json.Marshal(rep)
		require.NoError(t, err)
		got := rep.String() + string(raw)
		if i == 0 {
			first = got
			continue
		}
		require.Equal(t, first, got)
	}
}

// One compiled Config serves concurrent Detect calls (run with -race).
func TestConfigConcurrentUse(t *testing.T) {
	cfg, err := drift.Compile([]drift.IgnoreRule{
		{Paths: []string{"/spec/replicas"}, Target: &drift.Selector{Kind: "Deployment", LabelSelector: "team=platform"}},
	}, drift.Options{Mode: drift.ModeEnabled, Managers: []drift.ManagerRule{{Managers: []string{"kubectl"}}}})
	require.NoError(t, err)
	desired := loadObjects(t, "podinfo-desired.yaml")
	live := loadObjects(t, "podinfo-live.yaml")
	want, err := drift.Detect(desired, live, cfg)
	require.NoError(t, err)
	done := make(chan string)
	for range 4 {
		go func() {
			rep, err := drift.Detect(desired, live, cfg)
			if err != nil {
				done <- err.Error()
				return
			}
			done <- rep.String()
		}()
	}
	for range 4 {
		assert.Equal(t, want.String(), <-done)
	}
}
