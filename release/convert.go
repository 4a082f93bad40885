package release

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// HelmRelease documents of the older API versions v2beta1 and v2beta2 are
// decoded strictly into the types below, which have the fields those
// versions had, and converted to the v2 model:
//
//   - chart.spec.valuesFile (removed in v2) becomes the first entry of
//     chart.spec.valuesFiles, which is where Flux merged it;
//   - postRenderers[].kustomize.patchesStrategicMerge and patchesJson6902
//     (removed in v2) become entries of patches, in the order kustomize
//     applied them: strategic merge patches first, then patches, then
//     JSON 6902 patches;
//   - v2beta1 status.lastAppliedRevision, which v2 does not have, is
//     dropped; the other status fields carry over.
//
// v2beta1 has no chartRef and no driftDetection: both are unknown fields
// there. The action sections (install, upgrade, …) share the v2 types, so
// fields added in v2 are accepted in older documents too.

// releaseV2Beta1 is a helm.toolkit.fluxcd.io/v2beta1 HelmRelease.
type releaseV2Beta1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              specV2Beta1   `json:"spec,omitempty"`
	Status            statusV2Beta1 `json:"status,omitempty"`
}

// releaseV2Beta2 is a helm.toolkit.fluxcd.io/v2beta2 HelmRelease.
type releaseV2Beta2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              specV2Beta2 `json:"spec,omitempty"`
	Status            Status      `json:"status,omitempty"`
}

// specV2Beta1 is the v2beta1 HelmReleaseSpec.
type specV2Beta1 struct {
	Chart              *chartTemplateBeta    `json:"chart,omitempty"`
	Interval           metav1.Duration       `json:"interval"`
	KubeConfig         *KubeConfigReference  `json:"kubeConfig,omitempty"`
	Suspend            bool                  `json:"suspend,omitempty"`
	ReleaseName        string                `json:"releaseName,omitempty"`
	TargetNamespace    string                `json:"targetNamespace,omitempty"`
	StorageNamespace   string                `json:"storageNamespace,omitempty"`
	DependsOn          []DependencyReference `json:"dependsOn,omitempty"`
	Timeout            *metav1.Duration      `json:"timeout,omitempty"`
	MaxHistory         *int                  `json:"maxHistory,omitempty"`
	ServiceAccountName string                `json:"serviceAccountName,omitempty"`
	PersistentClient   *bool                 `json:"persistentClient,omitempty"`
	Install            *Install              `json:"install,omitempty"`
	Upgrade            *Upgrade              `json:"upgrade,omitempty"`
	Test               *Test                 `json:"test,omitempty"`
	Rollback           *Rollback             `json:"rollback,omitempty"`
	Uninstall          *Uninstall            `json:"uninstall,omitempty"`
	ValuesFrom         []ValuesReference     `json:"valuesFrom,omitempty"`
	Values             map[string]any        `json:"values,omitempty"`
	PostRenderers      []postRendererBeta    `json:"postRenderers,omitempty"`
}

// specV2Beta2 is the v2beta2 HelmReleaseSpec: v2beta1's plus chartRef and
// driftDetection.
type specV2Beta2 struct {
	specV2Beta1
	ChartRef       *CrossNamespaceSourceReference `json:"chartRef,omitempty"`
	DriftDetection *DriftDetection                `json:"driftDetection,omitempty"`
}

type chartTemplateBeta struct {
	ObjectMeta *HelmChartTemplateObjectMeta `json:"metadata,omitempty"`
	Spec       chartTemplateSpecBeta        `json:"spec"`
}

type chartTemplateSpecBeta struct {
	HelmChartTemplateSpec
	// ValuesFile is merged before ValuesFiles. Removed in v2.
	ValuesFile string `json:"valuesFile,omitempty"`
}

type postRendererBeta struct {
	Kustomize *kustomizeBeta `json:"kustomize,omitempty"`
}

type kustomizeBeta struct {
	Patches               []Patch          `json:"patches,omitempty"`
	PatchesStrategicMerge []map[string]any `json:"patchesStrategicMerge,omitempty"`
	PatchesJSON6902       []json6902Patch  `json:"patchesJson6902,omitempty"`
	Images                []Image          `json:"images,omitempty"`
}

type json6902Patch struct {
	Patch  []json6902Op `json:"patch"`
	Target Selector     `json:"target"`
}

