package release

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/fieldcheck"
	"github.com/helmfleet/helmfleet/internal/strictyaml"
	"github.com/helmfleet/helmfleet/source"
	"github.com/helmfleet/helmfleet/values"
)

// FieldError is one problem with one field of an object:
//   - Path is the field, dotted, with list indexes in brackets, e.g.
//     spec.driftDetection.ignore[0].paths[1]; map keys that are not plain
//     words are quoted in brackets; empty for the whole object;
//   - Value is the offending value, shortened: a string as written,
//     anything else as compact JSON; empty when no value is at fault;
//   - Message says what is wrong.
//
// Error renders "path: message (value: …)". Decode and Validate report the
// same type.
type FieldError = strictyaml.FieldError

// ValidationError reports every problem of one object: its Kind,
// Namespace and Name, and its Errors in field order. Error names the
// object and lists every problem, one a line. The source kinds'
// Validate methods (source.HelmRepository.Validate, …) report the same
// type.
type ValidationError = fieldcheck.ValidationError

// Validate checks the Release and returns every problem at once as a
// *ValidationError, or nil. Call it after Default: it requires
// metadata.namespace. It checks what Flux's CRD and controller check —
// exactly one of chart and chartRef, source kinds, durations, the chart
// version constraint, enum values, release and namespace names — and
// what they leave to run time: RFC 6901 ignore paths, target regular
// expressions and selectors, post-renderer patches, dependencies on itself.
func (in *Release) Validate() error {
	var p fieldcheck.Problems
	fieldcheck.Meta(&p, in.ObjectMeta)
	s := &in.Spec
	switch {
	case s.Chart != nil && s.ChartRef != nil:
		p.Add("spec.chartRef", "", "must not be set together with spec.chart")
	case s.Chart == nil && s.ChartRef == nil:
		p.Add("spec.chart", "", "one of spec.chart and spec.chartRef is required")
	}
	if s.Chart != nil {
		validateChartTemplate(&p, "spec.chart.spec", &s.Chart.Spec)
	}
	if r := s.ChartRef; r != nil {
		if r.Kind == SourceKindExternalArtifact {
			p.Add("spec.chartRef.kind", r.Kind, "is not supported yet: helmfleet serves no ExternalArtifact source; reference the chart through an OCIRepository or a HelmChart")
		} else {
			fieldcheck.Kind(&p, "spec.chartRef.kind", r.Kind, SourceKindOCIRepository, SourceKindHelmChart)
		}
		fieldcheck.RefName(&p, "spec.chartRef", r.Name, r.Namespace)
	}
	if s.Interval.Duration <= 0 {
		p.Add("spec.interval", s.Interval.Duration.String(), "is required and must be positive")
	}
	if k := s.KubeConfig; k != nil && k.SecretRef != nil && k.SecretRef.Name == "" {
		p.Add("spec.kubeConfig.secretRef.name", "", "is required")
	}
	if s.ReleaseName != "" {
		validateReleaseName(&p, "spec.releaseName", s.ReleaseName)
	}
	fieldcheck.Namespace(&p, "spec.targetNamespace", s.TargetNamespace)
	fieldcheck.Namespace(&p, "spec.storageNamespace", s.StorageNamespace)
	validateDependsOn(&p, Kind, "Release", in.ObjectMeta, s.DependsOn)
	fieldcheck.Duration(&p, "spec.timeout", s.Timeout)
	if s.MaxHistory != nil && *s.MaxHistory < 0 {
		p.Add("spec.maxHistory", fmt.Sprint(*s.MaxHistory), "must not be negative (0 means unlimited)")
	}
	if d := s.DriftDetection; d != nil {
		validateDriftDetection(&p, d)
	}
	validateActions(&p, s)
	if n := len(s.ValuesFrom); n > values.DefaultMaxReferences {
		// Composition would refuse them at run time; say so now, once,
		// rather than checking each of so many entries.
		p.Add("spec.valuesFrom", fmt.Sprint(n), "has more entries than the %d a release may have (values.DefaultMaxReferences)", values.DefaultMaxReferences)
	} else {
		for i, v := range s.ValuesFrom {
			validateValuesReference(&p, fmt.Sprintf("spec.valuesFrom[%d]", i), v)
		}
	}
	for i, pr := range s.PostRenderers {
		if pr.Kustomize != nil {
			validateKustomize(&p, fmt.Sprintf("spec.postRenderers[%d].kustomize", i), pr.Kustomize)
		}
	}
	if s.PostRenderStrategy != "" {
		fieldcheck.Enum(&p, "spec.postRenderStrategy", s.PostRenderStrategy, PostRenderStrategyNoHooks, PostRenderStrategyCombined, PostRenderStrategySeparate)
	}
	if w := s.WaitStrategy; w != nil {
		validateStrategyName(&p, "spec.waitStrategy.name", w.Name, WaitStrategyPoller, WaitStrategyLegacy)
	}
	// kind may be empty since Flux 2.9: every kind of the apiVersion's
	// group.
	validateHealthCheckExprs(&p, s.HealthCheckExprs)
	if m := s.CommonMetadata; m != nil {
		validateLabels(&p, "spec.commonMetadata.labels", m.Labels)
		validateAnnotations(&p, "spec.commonMetadata.annotations", m.Annotations)
	}
	return p.Err(Kind, in.ObjectMeta)
}

