package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"
	goyaml "go.yaml.in/yaml/v2"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
	"github.com/helmfleet/helmfleet/values"
)

// Plan is what a reconcile would do to one release on one cluster,
// computed without writing anything.
type Plan struct {
	// Cluster is the cluster's name.
	Cluster string
	// Release is the Release planned (for a fleet, the cluster's copy
	// after override policies).
	Release *release.Release
	// State is the state of the release now.
	State State
	// Reason says why, when the state has one.
	Reason string
	// Action is the first action a reconcile would run.
	Action Action
	// Chart and Version are the chart to install or upgrade to.
	Chart, Version string
	// Verified says who signed the chart when its source asked for
	// verification; nil otherwise. A chart that fails it is not planned:
	// Err says why (it wraps source.ErrUnverified).
	Verified *source.Verified
	// Revision is the Helm revision running now (0 if none).
	Revision int
	// KubeVersion is the Kubernetes version the chart was rendered for,
	// and CapabilitiesFrom says where it and the API versions came from
	// (CapabilitiesFromCluster, CapabilitiesFromDiscovery or
	// CapabilitiesFromHelmDefault). A plan for a cluster never seen is
	// made against a stand-in that says its version (for example
	// memory.New(name, memory.WithKubeVersion(v))).
	KubeVersion, CapabilitiesFrom string
	// Values are the composed values with provenance (secret-safe when
	// printed); nil when they could not be composed.
	Values *values.Result
	// Objects are the rendered objects (after post-renderers), sorted by
	// kind, namespace and name.
	Objects []*unstructured.Unstructured
	// Diff is a unified diff from what runs now to what would run, per
	// object, with Secret data replaced by digests.
	Diff string
	// Err is why the release cannot be planned or would stall.
	Err error
	// Warnings name the fields set but not acted on as Flux would
	// (release.FieldWarnings, then those of the chart's source objects:
	// Chart.FieldWarnings), and then what the reconcile would do that
	// a user may not expect (a remediation that would uninstall a
	// deployed and healthy revision), as Reconcile would report them in
	// Result.Warnings.
	Warnings []string
}

// Plan computes what Reconcile would do to rel on cluster, without
// writing anything: the state, the next action, the chart, the composed
// values, the rendered objects and their diff against the manifest
// running now. rel is not modified.
func (r *Reconciler) Plan(ctx context.Context, cluster release.Cluster, rel *release.Release) *Plan {
	rel = rel.DeepCopy()
	p := &Plan{Cluster: cluster.Name(), Release: rel, Action: ActionNone}
	if rel.Spec.Suspend {
		p.Reason = "suspended"
		return p
	}
	res := &Result{}
	ru := &run{r: r, ctx: ctx, cluster: cluster, rel: rel, res: res}
	p.Warnings = ru.fieldWarnings()
	d, err := r.prepare(ctx, rel)
	if err != nil {
		p.Err = err
		return p
	}
	ru.d, p.Values = d, d.values
	p.Warnings = append(p.Warnings, d.chart.FieldWarnings...)
	p.Warnings = append(p.Warnings, d.chart.Warnings...)
	mask := newSecretMask(d.values)
	p.Chart, p.Version, p.Verified = d.chart.Chart.Metadata.Name, d.chart.Chart.Metadata.Version, d.chart.Verified
	force := ru.handleRequests()
	ru.resetFailuresOnChange()
	if ru.cfg, err = ru.helmConfig(ru.scopeOf(rel.GetStorageNamespace(), rel.GetTargetNamespace(), rel.GetReleaseName())); err != nil {
		p.Err = err
		return p
	}
	obs, err := ru.observe()
	if err != nil {
		p.Err = err
		return p
	}
	p.State, p.Reason = obs.state, obs.reason
	current := ""
	if obs.last != nil {
		p.Revision = obs.last.Version
		current = obs.last.Manifest
	}
	dec, err := ru.decide(obs, force)
	p.Warnings = append(p.Warnings, res.Warnings...)
	if p.Action = dec.action; err != nil {
		p.Err = err
	}
	caps, from, err := capabilitiesOf(ctx, cluster, ru.cfg)
	if err != nil {
		p.Err = fmt.Errorf("release %s on cluster %s: %w", refOf(rel), cluster.Name(), err)
		return p
	}
	p.KubeVersion, p.CapabilitiesFrom = caps.KubeVersion.Version, from
	if err := checkKubeVersion(d.chart.Chart, caps, cluster.Name()); err != nil {
		p.Err = fmt.Errorf("release %s on cluster %s: %w", refOf(rel), cluster.Name(), err)
		return p
	}
	crds := r.crds.of(chartCRDs(d.chart.Chart))
	manifest, err := ru.render(caps, crds)
	if err != nil {
		p.Err = fmt.Errorf("release %s on cluster %s: render: %w", refOf(rel), cluster.Name(), err)
		return p
	}
	if p.Objects, err = planObjects(ru.cfg.KubeClient, manifest, rel.GetTargetNamespace(), crds); err != nil {
		// A manifest Helm rendered but the cluster's types do not read.
		p.Err = fmt.Errorf("release %s on cluster %s: render: %w", refOf(rel), cluster.Name(), ru.helmErr("render", err))
		return p
	}
	// The diff reads the objects in the manifest's order (of two with
	// the same key, the later is the one shown).
	desired := slices.Clone(p.Objects)
	sortObjects(p.Objects)
	if obs.state == StateAbsent {
		current = ""
	}
	p.Diff, err = manifestDiff(ru.cfg, current, manifest, desired, rel.GetTargetNamespace(), crds, mask)
	if err != nil && p.Err == nil {
		p.Err = ru.helmErr("diff", err)
	}
	return p
}

