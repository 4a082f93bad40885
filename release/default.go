package release

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default fills in, in place, every default Flux applies to a HelmRelease,
// so that the Release says explicitly what will run:
//
//   - metadata.namespace: "default" when empty, as kubectl does for a
//     namespaced object without one (helmfleet's choice; Flux objects always
//     have a namespace);
//   - spec.targetNamespace and spec.storageNamespace: the namespace;
//   - spec.releaseName: GetReleaseName ([targetNamespace-]name, hashed to
//     53 characters);
//   - spec.maxHistory 5, spec.timeout 5m, spec.persistentClient true;
//   - spec.chart.spec: version "*", reconcileStrategy ChartVersion,
//     sourceRef.namespace the namespace, interval spec.interval, verify
//     provider cosign; spec.chartRef.namespace and dependsOn[].namespace the
//     namespace; valuesFrom[].valuesKey values.yaml;
//   - install: crds Create (Skip if the deprecated skipCRDs is set),
//     strategy RemediateOnFailure (retryInterval 5m for RetryOnFailure),
//     remediation retries 0, ignoreTestFailures = test.ignoreFailures,
//     remediateLastFailure false;
//   - upgrade: crds Create (Flux's code default), strategy
//     RemediateOnFailure, chartNameChangeStrategy Reinstall, remediation
//     strategy rollback, ignoreTestFailures = test.ignoreFailures,
//     remediateLastFailure retries > 0;
//   - test, rollback, uninstall: timeouts spec.timeout (install and upgrade
//     too); uninstall deletionPropagation background;
//   - driftDetection: mode disabled.
//
// Default is idempotent and never overwrites a value that is set.
func (in *Release) Default() {
	if in.Namespace == "" {
		in.Namespace = metav1.NamespaceDefault
	}
	if in.APIVersion == "" && in.Kind == "" {
		in.APIVersion, in.Kind = APIVersion, Kind
	}
	s := &in.Spec
	ns := in.Namespace
	// The release name first: it depends on whether targetNamespace is set.
	setString(&s.ReleaseName, in.GetReleaseName())
	setString(&s.TargetNamespace, ns)
	setString(&s.StorageNamespace, ns)
	if s.MaxHistory == nil {
		s.MaxHistory = valuePtr(DefaultMaxHistory)
	}
	if s.Timeout == nil {
		s.Timeout = &metav1.Duration{Duration: 5 * time.Minute}
	}
	timeout := *s.Timeout
	if s.PersistentClient == nil {
		s.PersistentClient = valuePtr(true)
	}
	if c := s.Chart; c != nil {
		setString(&c.Spec.Version, DefaultChartVersion)
		setString(&c.Spec.ReconcileStrategy, ReconcileStrategyChartVersion)
		setString(&c.Spec.SourceRef.Namespace, ns)
		if c.Spec.Interval == nil && s.Interval.Duration > 0 {
			c.Spec.Interval = &metav1.Duration{Duration: s.Interval.Duration}
		}
		if v := c.Spec.Verify; v != nil {
			setString(&v.Provider, "cosign")
		}
	}
	if r := s.ChartRef; r != nil {
		setString(&r.Namespace, ns)
	}
	for i := range s.DependsOn {
		setString(&s.DependsOn[i].Namespace, ns)
	}
	for i := range s.ValuesFrom {
		setString(&s.ValuesFrom[i].ValuesKey, DefaultValuesKey)
	}
	if s.DriftDetection == nil {
		s.DriftDetection = &DriftDetection{}
	}
	if s.DriftDetection.Mode == "" {
		s.DriftDetection.Mode = DriftDetectionDisabled
	}
	if s.Test == nil {
		s.Test = &Test{}
	}
	setDuration(&s.Test.Timeout, timeout)
	ignoreTests := s.Test.IgnoreFailures
	defaultInstall(s, timeout, ignoreTests)
	defaultUpgrade(s, timeout, ignoreTests)
	if s.Rollback == nil {
		s.Rollback = &Rollback{}
	}
	setDuration(&s.Rollback.Timeout, timeout)
	if s.Uninstall == nil {
		s.Uninstall = &Uninstall{}
	}
	setDuration(&s.Uninstall.Timeout, timeout)
	if s.Uninstall.DeletionPropagation == nil {
		s.Uninstall.DeletionPropagation = valuePtr(DefaultDeletionPropagation)
	}
}

