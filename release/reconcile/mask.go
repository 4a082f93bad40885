package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/drift"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/values"
)

// secretMask hides, in what a plan shows people, the values that came
// from Secrets through valuesFrom, wherever a chart rendered them (a
// ConfigMap, an annotation, a container argument), while the objects
// that are applied keep them. A masked value reads
// "(secret sha256:<12 hex>)": a change still shows, the value does not.
type secretMask struct {
	replacer *strings.Replacer
}

// newSecretMask returns the mask of res's Secret values; nil when there
// are none.
func newSecretMask(res *values.Result) *secretMask {
	if res == nil {
		return nil
	}
	secrets := res.SecretValues()
	if len(secrets) == 0 {
		return nil
	}
	// The forms a chart commonly gives a value are masked too (a
	// b64enc'd value in a ConfigMap, an upper-cased one, one escaped by
	// quote or toJson), each by the digest of the value itself.
	forms := map[string]string{}
	for _, s := range secrets {
		for _, f := range secretForms(s) {
			if len(f) >= values.MinSecretValueLength {
				if _, ok := forms[f]; !ok || f == s {
					forms[f] = maskedText(s)
				}
			}
		}
	}
	texts := make([]string, 0, len(forms))
	for f := range forms {
		texts = append(texts, f)
	}
	// Longest first (then in order, for determinism): the replacer tries
	// its pairs in order at each position, so a value that contains
	// another is masked whole.
	sort.Slice(texts, func(i, j int) bool {
		if len(texts[i]) != len(texts[j]) {
			return len(texts[i]) > len(texts[j])
		}
		return texts[i] < texts[j]
	})
	pairs := make([]string, 0, 2*len(texts))
	for _, f := range texts {
		pairs = append(pairs, f, forms[f])
	}
	return &secretMask{replacer: strings.NewReplacer(pairs...)}
}

// secretForms are s and the forms templates commonly turn it into:
// upper and lower case, escaped as by quote, %q and toJson, and base64
// (standard and URL alphabets, padded or not).
func secretForms(s string) []string {
	quoted := strconv.Quote(s)
	js, _ := json.Marshal(s)
	forms := []string{s, strings.ToUpper(s), strings.ToLower(s), quoted[1 : len(quoted)-1], string(js[1 : len(js)-1])}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		forms = append(forms, enc.EncodeToString([]byte(s)))
	}
	return forms
}

// maskedText is what stands for a hidden text.
func maskedText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "(secret sha256:" + hex.EncodeToString(sum[:])[:12] + ")"
}

// text masks every Secret value in s.
func (m *secretMask) text(s string) string {
	if m == nil {
		return s
	}
	return m.replacer.Replace(s)
}

// object returns a copy of o with every Secret value masked in its
// string leaves, map keys and numbers (a port taken from a Secret), and
// adds to paths where it masked something. Leaves at a path in hide are
// masked whole whatever they hold: the same place in the manifest that
// runs now, whose Secret values may have been rotated since.
func (m *secretMask) object(o *unstructured.Unstructured, paths, hide map[string]bool) *unstructured.Unstructured {
	if m == nil && len(hide) == 0 {
		return o
	}
	// walk builds new maps and lists, so o is left as it is.
	return &unstructured.Unstructured{Object: m.walk(o.Object, "", paths, hide).(map[string]any)}
}

func (m *secretMask) walk(v any, path string, paths, hide map[string]bool) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[m.text(k)] = m.walk(e, path+"\x00"+k, paths, hide)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = m.walk(e, fmt.Sprintf("%s\x00%d", path, i), paths, hide)
		}
		return out
	case string:
		if masked := m.text(t); masked != t {
			paths[path] = true
			return masked
		}
		if hide[path] {
			return maskedText(t)
		}
		return t
	case nil, bool:
		return t
	default: // numbers
		s := fmt.Sprint(t)
		if masked := m.text(s); masked != s {
			paths[path] = true
			return masked
		}
		if hide[path] {
			return maskedText(s)
		}
		return t
	}
}