type json6902Op struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// statusV2Beta1 is the v2beta1 HelmReleaseStatus.
type statusV2Beta1 struct {
	ObservedGeneration          int64              `json:"observedGeneration,omitempty"`
	LastHandledReconcileAt      string             `json:"lastHandledReconcileAt,omitempty"`
	Conditions                  []metav1.Condition `json:"conditions,omitempty"`
	LastAppliedRevision         string             `json:"lastAppliedRevision,omitempty"`
	LastAttemptedRevision       string             `json:"lastAttemptedRevision,omitempty"`
	LastAttemptedValuesChecksum string             `json:"lastAttemptedValuesChecksum,omitempty"`
	LastReleaseRevision         int                `json:"lastReleaseRevision,omitempty"`
	HelmChart                   string             `json:"helmChart,omitempty"`
	Failures                    int64              `json:"failures,omitempty"`
	InstallFailures             int64              `json:"installFailures,omitempty"`
	UpgradeFailures             int64              `json:"upgradeFailures,omitempty"`
	StorageNamespace            string             `json:"storageNamespace,omitempty"`
}

func convertV2Beta1(old *releaseV2Beta1) *Release {
	r := &Release{ObjectMeta: old.ObjectMeta, Spec: convertSpec(&old.Spec)}
	r.APIVersion, r.Kind = APIVersion, Kind
	s := old.Status
	r.Status = Status{
		ObservedGeneration:          s.ObservedGeneration,
		LastHandledReconcileAt:      s.LastHandledReconcileAt,
		Conditions:                  s.Conditions,
		LastAttemptedRevision:       s.LastAttemptedRevision,
		LastAttemptedValuesChecksum: s.LastAttemptedValuesChecksum,
		LastReleaseRevision:         s.LastReleaseRevision,
		HelmChart:                   s.HelmChart,
		Failures:                    s.Failures,
		InstallFailures:             s.InstallFailures,
		UpgradeFailures:             s.UpgradeFailures,
		StorageNamespace:            s.StorageNamespace,
	}
	return r
}

func convertV2Beta2(old *releaseV2Beta2) *Release {
	r := &Release{ObjectMeta: old.ObjectMeta, Spec: convertSpec(&old.Spec.specV2Beta1), Status: old.Status}
	r.APIVersion, r.Kind = APIVersion, Kind
	r.Spec.ChartRef = old.Spec.ChartRef
	r.Spec.DriftDetection = old.Spec.DriftDetection
	return r
}

func convertSpec(old *specV2Beta1) Spec {
	s := Spec{
		Interval:           old.Interval,
		KubeConfig:         old.KubeConfig,
		Suspend:            old.Suspend,
		ReleaseName:        old.ReleaseName,
		TargetNamespace:    old.TargetNamespace,
		StorageNamespace:   old.StorageNamespace,
		DependsOn:          old.DependsOn,
		Timeout:            old.Timeout,
		MaxHistory:         old.MaxHistory,
		ServiceAccountName: old.ServiceAccountName,
		PersistentClient:   old.PersistentClient,
		Install:            old.Install,
		Upgrade:            old.Upgrade,
		Test:               old.Test,
		Rollback:           old.Rollback,
		Uninstall:          old.Uninstall,
		ValuesFrom:         old.ValuesFrom,
		Values:             old.Values,
	}
	if c := old.Chart; c != nil {
		spec := c.Spec.HelmChartTemplateSpec
		if c.Spec.ValuesFile != "" {
			spec.ValuesFiles = append([]string{c.Spec.ValuesFile}, spec.ValuesFiles...)
		}
		s.Chart = &HelmChartTemplate{ObjectMeta: c.ObjectMeta, Spec: spec}
	}
	for _, pr := range old.PostRenderers {
		s.PostRenderers = append(s.PostRenderers, PostRenderer{Kustomize: convertKustomize(pr.Kustomize)})
	}
	return s
}

func convertKustomize(old *kustomizeBeta) *Kustomize {
	if old == nil {
		return nil
	}
	k := &Kustomize{Images: old.Images}
	for _, smp := range old.PatchesStrategicMerge {
		text, _ := yaml.Marshal(smp) // a decoded JSON object always marshals
		k.Patches = append(k.Patches, Patch{Patch: string(text)})
	}
	k.Patches = append(k.Patches, old.Patches...)
	for _, jp := range old.PatchesJSON6902 {
		text, _ := yaml.Marshal(jp.Patch)
		target := jp.Target
		k.Patches = append(k.Patches, Patch{Patch: string(text), Target: &target})
	}
	if len(k.Patches) == 0 {
		k.Patches = nil
	}
	return k
}