func defaultInstall(s *Spec, timeout metav1.Duration, ignoreTests bool) {
	if s.Install == nil {
		s.Install = &Install{}
	}
	in := s.Install
	setDuration(&in.Timeout, timeout)
	if in.CRDs == "" {
		in.CRDs = in.GetCRDsPolicy()
	}
	if in.Strategy == nil {
		in.Strategy = &InstallStrategy{Name: ActionStrategyRemediateOnFailure}
	}
	defaultStrategy(&in.Strategy.Name, &in.Strategy.RetryInterval)
	if in.Remediation == nil {
		in.Remediation = &InstallRemediation{}
	}
	r := in.Remediation
	if r.IgnoreTestFailures == nil {
		r.IgnoreTestFailures = valuePtr(ignoreTests)
	}
	if r.RemediateLastFailure == nil {
		r.RemediateLastFailure = valuePtr(r.MustRemediateLastFailure())
	}
}

func defaultUpgrade(s *Spec, timeout metav1.Duration, ignoreTests bool) {
	if s.Upgrade == nil {
		s.Upgrade = &Upgrade{}
	}
	up := s.Upgrade
	setDuration(&up.Timeout, timeout)
	if up.CRDs == "" {
		up.CRDs = up.GetCRDsPolicy()
	}
	if up.ChartNameChangeStrategy == "" {
		up.ChartNameChangeStrategy = up.GetChartNameChangeStrategy()
	}
	if up.Strategy == nil {
		up.Strategy = &UpgradeStrategy{Name: ActionStrategyRemediateOnFailure}
	}
	defaultStrategy(&up.Strategy.Name, &up.Strategy.RetryInterval)
	if up.Remediation == nil {
		up.Remediation = &UpgradeRemediation{}
	}
	r := up.Remediation
	if r.IgnoreTestFailures == nil {
		r.IgnoreTestFailures = valuePtr(ignoreTests)
	}
	if r.RemediateLastFailure == nil {
		r.RemediateLastFailure = valuePtr(r.MustRemediateLastFailure())
	}
	if r.Strategy == nil {
		r.Strategy = valuePtr(r.GetStrategy())
	}
}

// defaultStrategy sets the name RemediateOnFailure when empty and, for
// RetryOnFailure, the retry interval 5m when unset.
func defaultStrategy(name *string, retry **metav1.Duration) {
	setString(name, ActionStrategyRemediateOnFailure)
	if *name == ActionStrategyRetryOnFailure && *retry == nil {
		*retry = &metav1.Duration{Duration: 5 * time.Minute}
	}
}

// Default gives every object of a namespaced kind without a namespace
// (sources, PropagationPolicies, OverridePolicies, ConfigMaps and Secrets
// as much as Releases and Kustomizations) the namespace "default", as
// kubectl does, and defaults every Release (Release.Default) and
// Kustomization (Kustomization.Default). Cluster-scoped kinds get no
// namespace.
func (o *Objects) Default() {
	o.fillNamespace(metav1.NamespaceDefault)
	for _, r := range o.Releases {
		r.Default()
	}
	for _, k := range o.Kustomizations {
		k.Default()
	}
}

func setString(s *string, def string) {
	if *s == "" {
		*s = def
	}
}

// setDuration sets *d to def when unset; a negative def, which Validate
// reports at spec.timeout, is not copied into every action.
func setDuration(d **metav1.Duration, def metav1.Duration) {
	if *d == nil && def.Duration >= 0 {
		v := def
		*d = &v
	}
}

func valuePtr[T any](v T) *T { return &v }
