package release

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestReleaseDenyCrossNamespaceRefs(t *testing.T) {
	base := func(edit func(*Release)) *Release {
		r := &Release{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "app"}}
		r.Spec.Chart = &HelmChartTemplate{Spec: HelmChartTemplateSpec{Chart: "app", SourceRef: CrossNamespaceObjectReference{Kind: SourceKindHelmRepository, Name: "repo"}}}
		edit(r)
		return r
	}
	for _, tc := range []struct {
		name string
		rel  *Release
		want string // "" when allowed
	}{
		{"all unset", base(func(*Release) {}), ""},
		{"all own namespace", base(func(r *Release) {
			r.Spec.Chart.Spec.SourceRef.Namespace = "tenant-a"
			r.Spec.DependsOn = []DependencyReference{{Name: "db", Namespace: "tenant-a"}, {Name: "cache"}}
		}), ""},
		{"chart sourceRef", base(func(r *Release) { r.Spec.Chart.Spec.SourceRef.Namespace = "tenant-b" }),
			"HelmRelease tenant-a/app: spec.chart.spec.sourceRef.namespace: cross-namespace reference to tenant-b is not allowed (NoCrossNamespaceRefs)"},
		{"chartRef", base(func(r *Release) {
			r.Spec.Chart = nil
			r.Spec.ChartRef = &CrossNamespaceSourceReference{Kind: SourceKindHelmChart, Name: "c", Namespace: "tenant-b"}
		}), "HelmRelease tenant-a/app: spec.chartRef.namespace: cross-namespace reference to tenant-b is not allowed (NoCrossNamespaceRefs)"},
		{"second dependsOn", base(func(r *Release) {
			r.Spec.DependsOn = []DependencyReference{{Name: "cache"}, {Name: "db", Namespace: "tenant-b"}}
		}), "HelmRelease tenant-a/app: spec.dependsOn[1].namespace: cross-namespace reference to tenant-b is not allowed (NoCrossNamespaceRefs)"},
		{"first in field order", base(func(r *Release) {
			r.Spec.Chart.Spec.SourceRef.Namespace = "tenant-c"
			r.Spec.DependsOn = []DependencyReference{{Name: "db", Namespace: "tenant-b"}}
		}), "HelmRelease tenant-a/app: spec.chart.spec.sourceRef.namespace: cross-namespace reference to tenant-c is not allowed (NoCrossNamespaceRefs)"},
		{"targetNamespace and storageNamespace are not references", base(func(r *Release) {
			r.Spec.TargetNamespace, r.Spec.StorageNamespace = "tenant-b", "tenant-b"
		}), ""},
		{"unset object namespace is default", base(func(r *Release) {
			r.Namespace = ""
			r.Spec.DependsOn = []DependencyReference{{Name: "db", Namespace: "default"}, {Name: "x", Namespace: "kube-system"}}
		}), "HelmRelease default/app: spec.dependsOn[1].namespace: cross-namespace reference to kube-system is not allowed (NoCrossNamespaceRefs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertDenial(t, tc.rel.DenyCrossNamespaceRefs(), tc.want, GroupVersion.WithKind(Kind))
		})
	}
}

func TestKustomizationDenyCrossNamespaceRefs(t *testing.T) {
	base := func(edit func(*Kustomization)) *Kustomization {
		k := &Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "apps"}}
		k.Spec.SourceRef = KustomizationSourceReference{Kind: SourceKindGitRepository, Name: "repo"}
		edit(k)
		return k
	}
	for _, tc := range []struct {
		name string
		k    *Kustomization
		want string
	}{
		{"same namespace", base(func(k *Kustomization) {
			k.Spec.SourceRef.Namespace = "tenant-a"
			k.Spec.DependsOn = []DependencyReference{{Name: "infra"}}
		}), ""},
		{"sourceRef", base(func(k *Kustomization) { k.Spec.SourceRef.Namespace = "flux-system" }),
			"Kustomization tenant-a/apps: spec.sourceRef.namespace: cross-namespace reference to flux-system is not allowed (NoCrossNamespaceRefs)"},
		{"dependsOn", base(func(k *Kustomization) {
			k.Spec.DependsOn = []DependencyReference{{Name: "db", Namespace: "tenant-b", Kind: Kind}}
		}), "Kustomization tenant-a/apps: spec.dependsOn[0].namespace: cross-namespace reference to tenant-b is not allowed (NoCrossNamespaceRefs)"},
		{"targetNamespace and healthChecks are not references", base(func(k *Kustomization) {
			k.Spec.TargetNamespace = "tenant-b"
			k.Spec.HealthChecks = []NamespacedObjectKindReference{{Kind: "Deployment", Name: "x", Namespace: "tenant-b"}}
		}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertDenial(t, tc.k.DenyCrossNamespaceRefs(), tc.want, KustomizationGroupVersion.WithKind(KustomizationKind))
		})
	}
}

// assertDenial checks that err is nil when want is empty, else an
// *AccessDeniedError with message want of an object of kind gvk.
func assertDenial(t *testing.T, err error, want string, gvk schema.GroupVersionKind) {
	t.Helper()
	if want == "" {
		assert.NoError(t, err)
		return
	}
	require.EqualError(t, err, want)
	var denied *AccessDeniedError
	require.ErrorAs(t, err, &denied)
	assert.Equal(t, gvk, denied.Object.GroupVersionKind)
}