// validateDependsOn checks spec.dependsOn of an object of kind own (noun
// in messages): names, namespaces, kinds (HelmRelease or Kustomization,
// empty for own) and that the object does not depend on itself.
func validateDependsOn(p *fieldcheck.Problems, own, noun string, m metav1.ObjectMeta, deps []DependencyReference) {
	for i, d := range deps {
		path := fmt.Sprintf("spec.dependsOn[%d]", i)
		fieldcheck.RefName(p, path, d.Name, d.Namespace)
		fieldcheck.Enum(p, path+".kind", d.Kind, Kind, KustomizationKind)
		ns := d.Namespace
		if ns == "" {
			ns = m.Namespace
		}
		if d.Name == m.Name && ns == m.Namespace && d.GetKind(own) == own {
			p.Add(path+".name", d.Name, "a %s cannot depend on itself", noun)
		}
		validateReadyExpr(p, path+".readyExpr", d.ReadyExpr)
	}
}

// helmReleaseNameRe is Helm's release name rule (pkg/chartutil).
var helmReleaseNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func validateReleaseName(p *fieldcheck.Problems, path, name string) {
	if len(name) > MaxReleaseNameLength {
		p.Add(path, name, "must be at most %d characters, is %d", MaxReleaseNameLength, len(name))
	}
	if !helmReleaseNameRe.MatchString(name) {
		p.Add(path, name, "must consist of lower case letters, digits, '-' and '.', and start and end with a letter or digit")
	}
}

func validateChartTemplate(p *fieldcheck.Problems, path string, c *HelmChartTemplateSpec) {
	if c.Chart == "" {
		p.Add(path+".chart", "", "is required")
	}
	fieldcheck.Kind(p, path+".sourceRef.kind", c.SourceRef.Kind, SourceKindHelmRepository, SourceKindGitRepository, SourceKindBucket)
	fieldcheck.RefName(p, path+".sourceRef", c.SourceRef.Name, c.SourceRef.Namespace)
	if c.SourceRef.Kind == SourceKindHelmRepository || c.SourceRef.Kind == "" {
		fieldcheck.Version(p, path+".version", c.Version)
	}
	fieldcheck.Duration(p, path+".interval", c.Interval)
	fieldcheck.Enum(p, path+".reconcileStrategy", c.ReconcileStrategy, ReconcileStrategyChartVersion, ReconcileStrategyRevision)
	for i, f := range c.ValuesFiles {
		if strings.TrimSpace(f) == "" {
			p.Add(fmt.Sprintf("%s.valuesFiles[%d]", path, i), f, "must not be empty")
		}
	}
	if v := c.Verify; v != nil {
		fieldcheck.Verify(p, path+".verify", v.Provider, v.SecretRef != nil, false, 0, "")
	}
}

