package reconcile

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"

	"github.com/helmfleet/helmfleet/release"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/kube"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Where a render's capabilities came from (Plan.CapabilitiesFrom).
const (
	// CapabilitiesFromCluster: the cluster's CapabilitiesReader, or the
	// action configuration it handed out.
	CapabilitiesFromCluster = "cluster"
	// CapabilitiesFromDiscovery: the discovery client of the action
	// configuration's RESTClientGetter, as Helm itself discovers.
	CapabilitiesFromDiscovery = "discovery"
	// CapabilitiesFromHelmDefault: Helm's built-in defaults
	// (chartutil.DefaultCapabilities), because the cluster gave none.
	CapabilitiesFromHelmDefault = "helm-default"
)

// capabilitiesOf returns the capabilities a render for cluster uses, and
// where they came from: the cluster's CapabilitiesReader, else the
// configuration's own Capabilities, else discovery through its
// RESTClientGetter (what Helm's install does), else Helm's defaults.
func capabilitiesOf(ctx context.Context, cluster release.Cluster, cfg *action.Configuration) (*chartutil.Capabilities, string, error) {
	if cr, ok := cluster.(release.CapabilitiesReader); ok {
		caps, err := cr.Capabilities(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("capabilities: %w", err)
		}
		if caps != nil {
			return caps, CapabilitiesFromCluster, nil
		}
	}
	if cfg != nil && cfg.Capabilities != nil {
		return cfg.Capabilities.Copy(), CapabilitiesFromCluster, nil
	}
	if cfg != nil && cfg.RESTClientGetter != nil {
		dc, err := cfg.RESTClientGetter.ToDiscoveryClient()
		if err != nil {
			return nil, "", fmt.Errorf("capabilities: discovery client: %w", err)
		}
		v, err := dc.ServerVersion()
		if err != nil {
			return nil, "", fmt.Errorf("capabilities: server version: %w", err)
		}
		set, err := action.GetVersionSet(dc)
		if err != nil {
			return nil, "", fmt.Errorf("capabilities: %w", err)
		}
		return &chartutil.Capabilities{
			KubeVersion: chartutil.KubeVersion{Version: v.GitVersion, Major: v.Major, Minor: v.Minor},
			APIVersions: set,
			HelmVersion: chartutil.DefaultCapabilities.HelmVersion,
		}, CapabilitiesFromDiscovery, nil
	}
	return chartutil.DefaultCapabilities.Copy(), CapabilitiesFromHelmDefault, nil
}

// CRDVersions returns the "group/version" and "group/version/Kind" API
// versions the CustomResourceDefinitions among docs serve, sorted, as
// discovery lists them once the CRDs are installed. Documents that are
// not apiextensions.k8s.io CRDs are skipped; a CRD that cannot be decoded
// is an error naming it.
func CRDVersions(docs ...[]byte) ([]string, error) {
	f := decodeCRDFacts(docs)
	if f.versionsErr != nil {
		return nil, f.versionsErr
	}
	return f.versions, nil
}

// chartCRDs returns the documents of the CRDs a chart brings in crds/,
// its own and its enabled subcharts'.
func chartCRDs(c *chart.Chart) [][]byte {
	var out [][]byte
	for _, crd := range c.CRDObjects() {
		out = append(out, crd.File.Data)
	}
	return out
}

// crdHead is the part of a CustomResourceDefinition a plan reads.
type crdHead struct {
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind string `json:"kind"`
		} `json:"names"`
		Scope    apiextensionsv1.ResourceScope `json:"scope"`
		Versions []struct {
			Name   string `json:"name"`
			Served bool   `json:"served"`
		} `json:"versions"`
	} `json:"spec"`
}

