package reconcile

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"

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
	seen := map[string]bool{}
	for _, doc := range docs {
		for _, d := range splitYAML(doc) {
			crd, ok, err := decodeCRD(d)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
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
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out, nil
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

// decodeCRD decodes one YAML document as a CRD; ok is false when it is
// some other kind.
func decodeCRD(doc []byte) (*apiextensionsv1.CustomResourceDefinition, bool, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, false, nil //nolint:nilerr // not a CRD document; Helm reports bad YAML itself
	}
	if head.Kind != "CustomResourceDefinition" || head.APIVersion != "apiextensions.k8s.io/v1" {
		return nil, false, nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(doc, crd); err != nil {
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

// crdScopes maps the group/Kind of every CRD among docs to whether it is
// namespaced.
func crdScopes(docs [][]byte) map[string]bool {
	out := map[string]bool{}
	for _, doc := range docs {
		for _, d := range splitYAML(doc) {
			crd, ok, err := decodeCRD(d)
			if err != nil || !ok {
				continue
			}
			out[crd.Spec.Group+"/"+crd.Spec.Names.Kind] = crd.Spec.Scope != apiextensionsv1.ClusterScoped
		}
	}
	return out
}

// planObjects decodes a rendered manifest into objects as objectsOf does,
// and also knows the kinds that the chart's own CRDs define (crds, and
// CRDs templated into the manifest itself), which the cluster may not
// serve yet: a plan of a chart that brings CRDs shows its custom
// resources instead of failing on them. Their namespace defaults to
// namespace when the CRD is namespaced. A kind that neither the cluster
// nor the chart defines is an error naming it.
func planObjects(kc kube.Interface, manifest, namespace string, crds [][]byte) ([]*unstructured.Unstructured, error) {
	objs, err := objectsOf(kc, manifest)
	if err == nil {
		return objs, nil
	}
	scopes := crdScopes(append(append([][]byte(nil), crds...), []byte(manifest)))
	if len(scopes) == 0 {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, doc := range splitYAML([]byte(manifest)) {
		got, derr := objectsOf(kc, string(doc))
		if derr == nil {
			out = append(out, got...)
			continue
		}
		u := &unstructured.Unstructured{}
		if jerr := yaml.Unmarshal(doc, &u.Object); jerr != nil || u.Object == nil {
			return nil, derr
		}
		gvk := u.GroupVersionKind()
		namespaced, ok := scopes[gvk.Group+"/"+gvk.Kind]
		if !ok {
			return nil, fmt.Errorf("%w (neither the cluster nor the chart's CRDs define %s)", derr, gvk)
		}
		switch {
		case namespaced && u.GetNamespace() == "":
			u.SetNamespace(namespace)
		case !namespaced:
			u.SetNamespace("")
		}
		out = append(out, u)
	}
	return out, nil
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