var ssaModes = []string{string(ServerSideApplyEnabled), string(ServerSideApplyDisabled), string(ServerSideApplyAuto)}

func validateActions(p *fieldcheck.Problems, s *Spec) {
	crds := []string{string(Skip), string(Create), string(CreateReplace)}
	strategies := []string{ActionStrategyRemediateOnFailure, ActionStrategyRetryOnFailure}
	if in := s.Install; in != nil {
		fieldcheck.Duration(p, "spec.install.timeout", in.Timeout)
		fieldcheck.Enum(p, "spec.install.crds", string(in.CRDs), crds...)
		if st := in.Strategy; st != nil {
			validateStrategy(p, "spec.install.strategy", st.Name, st.RetryInterval, strategies)
		}
	}
	if up := s.Upgrade; up != nil {
		fieldcheck.Duration(p, "spec.upgrade.timeout", up.Timeout)
		fieldcheck.Enum(p, "spec.upgrade.crds", string(up.CRDs), crds...)
		if st := up.Strategy; st != nil {
			validateStrategy(p, "spec.upgrade.strategy", st.Name, st.RetryInterval, strategies)
		}
		if r := up.Remediation; r != nil && r.Strategy != nil {
			fieldcheck.Enum(p, "spec.upgrade.remediation.strategy", string(*r.Strategy),
				string(RollbackRemediationStrategy), string(UninstallRemediationStrategy))
			if *r.Strategy == "" {
				p.Add("spec.upgrade.remediation.strategy", "", "must not be empty when set")
			}
		}
		fieldcheck.Enum(p, "spec.upgrade.chartNameChangeStrategy", string(up.ChartNameChangeStrategy),
			string(ChartNameChangeReinstall), string(ChartNameChangeInPlaceUpdate))
		fieldcheck.Enum(p, "spec.upgrade.serverSideApply", string(up.ServerSideApply), ssaModes...)
	}
	if t := s.Test; t != nil {
		fieldcheck.Duration(p, "spec.test.timeout", t.Timeout)
		for i, f := range t.Filters {
			if f.Name == "" {
				p.Add(fmt.Sprintf("spec.test.filters[%d].name", i), "", "is required")
			}
		}
	}
	if r := s.Rollback; r != nil {
		fieldcheck.Duration(p, "spec.rollback.timeout", r.Timeout)
		fieldcheck.Enum(p, "spec.rollback.serverSideApply", string(r.ServerSideApply), ssaModes...)
	}
	if u := s.Uninstall; u != nil {
		fieldcheck.Duration(p, "spec.uninstall.timeout", u.Timeout)
		if dp := u.DeletionPropagation; dp != nil {
			fieldcheck.Enum(p, "spec.uninstall.deletionPropagation", *dp, "background", "foreground", "orphan")
			if *dp == "" {
				p.Add("spec.uninstall.deletionPropagation", "", "must not be empty when set")
			}
		}
	}
}

func validateStrategy(p *fieldcheck.Problems, path, name string, retry *metav1.Duration, accepted []string) {
	validateStrategyName(p, path+".name", name, accepted...)
	fieldcheck.Duration(p, path+".retryInterval", retry)
}

// validateStrategyName requires one of the accepted names.
func validateStrategyName(p *fieldcheck.Problems, path, name string, accepted ...string) {
	if name == "" {
		p.Add(path, "", "is required; one of %s", strings.Join(accepted, ", "))
		return
	}
	fieldcheck.Enum(p, path, name, accepted...)
}