// render renders the desired manifest with Helm, client-side, with caps
// (the cluster's capabilities): nothing reaches the cluster or its
// storage. Unless the release skips CRDs, the API versions of the chart's
// crds/ (crds) are added, as an install sees them once it has created
// them.
func (ru *run) render(caps *chartutil.Capabilities, crds *crdFacts) (string, error) {
	rel := ru.rel
	c := caps.Copy()
	if rel.GetInstall().GetCRDsPolicy() != release.Skip {
		if crds.versionsErr != nil {
			return "", crds.versionsErr
		}
		c.APIVersions = append(c.APIVersions, crds.versions...)
	}
	m, err := ru.engine().Render(ru.ctx, c, ru.d.chart.Chart, ru.d.values.Values, RenderOptions{ReleaseName: rel.GetReleaseName(),
		Namespace: rel.GetTargetNamespace(), PostRenderer: ru.d.post, PostRenderStrategy: rel.Spec.PostRenderStrategy, SkipSchemaValidation: rel.GetInstall().DisableSchemaValidation})
	if err != nil {
		return "", ru.helmErr("render", err)
	}
	return m, nil
}

func sortObjects(objs []*unstructured.Unstructured) {
	sort.Slice(objs, func(i, j int) bool { return objectKey(objs[i]) < objectKey(objs[j]) })
}

func objectKey(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// manifestDiff renders a unified diff per object between two manifests,
// Secret objects' values and values that came from Secrets (mask)
// replaced by short digests, so that a change shows without the value.
// desired are the objects of to, already decoded, in its order; from is
// decoded here (crds are the facts of the chart's CRDs). Only the
// objects that differ are written out as YAML.
func manifestDiff(cfg *action.Configuration, from, to string, desired []*unstructured.Unstructured, namespace string, crds *crdFacts, mask *secretMask) (string, error) {
	// The desired side is masked first: where it holds a Secret value,
	// the running side is masked whole too (the value may have been
	// rotated since, and the old one is as secret as the new).
	masked := map[string]map[string]bool{}
	b := map[string]*unstructured.Unstructured{}
	if strings.TrimSpace(to) != "" {
		for _, o := range desired {
			k := objectKey(o)
			paths := map[string]bool{}
			b[k] = mask.object(maskSecret(o), paths, nil)
			masked[k] = paths
		}
	}
	a := map[string]*unstructured.Unstructured{}
	if strings.TrimSpace(from) != "" {
		objs, err := planObjects(cfg.KubeClient, from, namespace, crds)
		if err != nil {
			return "", err
		}
		for _, o := range objs {
			k := objectKey(o)
			a[k] = mask.object(maskSecret(o), map[string]bool{}, masked[k])
		}
	}
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		oa, inA := a[k]
		ob, inB := b[k]
		if inA && inB && reflect.DeepEqual(oa.Object, ob.Object) {
			// Equal objects write out equal YAML: nothing to show.
			continue
		}
		ya, err := yamlOf(oa)
		if err != nil {
			return "", err
		}
		yb, err := yamlOf(ob)
		if err != nil {
			return "", err
		}
		if ya == yb {
			continue
		}
		fromName, toName := k, k
		if !inA {
			fromName = "/dev/null"
		}
		if !inB {
			toName = "/dev/null"
		}
		if err := writeUnifiedDiff(&sb, ya, yb, fromName, toName); err != nil {
			return "", err
		}
	}
	return sb.String(), nil
}