// decodeCRD decodes one YAML document as a CRD; ok is false when it is
// some other kind.
func decodeCRD(doc []byte) (*crdHead, bool, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	// The YAML is converted to JSON once: a chart's CRDs are large
	// (kube-prometheus-stack's are megabytes of schema), and the
	// conversion, not the decoding, is most of their cost.
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, false, nil //nolint:nilerr // not a CRD document; Helm reports bad YAML itself
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, false, nil //nolint:nilerr // not an object; Helm reports it itself
	}
	if head.Kind != "CustomResourceDefinition" || head.APIVersion != "apiextensions.k8s.io/v1" {
		return nil, false, nil
	}
	// Only what a plan reads is decoded (group, kind, scope, versions):
	// the schemas, most of a CRD's bytes, are left to the cluster that
	// stores the CRD, which validates them as an API server does.
	crd := &crdHead{}
	if err := json.Unmarshal(js, crd); err != nil {
		return nil, false, fmt.Errorf("CustomResourceDefinition %s: %w", head.Metadata.Name, err)
	}
	return crd, true, nil
}

// splitYAML splits a multi-document YAML stream into its non-empty
// documents.
func splitYAML(data []byte) [][]byte {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if err != nil {
			return out
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			out = append(out, doc)
		}
	}
}

// crdFacts is what a plan reads from a set of CRD documents, decoded
// once: the API versions they serve (CRDVersions, or the error of the
// first CRD that cannot be decoded) and the scope of each group/Kind
// (whether each is namespaced; a CRD that cannot be decoded is skipped).
type crdFacts struct {
	versions    []string
	versionsErr error
	scopes      map[string]bool
}

// decodeCRDFacts decodes every CRD among docs once, for both its API
// versions and its scopes.
func decodeCRDFacts(docs [][]byte) *crdFacts {
	f := &crdFacts{scopes: map[string]bool{}}
	seen := map[string]bool{}
	for _, doc := range docs {
		for _, d := range splitYAML(doc) {
			crd, ok, err := decodeCRD(d)
			if err != nil && f.versionsErr == nil {
				f.versionsErr = err
			}
			if err != nil || !ok {
				continue
			}
			f.scopes[crd.Spec.Group+"/"+crd.Spec.Names.Kind] = crd.Spec.Scope != apiextensionsv1.ClusterScoped
			for _, v := range crd.Spec.Versions {
				if !v.Served {
					continue
				}
				gv := crd.Spec.Group + "/" + v.Name
				seen[gv] = true
				seen[gv+"/"+crd.Spec.Names.Kind] = true
			}
		}
	}
	f.versions = make([]string, 0, len(seen))
	for v := range seen {
		f.versions = append(f.versions, v)
	}
	sort.Strings(f.versions)
	return f
}

// maxCRDFacts bounds the charts whose CRD facts a Reconciler keeps.
const maxCRDFacts = 32

// crdCache keeps the crdFacts of the charts a Reconciler planned, keyed
// by the digest of their CRD documents, so that a chart's CRDs are
// decoded once and not on every plan of it. Safe for concurrent use:
// members planned at once wait for one decode of a chart's CRDs.
type crdCache struct {
	mu    sync.Mutex
	facts map[[sha256.Size]byte]*crdEntry
}

// crdEntry is one chart's facts, ready once done is closed.
type crdEntry struct {
	done  chan struct{}
	facts *crdFacts
}

