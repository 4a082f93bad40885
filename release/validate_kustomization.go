package release

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/helmfleet/helmfleet/internal/fieldcheck"
)

// VariableNameRe is the rule a postBuild variable name follows, Flux's
// (fluxcd/pkg kustomize varsubRegex): a letter or underscore, then
// letters, digits and underscores.
var VariableNameRe = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

// Validate checks the Kustomization and returns every problem at once as
// a *ValidationError, or nil. Call it after Default: it requires
// metadata.namespace. It checks what Flux's CRD and controller check —
// the source kind, durations, enums, names and namespaces, variable
// names, patches and their targets, dependencies (and not on itself) —
// and that spec.path and spec.components stay inside the source, and it
// compiles the CEL of spec.healthCheckExprs and spec.dependsOn[].readyExpr
// as Flux's controller would. The fields helmfleet cannot act on are
// errors: spec.kubeConfig (clusters come from the caller's backends) and
// spec.decryption (no SOPS).
func (in *Kustomization) Validate() error {
	var p fieldcheck.Problems
	fieldcheck.Meta(&p, in.ObjectMeta)
	s := &in.Spec
	fieldcheck.Kind(&p, "spec.sourceRef.kind", s.SourceRef.Kind,
		SourceKindOCIRepository, SourceKindGitRepository, SourceKindBucket, SourceKindExternalArtifact)
	fieldcheck.RefName(&p, "spec.sourceRef", s.SourceRef.Name, s.SourceRef.Namespace)
	pathOK := validateSourcePath(&p, "spec.path", s.Path, s.Path)
	if s.Interval.Duration <= 0 {
		p.Add("spec.interval", s.Interval.Duration.String(), "is required and must be positive")
	}
	fieldcheck.Duration(&p, "spec.retryInterval", s.RetryInterval)
	fieldcheck.Duration(&p, "spec.timeout", s.Timeout)
	validateDependsOn(&p, KustomizationKind, KustomizationKind, in.ObjectMeta, s.DependsOn)
	fieldcheck.Enum(&p, "spec.deletionPolicy", s.DeletionPolicy,
		DeletionPolicyMirrorPrune, DeletionPolicyDelete, DeletionPolicyWaitForTermination, DeletionPolicyOrphan)
	for i, hc := range s.HealthChecks {
		hp := fmt.Sprintf("spec.healthChecks[%d]", i)
		if hc.Kind == "" {
			p.Add(hp+".kind", "", "is required")
		}
		fieldcheck.RefName(&p, hp, hc.Name, hc.Namespace)
	}
	fieldcheck.Namespace(&p, "spec.targetNamespace", s.TargetNamespace)
	for _, f := range []struct{ path, v string }{{"spec.namePrefix", s.NamePrefix}, {"spec.nameSuffix", s.NameSuffix}} {
		if len(f.v) > 200 {
			p.Add(f.path, f.v, "must be at most 200 characters, is %d", len(f.v))
		}
	}
	if m := s.CommonMetadata; m != nil {
		validateLabels(&p, "spec.commonMetadata.labels", m.Labels)
		validateAnnotations(&p, "spec.commonMetadata.annotations", m.Annotations)
	}
	validateKustomize(&p, "spec", &Kustomize{Patches: s.Patches, Images: s.Images})
	for i, c := range s.Components {
		cp := fmt.Sprintf("spec.components[%d]", i)
		if strings.TrimSpace(c) == "" {
			p.Add(cp, c, "must not be empty")
			continue
		}
		if path.IsAbs(c) {
			p.Add(cp, c, "must be relative to spec.path")
			continue
		}
		if pathOK {
			validateSourcePath(&p, cp, c, path.Join(s.Path, c))
		}
	}
	if pb := s.PostBuild; pb != nil {
		fieldcheck.Enum(&p, "spec.postBuild.substituteStrategy", pb.SubstituteStrategy,
			SubstituteStrategyWithVariables, SubstituteStrategyAlways)
		for _, k := range sortedStringKeys(pb.Substitute) {
			if !VariableNameRe.MatchString(k) {
				p.Add("spec.postBuild.substitute", k, "invalid variable name: must match %s", VariableNameRe)
			}
		}
		for i, r := range pb.SubstituteFrom {
			rp := fmt.Sprintf("spec.postBuild.substituteFrom[%d]", i)
			fieldcheck.Kind(&p, rp+".kind", r.Kind, "ConfigMap", "Secret")
			if r.Name == "" {
				p.Add(rp+".name", "", "is required")
			} else {
				for _, msg := range validation.IsDNS1123Subdomain(r.Name) {
					p.Add(rp+".name", r.Name, "%s", msg)
				}
			}
		}
	}
	if s.KubeConfig != nil {
		p.Add("spec.kubeConfig", "", "is not supported: helmfleet applies to the cluster its caller gives; remove it and place the Kustomization on that cluster")
	}
	if s.Decryption != nil {
		p.Add("spec.decryption", s.Decryption.Provider, "is not supported: helmfleet does not decrypt SOPS; decrypt the Secrets before or remove the field")
	}
	validateHealthCheckExprs(&p, s.HealthCheckExprs)
	if len(s.BuildMetadata) > 0 {
		p.Add("spec.buildMetadata", strings.Join(s.BuildMetadata, ","), "is not supported: helmfleet's kustomize build writes no origin or transformer annotations; remove the field")
	}
	for i, r := range s.Ignore {
		p.Add(fmt.Sprintf("spec.ignore[%d].paths", i), strings.Join(r.Paths, ","), "is not supported: helmfleet's apply and drift detection cannot leave JSON pointers alone, so these fields would be overwritten; remove the rule")
	}
	return p.Err(KustomizationKind, in.ObjectMeta)
}

// validateSourcePath requires a path that stays inside the source: an
// absolute path is taken from the source's root, as Flux does, but ".."
// must not climb above it (Flux clamps it at the root silently).
// It reports the value as written and whether the path is good.
func validateSourcePath(p *fieldcheck.Problems, field, written, v string) bool {
	rel := path.Clean(strings.TrimPrefix(v, "/"))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		p.Add(field, written, "must not leave the source's root")
		return false
	}
	return true
}