// secretMask returns the mask of the run's Secret values: those of the
// composed values when the run has them, else (a drift check alone) of
// the release's Secret valuesFrom read afresh and of its inline values
// SecretFieldsAnnotation marks. Nil when there are none
// or they cannot be read (the check reports what it reads itself).
func (ru *run) secretMask() *secretMask {
	if ru.d != nil {
		return newSecretMask(ru.d.values)
	}
	refs := valuesRefs(ru.rel)
	secret := false
	for _, ref := range refs {
		secret = secret || ref.Kind == values.KindSecret
	}
	var reader values.Reader = noReader{}
	if ru.r.values != nil {
		reader = ru.r.values
	} else {
		secret, refs = false, nil
	}
	req := values.Request{Release: refOf(ru.rel), Namespace: ru.rel.Namespace, From: refs}
	if inline, _ := secretFields(ru.rel); len(inline) > 0 {
		req.Inline, req.SecretInline = inlineValues(ru.rel.Spec.Values), inline
	} else if !secret {
		return nil
	}
	res, err := values.Compose(ru.ctx, reader, req)
	if err != nil {
		return nil
	}
	return newSecretMask(res)
}

// report masks, in place, the values a drift report shows people (its
// changes, ignored changes and display patches). Its corrections keep
// the real values: drift.Report.Corrections does not read these fields.
func (m *secretMask) report(r *drift.Report) {
	if m == nil || r == nil {
		return
	}
	// The slices are copied before masking: the report may share their
	// arrays with the real values its corrections are made of.
	for i := range r.Objects {
		o := &r.Objects[i]
		for _, cs := range []*[]drift.FieldChange{&o.Changes, &o.Ignored} {
			if *cs == nil {
				continue
			}
			*cs = append([]drift.FieldChange(nil), *cs...)
			for j := range *cs {
				(*cs)[j].Live = m.value((*cs)[j].Live)
				(*cs)[j].Desired = m.value((*cs)[j].Desired)
			}
		}
		if o.Patch != nil {
			o.Patch = append(drift.Patch(nil), o.Patch...)
			for j := range o.Patch {
				o.Patch[j].Value = m.value(o.Patch[j].Value)
			}
		}
	}
}

// value masks every Secret value in a copy of v (walk copies as it
// goes, so values shared with the caller are not written through).
func (m *secretMask) value(v any) any {
	return m.walk(v, "", map[string]bool{}, nil)
}

// specValues is the JSON pointer of spec.values in a HelmRelease.
const specValues = "/spec/values"

// secretFields reads rel's SecretFieldsAnnotation: the pointers into
// spec.values it names (relative to spec.values, "" for all of it), and
// whether it names anything at all.
func secretFields(rel *release.Release) (inline []string, any bool) {
	ptrs := release.MarkedSecretFields(rel)
	if ptrs == nil {
		_, any = rel.GetAnnotations()[release.SecretFieldsAnnotation]
		return nil, any
	}
	for _, p := range ptrs {
		switch {
		case p != "" && !strings.HasPrefix(p, "/"):
			inline = append(inline, "") // not a pointer: all of spec.values
		case p == specValues || strings.HasPrefix(p, specValues+"/"):
			inline = append(inline, strings.TrimPrefix(p, specValues))
		case strings.HasPrefix(specValues, p+"/") || p == "":
			inline = append(inline, "") // spec or the whole object
		}
	}
	return inline, true
}

// shown is rel as outputs may show it: when SecretFieldsAnnotation marks
// some of its spec.values, a copy whose spec.values hold a redaction
// marker in place of each marked leaf (as values.Result.Redacted gives
// them); else rel itself. Compose of inline values alone fails only on
// a cancelled context, never here; the values are then left out.
func shown(rel *release.Release) *release.Release {
	if rel == nil {
		return nil
	}
	inline, _ := secretFields(rel)
	if len(inline) == 0 || len(rel.Spec.Values) == 0 {
		return rel
	}
	c := rel.DeepCopy()
	res, err := values.Compose(context.Background(), noReader{}, values.Request{Release: refOf(rel), Namespace: rel.Namespace, Inline: inlineValues(rel.Spec.Values), SecretInline: inline})
	c.Spec.Values = nil // shown only when they can be masked
	if err == nil {
		c.Spec.Values = res.Redacted()
	}
	return c
}
