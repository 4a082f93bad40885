package release

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/internal/fieldcheck"
	"github.com/helmfleet/helmfleet/source"
)

// ConditionFieldWarnings is True while the Release sets fields helmfleet
// does not act on as Flux would; its message is FieldWarnings, one a
// line. It is no Flux condition and says nothing of readiness.
const ConditionFieldWarnings = "FieldWarnings"

// ReasonNotActedOn is the reason of ConditionFieldWarnings.
const ReasonNotActedOn = "NotActedOn"

// ConditionSourceWarnings is True while the chart was accepted with
// warnings from its source (an index entry without a digest, accepted
// unverified because the HelmRepository opts in with
// source.helmfleet.io/allow-missing-digest); its message is the warnings,
// one a line. It is no Flux condition and says nothing of readiness.
const ConditionSourceWarnings = "SourceWarnings"

// ReasonAcceptedWithWarnings is the reason of ConditionSourceWarnings.
const ReasonAcceptedWithWarnings = "AcceptedWithWarnings"

// HelmV3Engine is the warning for a field that asks for what only Helm
// v4 does: helmfleet's engine is Helm v3 (server-side apply).
const HelmV3Engine = "applied client-side: Helm v3 engine"

// MigrationWarning says that a HelmRelease of an older version
// (v2beta1, v2beta2), which Flux removed in 2.7 and 2.8, was read for
// migration: it is converted to v2, and should be written as v2.
func MigrationWarning(r *Release, version string) string {
	return fmt.Sprintf("%s: %s/%s is read for migration only (Flux removed it): it was converted to %s; write it as %s",
		fieldcheck.ObjectName(Kind, r.Namespace, r.Name), Group, version, APIVersion, APIVersion)
}

// FieldWarnings returns a warning for each field of in that the user set
// and helmfleet does not act on as Flux 2.9 would, each naming the field
// and its value, sorted; nil when there is none. A field helmfleet
// cannot honour safely is refused by Validate instead; these are the
// ones a release can go on without (docs/fields.md lists every field).
func FieldWarnings(in *Release) []string {
	s := &in.Spec
	var w []string
	add := func(path, value, why string) { w = append(w, fmt.Sprintf("%s: %s: %s", path, value, why)) }
	if i := s.Install; i != nil && i.ServerSideApply != nil && *i.ServerSideApply {
		add("spec.install.serverSideApply", "true", HelmV3Engine)
	}
	if u := s.Upgrade; u != nil && u.ServerSideApply == ServerSideApplyEnabled {
		add("spec.upgrade.serverSideApply", string(u.ServerSideApply), HelmV3Engine)
	}
	if r := s.Rollback; r != nil && r.ServerSideApply == ServerSideApplyEnabled {
		add("spec.rollback.serverSideApply", string(r.ServerSideApply), HelmV3Engine)
	}
	if ws := s.WaitStrategy; ws != nil && ws.Name == WaitStrategyLegacy {
		add("spec.waitStrategy.name", ws.Name, "waited with kstatus (poller): helmfleet has no legacy wait")
	}
	if st := s.PostRenderStrategy; len(s.PostRenderers) > 0 && (st == PostRenderStrategyCombined || st == PostRenderStrategySeparate) {
		add("spec.postRenderStrategy", st, "hooks are not post-rendered (nohooks): Helm v3 engine")
	}
	if pc := s.PersistentClient; pc != nil && !*pc {
		add("spec.persistentClient", "false", "not read: one Kubernetes client serves each reconcile (as true)")
	}
	if c := s.Chart; c != nil {
		chartTemplateWarnings(add, s.Interval, c)
	}
	if r := s.ChartRef; r != nil && notSourceGroup(r.APIVersion) {
		add("spec.chartRef.apiVersion", r.APIVersion, sourceFoundByKind)
	}
	slices.Sort(w)
	return w
}

// sourceFoundByKind is the warning for a source reference's apiVersion
// outside source.toolkit.fluxcd.io: it is not read.
const sourceFoundByKind = "not read: the source is found by kind and name, as Flux does"

