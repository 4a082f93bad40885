package drift

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ObjectRef identifies an object: group, version, kind, namespace, name.
type ObjectRef struct {
	// Group is empty for the core API group.
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String renders the reference as Kind[.group]/[namespace/]name, e.g.
// "Deployment.apps/default/web" or "ConfigMap/default/settings".
func (r ObjectRef) String() string {
	var b strings.Builder
	b.WriteString(r.Kind)
	if r.Group != "" {
		b.WriteByte('.')
		b.WriteString(r.Group)
	}
	b.WriteByte('/')
	if r.Namespace != "" {
		b.WriteString(r.Namespace)
		b.WriteByte('/')
	}
	b.WriteString(r.Name)
	return b.String()
}

// compareRefs orders references by group, kind, namespace, name.
func compareRefs(a, b ObjectRef) int {
	if a.Group != b.Group {
		return cmp.Compare(a.Group, b.Group)
	}
	if a.Kind != b.Kind {
		return cmp.Compare(a.Kind, b.Kind)
	}
	if a.Namespace != b.Namespace {
		return cmp.Compare(a.Namespace, b.Namespace)
	}
	return cmp.Compare(a.Name, b.Name)
}

func (r ObjectRef) isSecret() bool { return r.Group == "" && r.Kind == "Secret" }

// Status is the outcome of comparing one object.
type Status string

const (
	// StatusMissing: desired, but not in the live list.
	StatusMissing Status = "Missing"
	// StatusModified: live differs from desired in a field desired sets.
	StatusModified Status = "Modified"
	// StatusUnchanged: every field desired sets is as desired.
	StatusUnchanged Status = "Unchanged"
	// StatusExcluded: left out by the opt-out annotation or a rule with the
	// path "".
	StatusExcluded Status = "Excluded"
	// StatusExtra: live, selected by Options.Extra, but no longer desired.
	StatusExtra Status = "Extra"
)

// Operation is one RFC 6902 JSON patch operation. Detect produces "add"
// and "replace" for fields desired sets, and "remove" only for fields
// that Options.OverrideManagers own: it never removes anything another
// manager put there.
type Operation struct {
	// Op is "add", "replace" or "remove".
	Op string `json:"op"`
	// Path is an RFC 6901 pointer into the live object.
	Path string `json:"path"`
	// Value is the desired value; none for "remove".
	Value any `json:"value,omitempty"`
}

// Patch is an RFC 6902 JSON patch; json.Marshal gives the wire form.
type Patch []Operation

// FieldChange is one drifted field, in words and values.
type FieldChange struct {
	// Field is a readable path in the desired object, with list elements
	// named by their key where the list has one, e.g.
	// spec.template.spec.containers[name=web].image.
	Field string `json:"field"`
	// Path is the JSON pointer the patch operation targets in the live
	// object ("/-" appends to a list).
	Path string `json:"path"`
	// Op is "add" (live lacks the field), "replace", or "remove" (an
	// override manager set a field desired does not).
	Op string `json:"op"`
	// Live is the live value (nil for add); masked for Secret data.
	Live any `json:"live,omitempty"`
	// Desired is the desired value (nil for remove); masked for Secret
	// data.
	Desired any `json:"desired"`
	// Managers own the field in the live object's managedFields, sorted;
	// empty when unknown.
	Managers []string `json:"managers,omitempty"`
}

// ObjectResult is the comparison of one object.
type ObjectResult struct {
	// Object identifies the object.
	Object ObjectRef `json:"object"`
	// Status is the outcome.
	Status Status `json:"status"`
	// Reason says why an object is Excluded.
	Reason string `json:"reason,omitempty"`
	// Changes are the drifted fields, sorted by path; Secret data masked.
	Changes []FieldChange `json:"changes,omitempty"`
	// Ignored are differences that a field-manager rule suppressed.
	Ignored []FieldChange `json:"ignored,omitempty"`
	// Patch restores the desired fields on the live object, for display:
	// Secret data is masked. Report.Corrections has the real patch.
	Patch Patch `json:"patch,omitempty"`
	// Rules names the rules whose target selected this object. Results
	// selected by the same rules share this slice: treat it as read-only.
	Rules []string `json:"rules,omitempty"`

	// private holds the real values, Secret data included. fmt prints
	// what unexported fields hold, and a pointer to a struct as the struct
	// (at the top level, where a bad verb such as %s on a Report sends
	// it), but a pointer to a pointer only as an address, whatever the
	// verb.
	private **resultData
	ruleIdx []int
}

// resultData is what Report.Corrections needs of an ObjectResult: the
// desired object of a Missing one, the real patch of a Modified one.
type resultData struct {
	desired    *unstructured.Unstructured
	correction Patch
}

// newPrivate returns d behind two pointers, in one allocation.
func newPrivate(d resultData) **resultData {
	h := &struct {
		p *resultData
		d resultData
	}{d: d}
	h.p = &h.d
	return &h.p
}

// RuleReport says which objects a rule selected.
type RuleReport struct {
	// Rule is "ignore[i]" or "managers[i]".
	Rule string `json:"rule"`
	// Description restates the rule.
	Description string `json:"description"`
	// Objects are the objects the rule's target selected, sorted; empty
	// means the rule matched nothing.
	Objects []ObjectRef `json:"objects,omitempty"`
}

// Report is the outcome of Detect.
type Report struct {
	// Mode is the configured mode. With ModeDisabled nothing is compared.
	Mode Mode `json:"mode"`
	// Objects are sorted by group, kind, namespace and name.
	Objects []ObjectResult `json:"objects,omitempty"`
	// Rules follow configuration order: ignore rules, then manager rules.
	Rules []RuleReport `json:"rules,omitempty"`
}

// Count returns how many objects have status s.
func (r *Report) Count(s Status) int {
	n := 0
	for i := range r.Objects {
		if r.Objects[i].Status == s {
			n++
		}
	}
	return n
}

// Drifted reports whether any object is Missing or Modified.
func (r *Report) Drifted() bool {
	return r.Count(StatusMissing)+r.Count(StatusModified) > 0
}

// Unmatched returns the names of the rules that selected no object.
func (r *Report) Unmatched() []string {
	var out []string
	for _, rr := range r.Rules {
		if len(rr.Objects) == 0 {
			out = append(out, rr.Rule)
		}
	}
	return out
}

// String renders the report for people: a summary line, one line per
// object that is not unchanged with one line per changed field, and what
// each rule matched. Secret data is masked; long values are shortened.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "drift (mode %s): %d missing, %d modified, %d unchanged, %d excluded, %d extra\n",
		r.Mode, r.Count(StatusMissing), r.Count(StatusModified), r.Count(StatusUnchanged),
		r.Count(StatusExcluded), r.Count(StatusExtra))
	for i := range r.Objects {
		o := &r.Objects[i]
		if o.Status == StatusUnchanged && len(o.Ignored) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s: %s", o.Object, strings.ToLower(string(o.Status)))
		if o.Reason != "" {
			fmt.Fprintf(&b, " (%s)", o.Reason)
		}
		b.WriteByte('\n')
		for _, c := range o.Changes {
			writeChange(&b, "  ", c)
		}
		for _, c := range o.Ignored {
			writeChange(&b, "  ignored ", c)
		}
	}
	if len(r.Rules) > 0 {
		b.WriteString("rules:\n")
		for _, rr := range r.Rules {
			fmt.Fprintf(&b, "  %s %s: ", rr.Rule, rr.Description)
			if len(rr.Objects) == 0 {
				b.WriteString("matched nothing\n")
				continue
			}
			for i, ref := range rr.Objects {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(ref.String())
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func writeChange(b *strings.Builder, prefix string, c FieldChange) {
	b.WriteString(prefix)
	b.WriteString(c.Field)
	b.WriteString(": ")
	if c.Op == "add" {
		b.WriteString("(unset)")
	} else {
		b.WriteString(displayValue(c.Live))
	}
	b.WriteString(" -> ")
	if c.Op == "remove" {
		b.WriteString("(unset)")
	} else {
		b.WriteString(displayValue(c.Desired))
	}
	if len(c.Managers) > 0 {
		b.WriteString(" (live owner: ")
		b.WriteString(strings.Join(c.Managers, ", "))
		b.WriteByte(')')
	}
	b.WriteByte('\n')
}

// maxDisplay bounds a value shown in String; a 64 KB ConfigMap entry must
// not flood a log line.
const maxDisplay = 60

func displayValue(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	s := string(raw)
	if utf8.RuneCountInString(s) <= maxDisplay {
		return s
	}
	n := 0
	for i := range s {
		if n == maxDisplay-1 {
			return s[:i] + "…(" + strconv.Itoa(len(s)) + " bytes)"
		}
		n++
	}
	return s
}

// Masks for Secret values, as Flux shows them.
const (
	maskDefault = "***"
	maskBefore  = "*** (before)"
	maskAfter   = "*** (after)"
)

// isSecretDataPath reports whether a pointer is under a Secret's data or
// stringData.
func isSecretDataPath(path string) bool {
	for _, root := range [...]string{"/data", "/stringData"} {
		if path == root || strings.HasPrefix(path, root+"/") {
			return true
		}
	}
	return false
}

// maskChange returns c with Secret values replaced; it never modifies the
// values c points to, which the correction patch shares.
func maskChange(c FieldChange) FieldChange {
	if !isSecretDataPath(c.Path) {
		return c
	}
	lm, lok := c.Live.(map[string]any)
	dm, dok := c.Desired.(map[string]any)
	if c.Op == "replace" && lok && dok {
		c.Live, c.Desired = maskMaps(lm, dm)
		return c
	}
	before, after := maskDefault, maskDefault
	if c.Op == "replace" {
		before, after = maskBefore, maskAfter
	}
	if c.Live != nil {
		c.Live = maskValue(c.Live, before)
	}
	if c.Desired != nil {
		c.Desired = maskValue(c.Desired, after)
	}
	return c
}

// maskPatch returns a copy of p with Secret values masked.
func maskPatch(p Patch) Patch {
	out := make(Patch, len(p))
	for i, op := range p {
		if isSecretDataPath(op.Path) && op.Value != nil {
			op.Value = maskValue(op.Value, maskDefault)
		}
		out[i] = op
	}
	return out
}

// maskMaps masks the two sides of a data map replaced whole (a
// rationalized change) key by key, as Flux's maskMap does: a key whose
// value changed shows the before and after masks, any other key the
// default mask. Flux leaves the new value of an unchanged key unmasked;
// here every value is masked.
func maskMaps(live, desired map[string]any) (map[string]any, map[string]any) {
	l, d := make(map[string]any, len(live)), make(map[string]any, len(desired))
	for k, lv := range live {
		l[k] = maskDefault
		if dv, ok := desired[k]; ok && !equalValues(lv, dv) {
			l[k] = maskBefore
		}
	}
	for k, dv := range desired {
		d[k] = maskDefault
		if lv, ok := live[k]; ok && !equalValues(lv, dv) {
			d[k] = maskAfter
		}
	}
	return l, d
}

// maskValue masks a whole data map key by key, or a single value.
func maskValue(v any, mask string) any {
	if m, ok := v.(map[string]any); ok {
		out := make(map[string]any, len(m))
		for k := range m {
			out[k] = mask
		}
		return out
	}
	return mask
}
