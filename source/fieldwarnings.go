package source

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/helmfleet/helmfleet/internal/fieldcheck"
)

// providerGeneric is Flux's default provider: no cloud login, which is
// what helmfleet does for every source.
const providerGeneric = "generic"

// Reasons of the warnings of FieldWarnings: what helmfleet does instead.
const (
	resolverCreds = "credentials, CA and proxy come from the resolver's options, the same for every source"
	fromResolver  = "is not read: " + resolverCreds
	pulledOnUse   = "is not read: the source is pulled when a release using it reconciles"
	suspendedRead = "is not read: helmfleet keeps no last artifact to serve, so a suspended source is still pulled when a release using it reconciles"
)

// FieldWarnings returns a warning for each field of the source objects
// of ref (its OCIRepository, HelmRepository and HelmChart) that the user
// set and helmfleet does not act on as Flux 2.9 would, each naming the
// object, the field path and its value and saying what helmfleet does
// instead, sorted; nil when there is none. every is how often the source
// is pulled (the interval of the release that uses it): only a
// spec.interval shorter than it is a warning.
func FieldWarnings(ref Ref, every time.Duration) []string {
	var w []string
	if r := ref.OCIRepository; r != nil {
		w = append(w, ociRepositoryWarnings(r, every)...)
	}
	if r := ref.HelmRepository; r != nil {
		w = append(w, helmRepositoryWarnings(r, every)...)
	}
	if c := ref.HelmChart; c != nil {
		w = append(w, helmChartWarnings(c, every)...)
	}
	slices.Sort(w)
	return slices.Compact(w)
}

// warner formats the warnings of one object.
type warner struct {
	object string
	out    []string
}

// add adds that path, set to value, is not acted on, and why.
func (w *warner) add(path, value, why string) {
	w.out = append(w.out, fmt.Sprintf("%s: %s (%s) %s", w.object, path, value, why))
}

// common adds the warnings of the fields OCIRepository and
// HelmRepository share.
func (w *warner) common(secret, cert *LocalObjectReference, provider string, interval, every time.Duration, suspend bool) {
	if secret != nil {
		w.add("spec.secretRef", secret.Name, fromResolver)
	}
	if cert != nil {
		w.add("spec.certSecretRef", cert.Name, fromResolver)
	}
	if provider != "" && provider != providerGeneric {
		w.add("spec.provider", provider, "is not read: no cloud login; "+resolverCreds)
	}
	w.interval(interval, every)
	if suspend {
		w.add("spec.suspend", "true", suspendedRead)
	}
}

// interval adds a warning when the object's spec.interval is shorter
// than every, how often helmfleet pulls it: a new artifact is seen later
// than the user asked. A longer one is no warning (the source is pulled
// more often than asked, and a new artifact seen sooner): every source
// of Flux sets one, most longer than their releases'.
func (w *warner) interval(interval, every time.Duration) {
	if interval != 0 && every != 0 && interval < every {
		w.add("spec.interval", interval.String(), pulledOnUse+", every "+every.String()+": a new artifact is seen that much later")
	}
}

func ociRepositoryWarnings(r *OCIRepository, every time.Duration) []string {
	w := &warner{object: fieldcheck.ObjectName(KindOCIRepository, r.Namespace, r.Name)}
	s := &r.Spec
	w.common(s.SecretRef, s.CertSecretRef, s.Provider, s.Interval.Duration, every, s.Suspend)
	if s.ProxySecretRef != nil {
		w.add("spec.proxySecretRef", s.ProxySecretRef.Name, fromResolver)
	}
	if ls := s.LayerSelector; ls != nil {
		w.add("spec.layerSelector", fmt.Sprintf("mediaType %q, operation %q", ls.MediaType, ls.Operation),
			"is not read: the Helm chart layer is taken by Helm's media type")
	}
	if s.Ignore != nil {
		w.add("spec.ignore", fmt.Sprintf("%q", *s.Ignore), "is not read: the chart layer is loaded whole, no file is filtered")
	}
	if s.ServiceAccountName != "" {
		w.add("spec.serviceAccountName", s.ServiceAccountName,
			"is not read: no image pull secrets of a service account are used; "+resolverCreds)
	}
	return w.out
}

func helmRepositoryWarnings(r *HelmRepository, every time.Duration) []string {
	w := &warner{object: fieldcheck.ObjectName(KindHelmRepository, r.Namespace, r.Name)}
	s := &r.Spec
	provider := s.Provider
	if s.Type != RepositoryTypeOCI {
		provider = "" // Flux reads it for type oci only
	}
	w.common(s.SecretRef, s.CertSecretRef, provider, s.Interval.Duration, every, s.Suspend)
	if s.PassCredentials {
		w.add("spec.passCredentials", "true", "is not read: credentials are the resolver's *http.Client's, which alone decides what reaches the host of a chart URL")
	}
	if a := s.AccessFrom; a != nil {
		w.add("spec.accessFrom", fmt.Sprintf("%d namespace selectors", len(a.NamespaceSelectors)),
			"is not read: a release of any namespace may use the repository (release/fleet's NoCrossNamespaceRefs refuses other namespaces instead)")
	}
	return w.out
}

func helmChartWarnings(c *HelmChart, every time.Duration) []string {
	w := &warner{object: fieldcheck.ObjectName(KindHelmChart, c.Namespace, c.Name)}
	s := &c.Spec
	w.interval(s.Interval.Duration, every)
	if s.ReconcileStrategy == reconcileStrategyRevision {
		w.add("spec.reconcileStrategy", s.ReconcileStrategy, "is not read: it applies to GitRepository and Bucket sources, which helmfleet does not serve; the chart is taken by version")
	}
	if s.Suspend {
		w.add("spec.suspend", "true", suspendedRead)
	}
	if v := s.SourceRef.APIVersion; v != "" {
		if group, _, _ := strings.Cut(v, "/"); group != Group {
			w.add("spec.sourceRef.apiVersion", v, "is not read: the source is found by kind and name, as Flux does")
		}
	}
	return w.out
}