// of returns the facts of docs, decoded on the first call for these
// bytes. A nil cache decodes every time. The facts returned are shared:
// callers do not modify them.
func (c *crdCache) of(docs [][]byte) *crdFacts {
	if c == nil || len(docs) == 0 {
		return decodeCRDFacts(docs)
	}
	h := sha256.New()
	var n [8]byte
	for _, d := range docs {
		binary.LittleEndian.PutUint64(n[:], uint64(len(d)))
		h.Write(n[:])
		h.Write(d)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	c.mu.Lock()
	e, ok := c.facts[key]
	if !ok {
		if c.facts == nil {
			c.facts = map[[sha256.Size]byte]*crdEntry{}
		}
		if len(c.facts) >= maxCRDFacts {
			for k := range c.facts {
				delete(c.facts, k)
				break
			}
		}
		e = &crdEntry{done: make(chan struct{})}
		c.facts[key] = e
	}
	c.mu.Unlock()
	if !ok {
		func() {
			defer close(e.done)
			e.facts = decodeCRDFacts(docs)
		}()
	}
	<-e.done
	return e.facts
}

// manifestCRDMarker is in every YAML document that defines a CRD.
var manifestCRDMarker = []byte("CustomResourceDefinition")

// planObjects decodes a rendered manifest into objects as objectsOf does,
// and also knows the kinds that the chart's own CRDs define (chart, the
// facts of its crds/, and CRDs templated into the manifest itself),
// which the cluster may not serve yet: a plan of a chart that brings
// CRDs shows its custom resources instead of failing on them. Their
// namespace defaults to namespace when the CRD is namespaced. A kind
// that neither the cluster nor the chart defines is an error naming it.
//
// A chart without CRDs is decoded in one call of the cluster's decoder.
// Otherwise the documents are decoded in order, each run of documents
// that do not name a kind of those CRDs in one call (one by one if the
// call fails), each document that does by itself: the same objects
// as decoding the manifest and then each document, each document read
// once where it can be.
func planObjects(kc kube.Interface, manifest, namespace string, chart *crdFacts) ([]*unstructured.Unstructured, error) {
	if len(chart.scopes) == 0 && !strings.Contains(manifest, string(manifestCRDMarker)) {
		return objectsOf(kc, manifest)
	}
	docs := splitYAML([]byte(manifest))
	// The scopes of the chart's CRDs, then of those the manifest
	// templates (a document without the word cannot define one).
	scopes := chart.scopes
	var own [][]byte
	for _, doc := range docs {
		if bytes.Contains(doc, manifestCRDMarker) {
			own = append(own, doc)
		}
	}
	if len(own) > 0 {
		scopes = maps.Clone(scopes)
		if scopes == nil {
			scopes = map[string]bool{}
		}
		maps.Copy(scopes, decodeCRDFacts(own).scopes)
	}
	if len(scopes) == 0 {
		return objectsOf(kc, manifest)
	}
	custom := customKindLines(scopes)
	mapped := map[string]bool{}
	var out []*unstructured.Unstructured
	var plain [][]byte
	flush := func() error {
		if len(plain) == 0 {
			return nil
		}
		run := plain
		plain = nil
		if got, err := objectsOf(kc, string(bytes.Join(run, []byte("\n---\n")))); err == nil {
			out = append(out, got...)
			return nil
		}
		for _, doc := range run {
			got, err := planDocument(kc, doc, namespace, scopes)
			if err != nil {
				return err
			}
			out = append(out, got...)
		}
		return nil
	}
	for _, doc := range docs {
		if !namesKind(doc, custom) {
			plain = append(plain, doc)
			continue
		}
		if err := flush(); err != nil {
			return nil, err
		}
		if u := unmappedCustom(kc, doc, namespace, scopes, mapped); u != nil {
			out = append(out, u)
			continue
		}
		got, err := planDocument(kc, doc, namespace, scopes)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// customKindLines are the lines "kind: <Kind>" of the kinds in scopes
// (keys group/Kind).
func customKindLines(scopes map[string]bool) [][]byte {
	seen := map[string]bool{}
	var out [][]byte
	for gk := range scopes {
		kind := gk[strings.LastIndex(gk, "/")+1:]
		if !seen[kind] {
			seen[kind] = true
			out = append(out, []byte("kind: "+kind+"\n"))
		}
	}
	return out
}

// namesKind says whether doc may be an object of a kind whose line is in
// kinds, or is JSON (read by itself, as the cluster's decoder tells JSON
// from YAML by a stream's start).
func namesKind(doc []byte, kinds [][]byte) bool {
	if t := bytes.TrimSpace(doc); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return true
	}
	for _, k := range kinds {
		for i := bytes.Index(doc, k); i >= 0; {
			if i == 0 || doc[i-1] == '\n' {
				return true
			}
			j := bytes.Index(doc[i+1:], k)
			if j < 0 {
				break
			}
			i += 1 + j
		}
	}
	return false
}

// planDocument decodes one document of a manifest: through the cluster's
// decoder, else as an object of a kind in scopes (group/Kind to whether
// it is namespaced).
func planDocument(kc kube.Interface, doc []byte, namespace string, scopes map[string]bool) ([]*unstructured.Unstructured, error) {
	got, derr := objectsOf(kc, string(doc))
	if derr == nil {
		return got, nil
	}
	u := &unstructured.Unstructured{}
	if jerr := yaml.Unmarshal(doc, &u.Object); jerr != nil || u.Object == nil {
		return nil, derr
	}
	if !scoped(u, namespace, scopes) {
		return nil, fmt.Errorf("%w (neither the cluster nor the chart's CRDs define %s)", derr, u.GroupVersionKind())
	}
	return []*unstructured.Unstructured{u}, nil
}

// scoped sets u's namespace by the scope of its kind in scopes (to
// namespace when it is namespaced and has none, to none when it is
// cluster-scoped); false when scopes does not have its kind.
func scoped(u *unstructured.Unstructured, namespace string, scopes map[string]bool) bool {
	gvk := u.GroupVersionKind()
	namespaced, ok := scopes[gvk.Group+"/"+gvk.Kind]
	if !ok {
		return false
	}
	switch {
	case namespaced && u.GetNamespace() == "":
		u.SetNamespace(namespace)
	case !namespaced:
		u.SetNamespace("")
	}
	return true
}

// unmappedCustom decodes doc as planDocument would when the cluster does
// not map the API version and kind it states (asked once per pair, with
// an object of that kind and nothing else; mapped keeps the answers), so
// that the document is read once instead of twice. It returns nil when
// doc does not state them plainly, the cluster maps them, or the
// document is not such an object of a kind in scopes: planDocument
// decides then.
func unmappedCustom(kc kube.Interface, doc []byte, namespace string, scopes map[string]bool, mapped map[string]bool) *unstructured.Unstructured {
	apiVersion, kind, ok := headOf(doc)
	if !ok {
		return nil
	}
	key := apiVersion + " " + kind
	m, asked := mapped[key]
	if !asked {
		_, err := objectsOf(kc, "apiVersion: "+apiVersion+"\nkind: "+kind+"\nmetadata:\n  name: helmfleet-plan-probe\n")
		m = err == nil
		mapped[key] = m
	}
	if m {
		return nil
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(doc, &u.Object); err != nil || u.Object == nil ||
		u.GetAPIVersion() != apiVersion || u.GetKind() != kind || !scoped(u, namespace, scopes) {
		return nil
	}
	return u
}

// headOf returns the apiVersion and kind that doc states on lines of its
// own at its top level, each once, as plain words; ok is false otherwise.
func headOf(doc []byte) (apiVersion, kind string, ok bool) {
	var nv, nk int
	for line := range bytes.Lines(doc) {
		switch {
		case bytes.HasPrefix(line, []byte("apiVersion:")):
			apiVersion, nv = plainWord(line[len("apiVersion:"):]), nv+1
		case bytes.HasPrefix(line, []byte("kind:")):
			kind, nk = plainWord(line[len("kind:"):]), nk+1
		}
	}
	return apiVersion, kind, nv == 1 && nk == 1 && apiVersion != "" && kind != ""
}

// plainWord is the value after "key:" on a line when it is one word of
// letters, digits, '.', '-' and '/'; "" otherwise.
func plainWord(rest []byte) string {
	w := bytes.TrimSuffix(bytes.TrimSuffix(rest, []byte("\n")), []byte("\r"))
	if len(w) < 2 || w[0] != ' ' {
		return ""
	}
	w = w[1:]
	for _, c := range w {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '/') {
			return ""
		}
	}
	return string(w)
}

// checkKubeVersion checks c's kubeVersion constraint against caps as
// Helm's render does, and names chart, constraint and cluster version.
func checkKubeVersion(c *chart.Chart, caps *chartutil.Capabilities, cluster string) error {
	if c.Metadata == nil || c.Metadata.KubeVersion == "" {
		return nil
	}
	if chartutil.IsCompatibleRange(c.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil
	}
	return &release.KubeVersionError{Chart: c.Metadata.Name, Version: c.Metadata.Version, Constraint: c.Metadata.KubeVersion, Cluster: cluster, KubeVersion: caps.KubeVersion.String()}
}
