package release

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/redact"
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

// ValidationError reports every problem of one object.
type ValidationError struct {
	// Kind, Namespace and Name of the object.
	Kind, Namespace, Name string
	// Errors, in field order.
	Errors []FieldError
}

// Error names the object and lists every problem, one a line.
func (e *ValidationError) Error() string {
	obj := objectName(e.Kind, e.Namespace, e.Name)
	if len(e.Errors) == 1 {
		return obj + ": " + e.Errors[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", obj, len(e.Errors))
	for _, fe := range e.Errors {
		b.WriteString("\n  ")
		b.WriteString(fe.Error())
	}
	return b.String()
}

// problems collects the FieldErrors of one object.
type problems struct {
	errs []FieldError
}

func (p *problems) add(path, value, format string, args ...any) {
	p.errs = append(p.errs, FieldError{Path: path, Value: shortValue(value), Message: fmt.Sprintf(format, args...)})
}

func (p *problems) err(kind string, meta metav1.ObjectMeta) error {
	if len(p.errs) == 0 {
		return nil
	}
	return &ValidationError{Kind: kind, Namespace: meta.Namespace, Name: meta.Name, Errors: p.errs}
}

// Validate checks the Release and returns every problem at once as a
// *ValidationError, or nil. Call it after Default: it requires
// metadata.namespace. It checks what Flux's CRD and controller check —
// exactly one of chart and chartRef, source kinds, durations, the chart
// version constraint, enum values, release and namespace names — and
// what they leave to run time: RFC 6901 ignore paths, target regular
// expressions and selectors, post-renderer patches, dependencies on itself.
func (in *Release) Validate() error {
	var p problems
	validateMeta(&p, in.ObjectMeta)
	s := &in.Spec
	switch {
	case s.Chart != nil && s.ChartRef != nil:
		p.add("spec.chartRef", "", "must not be set together with spec.chart")
	case s.Chart == nil && s.ChartRef == nil:
		p.add("spec.chart", "", "one of spec.chart and spec.chartRef is required")
	}
	if s.Chart != nil {
		validateChartTemplate(&p, "spec.chart.spec", &s.Chart.Spec)
	}
	if r := s.ChartRef; r != nil {
		validateKind(&p, "spec.chartRef.kind", r.Kind, SourceKindOCIRepository, SourceKindHelmChart)
		validateRefName(&p, "spec.chartRef", r.Name, r.Namespace)
	}
	if s.Interval.Duration <= 0 {
		p.add("spec.interval", s.Interval.Duration.String(), "is required and must be positive")
	}
	if k := s.KubeConfig; k != nil && k.SecretRef != nil && k.SecretRef.Name == "" {
		p.add("spec.kubeConfig.secretRef.name", "", "is required")
	}
	if s.ReleaseName != "" {
		validateReleaseName(&p, "spec.releaseName", s.ReleaseName)
	}
	validateNamespace(&p, "spec.targetNamespace", s.TargetNamespace)
	validateNamespace(&p, "spec.storageNamespace", s.StorageNamespace)
	validateDependsOn(&p, Kind, "Release", in.ObjectMeta, s.DependsOn)
	validateDuration(&p, "spec.timeout", s.Timeout)
	if s.MaxHistory != nil && *s.MaxHistory < 0 {
		p.add("spec.maxHistory", fmt.Sprint(*s.MaxHistory), "must not be negative (0 means unlimited)")
	}
	if d := s.DriftDetection; d != nil {
		validateDriftDetection(&p, d)
	}
	validateActions(&p, s)
	if n := len(s.ValuesFrom); n > values.DefaultMaxReferences {
		// Composition would refuse them at run time; say so now, once,
		// rather than checking each of so many entries.
		p.add("spec.valuesFrom", fmt.Sprint(n), "has more entries than the %d a release may have (values.DefaultMaxReferences)", values.DefaultMaxReferences)
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
	if w := s.WaitStrategy; w != nil {
		validateStrategyName(&p, "spec.waitStrategy.name", w.Name, WaitStrategyPoller, WaitStrategyLegacy)
	}
	for i, hc := range s.HealthCheckExprs {
		path := fmt.Sprintf("spec.healthCheckExprs[%d]", i)
		for _, f := range []struct{ name, v string }{{"apiVersion", hc.APIVersion}, {"kind", hc.Kind}, {"current", hc.Current}} {
			if f.v == "" {
				p.add(path+"."+f.name, "", "is required")
			}
		}
	}
	if m := s.CommonMetadata; m != nil {
		validateLabels(&p, "spec.commonMetadata.labels", m.Labels)
		validateAnnotations(&p, "spec.commonMetadata.annotations", m.Annotations)
	}
	return p.err(Kind, in.ObjectMeta)
}

// validateDependsOn checks spec.dependsOn of an object of kind own (noun
// in messages): names, namespaces, kinds (HelmRelease or Kustomization,
// empty for own) and that the object does not depend on itself.
func validateDependsOn(p *problems, own, noun string, m metav1.ObjectMeta, deps []DependencyReference) {
	for i, d := range deps {
		path := fmt.Sprintf("spec.dependsOn[%d]", i)
		validateRefName(p, path, d.Name, d.Namespace)
		validateEnum(p, path+".kind", d.Kind, Kind, KustomizationKind)
		ns := d.Namespace
		if ns == "" {
			ns = m.Namespace
		}
		if d.Name == m.Name && ns == m.Namespace && d.GetKind(own) == own {
			p.add(path+".name", d.Name, "a %s cannot depend on itself", noun)
		}
	}
}

func validateMeta(p *problems, m metav1.ObjectMeta) {
	if m.Name == "" {
		p.add("metadata.name", "", "is required")
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(m.Name) {
			p.add("metadata.name", m.Name, "%s", msg)
		}
	}
	if m.Namespace == "" {
		p.add("metadata.namespace", "", "is required (Default sets %q)", metav1.NamespaceDefault)
	} else {
		validateNamespace(p, "metadata.namespace", m.Namespace)
	}
}

func validateNamespace(p *problems, path, ns string) {
	if ns == "" {
		return
	}
	for _, msg := range validation.IsDNS1123Label(ns) {
		p.add(path, ns, "%s", msg)
	}
}

func validateRefName(p *problems, path, name, namespace string) {
	if name == "" {
		p.add(path+".name", "", "is required")
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			p.add(path+".name", name, "%s", msg)
		}
	}
	validateNamespace(p, path+".namespace", namespace)
}

func validateKind(p *problems, path, kind string, accepted ...string) {
	for _, a := range accepted {
		if kind == a {
			return
		}
	}
	if kind == "" {
		p.add(path, "", "is required; one of %s", strings.Join(accepted, ", "))
		return
	}
	p.add(path, kind, "must be one of %s", strings.Join(accepted, ", "))
}

// helmReleaseNameRe is Helm's release name rule (pkg/chartutil).
var helmReleaseNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func validateReleaseName(p *problems, path, name string) {
	if len(name) > MaxReleaseNameLength {
		p.add(path, name, "must be at most %d characters, is %d", MaxReleaseNameLength, len(name))
	}
	if !helmReleaseNameRe.MatchString(name) {
		p.add(path, name, "must consist of lower case letters, digits, '-' and '.', and start and end with a letter or digit")
	}
}

func validateDuration(p *problems, path string, d *metav1.Duration) {
	if d != nil && d.Duration < 0 {
		p.add(path, d.Duration.String(), "must not be negative")
	}
}

func validateChartTemplate(p *problems, path string, c *HelmChartTemplateSpec) {
	if c.Chart == "" {
		p.add(path+".chart", "", "is required")
	}
	validateKind(p, path+".sourceRef.kind", c.SourceRef.Kind, SourceKindHelmRepository, SourceKindGitRepository, SourceKindBucket)
	validateRefName(p, path+".sourceRef", c.SourceRef.Name, c.SourceRef.Namespace)
	if c.SourceRef.Kind == SourceKindHelmRepository || c.SourceRef.Kind == "" {
		validateVersion(p, path+".version", c.Version)
	}
	validateDuration(p, path+".interval", c.Interval)
	validateEnum(p, path+".reconcileStrategy", c.ReconcileStrategy, ReconcileStrategyChartVersion, ReconcileStrategyRevision)
	for i, f := range c.ValuesFiles {
		if strings.TrimSpace(f) == "" {
			p.add(fmt.Sprintf("%s.valuesFiles[%d]", path, i), f, "must not be empty")
		}
	}
	if v := c.Verify; v != nil {
		validateVerify(p, path+".verify", v.Provider, v.SecretRef != nil, 0)
	}
}

// validateVerify refuses a signature verification the source resolvers
// cannot perform, so that it is never accepted and then ignored: only
// cosign with public keys from secretRef is verified.
func validateVerify(p *problems, path, provider string, hasSecret bool, identities int) {
	const refusing = "charts cannot be verified, refusing rather than installing unverified"
	validateEnum(p, path+".provider", provider, "cosign", "notation")
	switch {
	case provider == "notation":
		p.add(path+".provider", provider, "notation is not supported yet: %s", refusing)
	case provider != "" && provider != "cosign":
		// validateEnum named it.
	case !hasSecret:
		p.add(path+".secretRef", "", "is required: keyless cosign verification (no secretRef) is not supported yet: %s", refusing)
	case identities > 0:
		p.add(path+".matchOIDCIdentity", "", "applies to keyless verification only, which is not supported yet; with secretRef it would be ignored: remove it")
	}
}

// validateVersion accepts "", an exact version and a Masterminds semver
// constraint, as Flux's version selection does.
func validateVersion(p *problems, path, v string) {
	if v == "" || v == DefaultChartVersion {
		return
	}
	if _, err := semver.NewVersion(v); err == nil {
		return
	}
	if _, err := semver.NewConstraint(v); err != nil {
		p.add(path, v, "is neither a version nor a semver constraint: %v", err)
	}
}

// validateEnum accepts "" (the default) and the accepted values.
func validateEnum(p *problems, path, v string, accepted ...string) {
	if v == "" {
		return
	}
	for _, a := range accepted {
		if v == a {
			return
		}
	}
	p.add(path, v, "must be one of %s", strings.Join(accepted, ", "))
}

var ssaModes = []string{string(ServerSideApplyEnabled), string(ServerSideApplyDisabled), string(ServerSideApplyAuto)}

func validateActions(p *problems, s *Spec) {
	crds := []string{string(Skip), string(Create), string(CreateReplace)}
	strategies := []string{ActionStrategyRemediateOnFailure, ActionStrategyRetryOnFailure}
	if in := s.Install; in != nil {
		validateDuration(p, "spec.install.timeout", in.Timeout)
		validateEnum(p, "spec.install.crds", string(in.CRDs), crds...)
		if st := in.Strategy; st != nil {
			validateStrategy(p, "spec.install.strategy", st.Name, st.RetryInterval, strategies)
		}
	}
	if up := s.Upgrade; up != nil {
		validateDuration(p, "spec.upgrade.timeout", up.Timeout)
		validateEnum(p, "spec.upgrade.crds", string(up.CRDs), crds...)
		if st := up.Strategy; st != nil {
			validateStrategy(p, "spec.upgrade.strategy", st.Name, st.RetryInterval, strategies)
		}
		if r := up.Remediation; r != nil && r.Strategy != nil {
			validateEnum(p, "spec.upgrade.remediation.strategy", string(*r.Strategy),
				string(RollbackRemediationStrategy), string(UninstallRemediationStrategy))
			if *r.Strategy == "" {
				p.add("spec.upgrade.remediation.strategy", "", "must not be empty when set")
			}
		}
		validateEnum(p, "spec.upgrade.chartNameChangeStrategy", string(up.ChartNameChangeStrategy),
			string(ChartNameChangeReinstall), string(ChartNameChangeInPlaceUpdate))
		validateEnum(p, "spec.upgrade.serverSideApply", string(up.ServerSideApply), ssaModes...)
	}
	if t := s.Test; t != nil {
		validateDuration(p, "spec.test.timeout", t.Timeout)
		for i, f := range t.Filters {
			if f.Name == "" {
				p.add(fmt.Sprintf("spec.test.filters[%d].name", i), "", "is required")
			}
		}
	}
	if r := s.Rollback; r != nil {
		validateDuration(p, "spec.rollback.timeout", r.Timeout)
		validateEnum(p, "spec.rollback.serverSideApply", string(r.ServerSideApply), ssaModes...)
	}
	if u := s.Uninstall; u != nil {
		validateDuration(p, "spec.uninstall.timeout", u.Timeout)
		if dp := u.DeletionPropagation; dp != nil {
			validateEnum(p, "spec.uninstall.deletionPropagation", *dp, "background", "foreground", "orphan")
			if *dp == "" {
				p.add("spec.uninstall.deletionPropagation", "", "must not be empty when set")
			}
		}
	}
}

func validateStrategy(p *problems, path, name string, retry *metav1.Duration, accepted []string) {
	validateStrategyName(p, path+".name", name, accepted...)
	validateDuration(p, path+".retryInterval", retry)
}

// validateStrategyName requires one of the accepted names.
func validateStrategyName(p *problems, path, name string, accepted ...string) {
	if name == "" {
		p.add(path, "", "is required; one of %s", strings.Join(accepted, ", "))
		return
	}
	validateEnum(p, path, name, accepted...)
}

func validateDriftDetection(p *problems, d *DriftDetection) {
	validateEnum(p, "spec.driftDetection.mode", string(d.Mode),
		string(DriftDetectionEnabled), string(DriftDetectionWarn), string(DriftDetectionDisabled))
	for i, rule := range d.Ignore {
		path := fmt.Sprintf("spec.driftDetection.ignore[%d]", i)
		if len(rule.Paths) == 0 {
			p.add(path+".paths", "", "is required (use \"\" to ignore whole objects)")
		}
		for j, ptr := range rule.Paths {
			if err := ValidateJSONPointer(ptr); err != nil {
				p.add(fmt.Sprintf("%s.paths[%d]", path, j), ptr, "%v", err)
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
func validateSelector(p *problems, path string, s *Selector) {
	for _, f := range []struct{ name, re string }{
		{"group", s.Group}, {"version", s.Version}, {"kind", s.Kind}, {"name", s.Name}, {"namespace", s.Namespace},
	} {
		if f.re == "" {
			continue
		}
		if _, err := regexp.Compile("^(?:" + f.re + ")$"); err != nil {
			p.add(path+"."+f.name, f.re, "invalid regular expression: %v", err)
		}
	}
	if s.LabelSelector != "" {
		if _, err := labels.Parse(s.LabelSelector); err != nil {
			p.add(path+".labelSelector", s.LabelSelector, "invalid selector: %v", err)
		}
	}
	if s.AnnotationSelector != "" {
		if _, err := labels.Parse(s.AnnotationSelector); err != nil {
			p.add(path+".annotationSelector", s.AnnotationSelector, "invalid selector: %v", err)
		}
	}
}

// Flux's CRD patterns for valuesFrom keys and target paths.
var (
	valuesKeyRe  = regexp.MustCompile(`^[\-._a-zA-Z0-9]+$`)
	targetPathRe = regexp.MustCompile(`^([a-zA-Z0-9_\-.\\/]|\[[0-9]{1,5}\])+$`)
)

func validateValuesReference(p *problems, path string, v ValuesReference) {
	validateKind(p, path+".kind", v.Kind, "ConfigMap", "Secret")
	if v.Name == "" {
		p.add(path+".name", "", "is required")
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(v.Name) {
			p.add(path+".name", v.Name, "%s", msg)
		}
	}
	if v.ValuesKey != "" && (len(v.ValuesKey) > 253 || !valuesKeyRe.MatchString(v.ValuesKey)) {
		p.add(path+".valuesKey", v.ValuesKey, "must be at most 253 of the characters a-z, A-Z, 0-9, '-', '_' and '.'")
	}
	if v.Literal && v.TargetPath == "" {
		p.add(path+".literal", "true", "requires targetPath: a literal value is set at a path")
	}
	if v.TargetPath != "" {
		switch {
		case len(v.TargetPath) > 250 || !targetPathRe.MatchString(v.TargetPath):
			p.add(path+".targetPath", v.TargetPath, "must be a Helm --set path of at most 250 characters (letters, digits, '_', '-', '.', '\\', '/', [index])")
		case strings.HasPrefix(v.TargetPath, ".") || (strings.HasSuffix(v.TargetPath, ".") && !strings.HasSuffix(v.TargetPath, `\.`)) || strings.Contains(v.TargetPath, ".."):
			p.add(path+".targetPath", v.TargetPath, "has an empty path segment")
		}
	}
}

func validateKustomize(p *problems, path string, k *Kustomize) {
	for i, patch := range k.Patches {
		pp := fmt.Sprintf("%s.patches[%d]", path, i)
		if strings.TrimSpace(patch.Patch) == "" {
			p.add(pp+".patch", "", "is required")
		} else {
			validatePatchText(p, pp+".patch", patch.Patch)
		}
		if patch.Target != nil {
			validateSelector(p, pp+".target", patch.Target)
		}
	}
	for i, img := range k.Images {
		if img.Name == "" {
			p.add(fmt.Sprintf("%s.images[%d].name", path, i), "", "is required")
		}
	}
}

// validatePatchText checks that a kustomize patch is YAML holding an object
// (a strategic merge patch) or a list (a JSON 6902 patch).
func validatePatchText(p *problems, path, text string) {
	var doc any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		p.add(path, text, "is not valid YAML: %v", err)
		return
	}
	switch doc.(type) {
	case map[string]any, []any:
	default:
		p.add(path, text, "must be a strategic merge patch (an object) or a JSON 6902 patch (a list)")
	}
}

func validateLabels(p *problems, path string, m map[string]string) {
	for _, k := range sortedStringKeys(m) {
		for _, msg := range validation.IsQualifiedName(k) {
			p.add(path, k, "invalid key: %s", msg)
		}
		for _, msg := range validation.IsValidLabelValue(m[k]) {
			p.add(path+"["+fmt.Sprintf("%q", k)+"]", m[k], "invalid value: %s", msg)
		}
	}
}

func validateAnnotations(p *problems, path string, m map[string]string) {
	for _, k := range sortedStringKeys(m) {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			p.add(path, k, "invalid key: %s", msg)
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

// ValidateHelmRepository checks a HelmRepository and returns every problem
// as a *ValidationError, or nil: the URL's scheme (http, https, or oci
// with type oci), the type and provider, and durations.
func ValidateHelmRepository(r *source.HelmRepository) error {
	var p problems
	validateMeta(&p, r.ObjectMeta)
	validateEnum(&p, "spec.type", r.Spec.Type, source.RepositoryTypeDefault, source.RepositoryTypeOCI)
	schemes := []string{"http", "https"}
	if r.Spec.Type == source.RepositoryTypeOCI {
		schemes = []string{"oci"}
	}
	validateURL(&p, "spec.url", r.Spec.URL, schemes...)
	validateEnum(&p, "spec.provider", r.Spec.Provider, "generic", "aws", "azure", "gcp")
	validateDuration(&p, "spec.interval", &r.Spec.Interval)
	validateDuration(&p, "spec.timeout", r.Spec.Timeout)
	validateSecretRef(&p, "spec.secretRef", r.Spec.SecretRef)
	validateSecretRef(&p, "spec.certSecretRef", r.Spec.CertSecretRef)
	return p.err(source.KindHelmRepository, r.ObjectMeta)
}

// ValidateOCIRepository checks an OCIRepository and returns every problem
// as a *ValidationError, or nil: an oci:// URL, the reference (digest
// syntax, semver constraint, semver filter), the layer selector, the
// verification and provider, and durations.
func ValidateOCIRepository(r *source.OCIRepository) error {
	var p problems
	validateMeta(&p, r.ObjectMeta)
	validateURL(&p, "spec.url", r.Spec.URL, "oci")
	if ref := r.Spec.Reference; ref != nil {
		if ref.Digest != "" && !digestRe.MatchString(ref.Digest) {
			p.add("spec.ref.digest", ref.Digest, "must be algorithm:hex, e.g. sha256:<64 hex digits>")
		}
		if ref.SemVer != "" {
			if _, err := semver.NewConstraint(ref.SemVer); err != nil {
				p.add("spec.ref.semver", ref.SemVer, "invalid semver constraint: %v", err)
			}
		}
		if ref.SemverFilter != "" {
			if _, err := regexp.Compile(ref.SemverFilter); err != nil {
				p.add("spec.ref.semverFilter", ref.SemverFilter, "invalid regular expression: %v", err)
			}
		}
	}
	if ls := r.Spec.LayerSelector; ls != nil {
		validateEnum(&p, "spec.layerSelector.operation", ls.Operation, "extract", "copy")
	}
	if v := r.Spec.Verify; v != nil {
		if v.Provider == "" {
			p.add("spec.verify.provider", "", "is required; one of cosign, notation")
		}
		validateVerify(&p, "spec.verify", v.Provider, v.SecretRef != nil, len(v.MatchOIDCIdentity))
	}
	validateEnum(&p, "spec.provider", r.Spec.Provider, "generic", "aws", "azure", "gcp")
	validateDuration(&p, "spec.interval", &r.Spec.Interval)
	validateDuration(&p, "spec.timeout", r.Spec.Timeout)
	validateSecretRef(&p, "spec.secretRef", r.Spec.SecretRef)
	validateSecretRef(&p, "spec.certSecretRef", r.Spec.CertSecretRef)
	validateSecretRef(&p, "spec.proxySecretRef", r.Spec.ProxySecretRef)
	return p.err(source.KindOCIRepository, r.ObjectMeta)
}

// ValidateHelmChart checks a HelmChart and returns every problem as a
// *ValidationError, or nil: chart name, source reference kind and name,
// version constraint, reconcile strategy and durations.
func ValidateHelmChart(c *source.HelmChart) error {
	var p problems
	validateMeta(&p, c.ObjectMeta)
	if c.Spec.Chart == "" {
		p.add("spec.chart", "", "is required")
	}
	validateKind(&p, "spec.sourceRef.kind", c.Spec.SourceRef.Kind, SourceKindHelmRepository, SourceKindGitRepository, SourceKindBucket)
	validateRefName(&p, "spec.sourceRef", c.Spec.SourceRef.Name, "")
	if c.Spec.SourceRef.Kind == SourceKindHelmRepository {
		validateVersion(&p, "spec.version", c.Spec.Version)
	}
	validateEnum(&p, "spec.reconcileStrategy", c.Spec.ReconcileStrategy, ReconcileStrategyChartVersion, ReconcileStrategyRevision)
	validateDuration(&p, "spec.interval", &c.Spec.Interval)
	if v := c.Spec.Verify; v != nil {
		validateVerify(&p, "spec.verify", v.Provider, v.SecretRef != nil, len(v.MatchOIDCIdentity))
	}
	return p.err(source.KindHelmChart, c.ObjectMeta)
}

var digestRe = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$`)

func validateURL(p *problems, path, raw string, schemes ...string) {
	if raw == "" {
		p.add(path, "", "is required")
		return
	}
	// The URL may carry credentials (user:password@, a token in the
	// query): the problem shows it redacted, and url.Parse's message,
	// which quotes it, is not used.
	shown := redact.URL(raw)
	u, err := url.Parse(raw)
	if err != nil {
		p.add(path, shown, "invalid URL: %s", urlProblem(err))
		return
	}
	ok := false
	for _, s := range schemes {
		ok = ok || u.Scheme == s
	}
	switch {
	case !ok:
		p.add(path, shown, "scheme must be %s", strings.Join(schemes, " or "))
	case u.Host == "":
		p.add(path, shown, "must name a host")
	}
}

// urlProblem says what url.Parse found wrong without quoting the URL:
// its message is "parse <quoted URL>: <problem>", and the problem itself
// may quote part of it (an invalid escape, a bad port).
func urlProblem(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var esc url.EscapeError
	var host url.InvalidHostError
	switch {
	case errors.As(err, &esc):
		return "invalid escape (%XX) sequence"
	case errors.As(err, &host):
		return "invalid character in host name"
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '"'); i >= 0 {
		msg = strings.TrimSpace(strings.TrimSuffix(msg[:i], ":"))
	}
	return msg
}

func validateSecretRef(p *problems, path string, ref *source.LocalObjectReference) {
	if ref != nil && ref.Name == "" {
		p.add(path+".name", "", "is required")
	}
}

// Validate checks every object (Releases with Release.Validate, sources
// with ValidateHelmRepository, ValidateOCIRepository, ValidateHelmChart,
// policies with their own Validate) and joins the errors, in Objects
// order, or returns nil.
func (o *Objects) Validate() error {
	var errs []error
	for _, r := range o.Releases {
		if err := r.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range o.HelmRepositories {
		if err := ValidateHelmRepository(r); err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range o.OCIRepositories {
		if err := ValidateOCIRepository(r); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range o.HelmCharts {
		if err := ValidateHelmChart(c); err != nil {
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