// notSourceGroup reports whether apiVersion is set to a group other than
// Flux's sources'.
func notSourceGroup(apiVersion string) bool {
	group, _, _ := strings.Cut(apiVersion, "/")
	return apiVersion != "" && group != source.Group
}

// chartTemplateWarnings adds the warnings of spec.chart: the fields
// Flux puts on or reads from the HelmChart it creates, which helmfleet
// does not create (it resolves the chart on each reconcile of the
// release).
func chartTemplateWarnings(add func(path, value, why string), interval metav1.Duration, c *HelmChartTemplate) {
	if m := c.ObjectMeta; m != nil {
		if len(m.Labels) > 0 {
			add("spec.chart.metadata.labels", fmt.Sprint(m.Labels), "not read: helmfleet creates no HelmChart object to carry them")
		}
		if len(m.Annotations) > 0 {
			add("spec.chart.metadata.annotations", fmt.Sprint(m.Annotations), "not read: helmfleet creates no HelmChart object to carry them")
		}
	}
	cs := &c.Spec
	if iv := cs.Interval; iv != nil && iv.Duration != interval.Duration {
		add("spec.chart.spec.interval", iv.Duration.String(), "not read: the chart is looked up on each reconcile of the release (spec.interval "+interval.Duration.String()+")")
	}
	if cs.ReconcileStrategy == ReconcileStrategyRevision {
		add("spec.chart.spec.reconcileStrategy", cs.ReconcileStrategy, "not read: it applies to GitRepository and Bucket sources, which helmfleet does not serve; the chart is taken by version")
	}
	if notSourceGroup(cs.SourceRef.APIVersion) {
		add("spec.chart.spec.sourceRef.apiVersion", cs.SourceRef.APIVersion, sourceFoundByKind)
	}
}

// KustomizationFieldWarnings returns a warning for each field of k that
// the user set and helmfleet does not act on as Flux 2.9 would, each
// naming the field and its value, sorted; nil when there is none. The
// Kustomization reconciler adds them to its Result and Plan warnings.
// spec.dependsOn[].readyExpr is evaluated by release/fleet, which orders
// Kustomizations; spec.interval, which every Kustomization sets, is not
// read either and is said once per fleet plan
// (KustomizationIntervalWarning), not here.
func KustomizationFieldWarnings(k *Kustomization) []string {
	var w []string
	add := func(path, value, why string) { w = append(w, fmt.Sprintf("%s: %s: %s", path, value, why)) }
	if ri := k.Spec.RetryInterval; ri != nil {
		add("spec.retryInterval", ri.Duration.String(), "not read: a failed Kustomization is tried again when its caller runs it again")
	}
	if notSourceGroup(k.Spec.SourceRef.APIVersion) {
		add("spec.sourceRef.apiVersion", k.Spec.SourceRef.APIVersion, sourceFoundByKind)
	}
	slices.Sort(w)
	return w
}

// KustomizationIntervalWarning says, once for all of ks, that their
// spec.interval is not read: a Kustomization is applied when its caller
// runs it (release/fleet's Plan and Apply; release/controller requeues a
// fleet by its HelmReleases' spec.interval only). It names how many
// Kustomizations (by namespace and name: copies on several members count
// once) set which intervals, sorted; "" when none sets one. Every
// Kustomization sets it, so this is said once per fleet plan rather than
// for each (KustomizationFieldWarnings does not).
func KustomizationIntervalWarning(ks []*Kustomization) string {
	seen := map[string]bool{}
	var ivs []time.Duration
	for _, k := range ks {
		id := k.Namespace + "/" + k.Name
		if iv := k.Spec.Interval.Duration; iv > 0 && !seen[id] {
			seen[id] = true
			ivs = append(ivs, iv)
		}
	}
	if len(ivs) == 0 {
		return ""
	}
	slices.Sort(ivs)
	n := len(ivs)
	names := make([]string, 0, n)
	for _, iv := range slices.Compact(ivs) {
		names = append(names, iv.String())
	}
	return fmt.Sprintf("spec.interval of %d Kustomizations (%s): not read: a Kustomization is applied when its fleet is planned and applied (release/controller requeues a fleet by its HelmReleases' spec.interval)",
		n, strings.Join(names, ", "))
}