func validateDriftDetection(p *fieldcheck.Problems, d *DriftDetection) {
	fieldcheck.Enum(p, "spec.driftDetection.mode", string(d.Mode),
		string(DriftDetectionEnabled), string(DriftDetectionWarn), string(DriftDetectionDisabled))
	for i, rule := range d.Ignore {
		path := fmt.Sprintf("spec.driftDetection.ignore[%d]", i)
		if len(rule.Paths) == 0 {
			p.Add(path+".paths", "", "is required (use \"\" to ignore whole objects)")
		}
		for j, ptr := range rule.Paths {
			if err := ValidateJSONPointer(ptr); err != nil {
				p.Add(fmt.Sprintf("%s.paths[%d]", path, j), ptr, "%v", err)
			}
		}
		if rule.Target != nil {
			validateSelector(p, path+".target", rule.Target)
		}
	}
}

// ValidateJSONPointer checks that ptr is an RFC 6901 JSON pointer: "" (the
// whole document) or "/"-separated reference tokens in which "~" appears
// only as the escapes "~0" (for "~") and "~1" (for "/").
func ValidateJSONPointer(ptr string) error {
	if ptr == "" {
		return nil
	}
	if ptr[0] != '/' {
		return fmt.Errorf("a JSON pointer must be empty or start with '/'")
	}
	for i := 0; i < len(ptr); i++ {
		if ptr[i] != '~' {
			continue
		}
		if i+1 >= len(ptr) || (ptr[i+1] != '0' && ptr[i+1] != '1') {
			return fmt.Errorf("'~' at offset %d must be followed by '0' or '1' (RFC 6901 escapes)", i)
		}
	}
	return nil
}

// validateSelector checks the anchored regular expressions and the label
// and annotation selectors of a target.
func validateSelector(p *fieldcheck.Problems, path string, s *Selector) {
	for _, f := range []struct{ name, re string }{
		{"group", s.Group}, {"version", s.Version}, {"kind", s.Kind}, {"name", s.Name}, {"namespace", s.Namespace},
	} {
		if f.re == "" {
			continue
		}
		if _, err := regexp.Compile("^(?:" + f.re + ")$"); err != nil {
			p.Add(path+"."+f.name, f.re, "invalid regular expression: %v", err)
		}
	}
	if s.LabelSelector != "" {
		if _, err := labels.Parse(s.LabelSelector); err != nil {
			p.Add(path+".labelSelector", s.LabelSelector, "invalid selector: %v", err)
		}
	}
	if s.AnnotationSelector != "" {
		if _, err := labels.Parse(s.AnnotationSelector); err != nil {
			p.Add(path+".annotationSelector", s.AnnotationSelector, "invalid selector: %v", err)
		}
	}
}

// Flux's CRD patterns for valuesFrom keys and target paths.
var (
	valuesKeyRe  = regexp.MustCompile(`^[\-._a-zA-Z0-9]+$`)
	targetPathRe = regexp.MustCompile(`^([a-zA-Z0-9_\-.\\/]|\[[0-9]{1,5}\])+$`)
)

func validateValuesReference(p *fieldcheck.Problems, path string, v ValuesReference) {
	fieldcheck.Kind(p, path+".kind", v.Kind, "ConfigMap", "Secret")
	if v.Name == "" {
		p.Add(path+".name", "", "is required")
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(v.Name) {
			p.Add(path+".name", v.Name, "%s", msg)
		}
	}
	if v.ValuesKey != "" && (len(v.ValuesKey) > 253 || !valuesKeyRe.MatchString(v.ValuesKey)) {
		p.Add(path+".valuesKey", v.ValuesKey, "must be at most 253 of the characters a-z, A-Z, 0-9, '-', '_' and '.'")
	}
	if v.Literal && v.TargetPath == "" {
		p.Add(path+".literal", "true", "requires targetPath: a literal value is set at a path")
	}
	if v.TargetPath != "" {
		switch {
		case len(v.TargetPath) > 250 || !targetPathRe.MatchString(v.TargetPath):
			p.Add(path+".targetPath", v.TargetPath, "must be a Helm --set path of at most 250 characters (letters, digits, '_', '-', '.', '\\', '/', [index])")
		case strings.HasPrefix(v.TargetPath, ".") || (strings.HasSuffix(v.TargetPath, ".") && !strings.HasSuffix(v.TargetPath, `\.`)) || strings.Contains(v.TargetPath, ".."):
			p.Add(path+".targetPath", v.TargetPath, "has an empty path segment")
		}
	}
}