// writeUnifiedDiff writes the unified diff of a and b (3 lines of
// context) to sb, as difflib writes it. An object added or removed (one
// side empty) whose text has no blank line but its end is written
// directly: difflib.SplitLines gives "" the line "\n" and every text a
// last line "\n", so its diff is every line added (or removed) and that
// last line as context, the same text without difflib's matching.
func writeUnifiedDiff(sb *strings.Builder, a, b, fromName, toName string) error {
	side, sign := b, "+"
	if b == "" {
		side, sign = a, "-"
	}
	if (a != "" && b != "") || !strings.HasSuffix(side, "\n") || strings.HasPrefix(side, "\n") || strings.Contains(side, "\n\n") {
		text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(a), B: difflib.SplitLines(b),
			FromFile: fromName, ToFile: toName, Context: 3,
		})
		if err != nil {
			return err
		}
		sb.WriteString(text)
		return nil
	}
	lines := strings.Count(side, "\n")
	ranges := "-1 +1," + strconv.Itoa(lines+1)
	if sign == "-" {
		ranges = "-1," + strconv.Itoa(lines+1) + " +1"
	}
	sb.Grow(len(fromName) + len(toName) + len(ranges) + 20 + len(side) + lines + 2)
	sb.WriteString("--- " + fromName + "\n+++ " + toName + "\n@@ " + ranges + " @@\n")
	for line := range strings.SplitAfterSeq(side[:len(side)-1], "\n") {
		sb.WriteString(sign)
		sb.WriteString(line)
	}
	sb.WriteString("\n \n")
	return nil
}

// yamlOf is o as the diff shows it (as sigs.k8s.io/yaml writes it); ""
// for no object.
func yamlOf(o *unstructured.Unstructured) (string, error) {
	if o == nil {
		return "", nil
	}
	if plainJSONTree(o.Object) {
		// Such a tree comes out of sigs.k8s.io/yaml's JSON round trip
		// as it went in: writing it with go-yaml directly is the same
		// text without the round trip.
		data, err := goyaml.Marshal(o.Object)
		if err != nil {
			return "", err
		}
		return string(data), nil
	}
	data, err := yaml.Marshal(o.Object)
	if err != nil {
		return "", err
	}
	return string(data), nil
}

// plainJSONTree says whether v holds only what sigs.k8s.io/yaml's
// Marshal (JSON, then back through go-yaml) returns unchanged: non-nil
// maps with string keys and lists, valid UTF-8 strings, booleans, nulls
// and integers. Floats (an integral float comes back an integer), nil
// maps and lists (they come back null) and other types do not.
func plainJSONTree(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		if t == nil {
			return false
		}
		for k, e := range t {
			if !utf8.ValidString(k) || !plainJSONTree(e) {
				return false
			}
		}
		return true
	case []any:
		if t == nil {
			return false
		}
		for _, e := range t {
			if !plainJSONTree(e) {
				return false
			}
		}
		return true
	case string:
		return utf8.ValidString(t)
	case nil, bool, int64, int, int32:
		return true
	default:
		return false
	}
}

// maskSecret returns a Secret with every data and stringData value
// replaced by "(sha256:<12 hex>)"; other objects are returned as they are.
func maskSecret(o *unstructured.Unstructured) *unstructured.Unstructured {
	if o.GetKind() != "Secret" || o.GroupVersionKind().Group != "" {
		return o
	}
	c := o.DeepCopy()
	for _, field := range []string{"data", "stringData"} {
		m, ok := c.Object[field].(map[string]any)
		if !ok {
			continue
		}
		for k, v := range m {
			sum := sha256.Sum256([]byte(fmt.Sprint(v)))
			m[k] = "(sha256:" + hex.EncodeToString(sum[:])[:12] + ")"
		}
	}
	return c
}
