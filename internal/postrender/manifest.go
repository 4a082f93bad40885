package postrender

import (
	"bytes"
	"strings"

	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/yaml"
)

// Kustomize parses manifests into objects and writes them back without
// comments, so the "# Source: <chart>/templates/<file>" line Helm puts
// above every object would be lost. Helm users read those lines (helm get
// manifest, helm template) and so do tools such as helm-diff; sourceIndex
// remembers them by object identity so that write can put them back.

// objectKey identifies an object in a manifest stream the way it is
// written, without kustomize's namespace defaulting.
type objectKey struct {
	apiVersion, kind, namespace, name string
}

// sourceIndex maps each object of a rendered stream to its Source line.
type sourceIndex map[objectKey]string

const sourcePrefix = "# Source: "

// head is the part of an object document indexSources needs.
type head struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Items []head `json:"items"`
}

// indexSources reads the Source line of every document of manifests. A
// document without one, or that does not parse, is left out: kustomize
// reports unparsable documents itself.
func indexSources(manifests []byte) sourceIndex {
	idx := sourceIndex{}
	if !bytes.Contains(manifests, []byte(sourcePrefix)) {
		return idx
	}
	for _, doc := range releaseutil.SplitManifests(string(manifests)) {
		src := sourceLine(doc)
		if src == "" {
			continue
		}
		var h head
		if err := yaml.Unmarshal([]byte(doc), &h); err != nil {
			continue
		}
		idx.add(h, src)
	}
	return idx
}

// add records h (and, for a List, its items, which kustomize unwraps).
func (idx sourceIndex) add(h head, src string) {
	idx[objectKey{h.APIVersion, h.Kind, h.Metadata.Namespace, h.Metadata.Name}] = src
	for _, item := range h.Items {
		idx.add(item, src)
	}
}

// sourceLine returns the value of the first "# Source: " comment line of a
// document, or "".
func sourceLine(doc string) string {
	for line := range strings.Lines(doc) {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, sourcePrefix); ok {
			return strings.TrimSpace(rest)
		}
		if line != "" && !strings.HasPrefix(line, "#") {
			return ""
		}
	}
	return ""
}

// write renders m as Helm does: every object a document starting with
// "---", then its Source line when idx knows the object, in m's order.
func write(m resmap.ResMap, idx sourceIndex) (*bytes.Buffer, error) {
	out := &bytes.Buffer{}
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		key := objectKey{r.GetApiVersion(), r.GetKind(), r.GetNamespace(), r.GetName()}
		if src, ok := idx[key]; ok {
			out.WriteString(sourcePrefix + src + "\n")
		}
		out.Write(y)
	}
	return out, nil
}