func validateKustomize(p *fieldcheck.Problems, path string, k *Kustomize) {
	for i, patch := range k.Patches {
		pp := fmt.Sprintf("%s.patches[%d]", path, i)
		if strings.TrimSpace(patch.Patch) == "" {
			p.Add(pp+".patch", "", "is required")
		} else {
			validatePatchText(p, pp+".patch", patch.Patch)
		}
		if patch.Target != nil {
			validateSelector(p, pp+".target", patch.Target)
		}
	}
	for i, img := range k.Images {
		if img.Name == "" {
			p.Add(fmt.Sprintf("%s.images[%d].name", path, i), "", "is required")
		}
	}
}

// validatePatchText checks that a kustomize patch is YAML holding an object
// (a strategic merge patch) or a list (a JSON 6902 patch).
func validatePatchText(p *fieldcheck.Problems, path, text string) {
	var doc any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		p.Add(path, text, "is not valid YAML: %v", err)
		return
	}
	switch doc.(type) {
	case map[string]any, []any:
	default:
		p.Add(path, text, "must be a strategic merge patch (an object) or a JSON 6902 patch (a list)")
	}
}

func validateLabels(p *fieldcheck.Problems, path string, m map[string]string) {
	for _, k := range sortedStringKeys(m) {
		for _, msg := range validation.IsQualifiedName(k) {
			p.Add(path, k, "invalid key: %s", msg)
		}
		for _, msg := range validation.IsValidLabelValue(m[k]) {
			p.Add(path+"["+fmt.Sprintf("%q", k)+"]", m[k], "invalid value: %s", msg)
		}
	}
}

func validateAnnotations(p *fieldcheck.Problems, path string, m map[string]string) {
	for _, k := range sortedStringKeys(m) {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			p.Add(path, k, "invalid key: %s", msg)
		}
	}
}

func sortedStringKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ValidateHelmRepository checks r and returns every problem as a
// *ValidationError, or nil: it is r.Validate (source.HelmRepository).
func ValidateHelmRepository(r *source.HelmRepository) error { return r.Validate() }

// ValidateOCIRepository checks r and returns every problem as a
// *ValidationError, or nil: it is r.Validate (source.OCIRepository).
func ValidateOCIRepository(r *source.OCIRepository) error { return r.Validate() }

// ValidateHelmChart checks c and returns every problem as a
// *ValidationError, or nil: it is c.Validate (source.HelmChart).
func ValidateHelmChart(c *source.HelmChart) error { return c.Validate() }

// Validate checks every object (Releases with Release.Validate, sources
// and policies with their own Validate methods) and joins the errors, in
// Objects order, or returns nil.
func (o *Objects) Validate() error {
	var errs []error
	for _, r := range o.Releases {
		if err := r.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range o.HelmRepositories {
		if err := r.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range o.OCIRepositories {
		if err := r.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range o.HelmCharts {
		if err := c.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range o.Kustomizations {
		if err := k.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	ps := &o.Policies
	for i := range ps.Propagation {
		errs = append(errs, ps.Propagation[i].Validate())
	}
	for i := range ps.ClusterPropagation {
		errs = append(errs, ps.ClusterPropagation[i].Validate())
	}
	for i := range ps.Override {
		errs = append(errs, ps.Override[i].Validate())
	}
	for i := range ps.ClusterOverride {
		errs = append(errs, ps.ClusterOverride[i].Validate())
	}
	return errors.Join(errs...)
}
