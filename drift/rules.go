package drift

import (
	"fmt"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// Mode is Flux's driftDetection.mode: whether drift is looked for and
// whether it is corrected.
type Mode string

const (
	// ModeEnabled detects drift and plans corrections.
	ModeEnabled Mode = "enabled"
	// ModeWarn detects and reports drift but plans no correction.
	ModeWarn Mode = "warn"
	// ModeDisabled does not look for drift. It is also what the empty Mode
	// means, as in Flux, where drift detection is off unless enabled.
	ModeDisabled Mode = "disabled"
)

// DisableAnnotation is Flux's per-object opt-out: an object whose labels or
// annotations carry this key with the value DisableValue is excluded.
const (
	DisableAnnotation = "helm.toolkit.fluxcd.io/driftDetection"
	DisableValue      = "disabled"
)

// IgnoreRule is one entry of Flux's driftDetection.ignore[]: the JSON
// pointers to leave out of the comparison for the objects that Target
// selects (every object when Target is nil). The pointer "" ignores the
// whole object. The JSON tags are Flux's, so a HelmRelease's rules decode
// into this type directly.
type IgnoreRule struct {
	// Paths are RFC 6901 JSON pointers into the desired object; a list
	// index counts in the desired object's list, which Detect matches to
	// live elements by key where the list has one (containers by name).
	Paths []string `json:"paths"`
	// Target selects the objects the rule applies to; nil means all.
	Target *Selector `json:"target,omitempty"`
}

// Selector picks objects. Group, Version, Kind, Name and Namespace are
// regular expressions anchored at both ends ("Deploy" does not match
// "Deployment"); LabelSelector and AnnotationSelector use Kubernetes label
// selector syntax ("app=web,tier!=db"). Empty fields match everything.
type Selector struct {
	// Group, Version, Kind, Name and Namespace are anchored regexes.
	Group              string `json:"group,omitempty"`
	Version            string `json:"version,omitempty"`
	Kind               string `json:"kind,omitempty"`
	Name               string `json:"name,omitempty"`
	Namespace          string `json:"namespace,omitempty"`
	LabelSelector      string `json:"labelSelector,omitempty"`
	AnnotationSelector string `json:"annotationSelector,omitempty"`
}

// ManagerRule is Argo CD's ignore by field manager
// (ignoreDifferences[].managedFieldsManagers): a difference in a field that
// one of Managers owns in the live object's managedFields is not drift,
// for the objects Target selects (all when nil).
type ManagerRule struct {
	// Managers are field manager names as managedFields records them.
	Managers []string `json:"managedFieldsManagers"`
	// Target selects the objects the rule applies to; nil means all.
	Target *Selector `json:"target,omitempty"`
}

// Options are the settings of Compile besides the Flux ignore rules.
type Options struct {
	// Mode is Flux's driftDetection.mode; empty means ModeDisabled.
	Mode Mode
	// Managers are Argo-CD-style ignore-by-field-manager rules.
	Managers []ManagerRule
	// Extra, when set, selects live objects that belong to the release
	// (typically by its labels or annotations); those that no desired
	// object names are reported with StatusExtra.
	Extra *Selector
	// HelmRelease, when set, names the Helm release the desired objects
	// belong to. Detect and Compare then give each desired object the
	// ownership metadata Helm writes on every object it creates (label
	// app.kubernetes.io/managed-by: Helm, annotations
	// meta.helm.sh/release-name and meta.helm.sh/release-namespace), as
	// helm-controller's Diff does: a live object that lost or changed
	// them has drifted. Rule targets see the objects with it.
	HelmRelease *HelmRelease
	// FieldManager is the manager that applies the desired objects (and
	// writes corrections). A live field desired does not set is drift,
	// to be removed, when this manager's Apply entry alone owns it: a
	// server-side apply of desired would drop it, as Flux's dry-run
	// apply does. Fields it owns through Update operations (Helm's
	// create and patch) are never removed.
	FieldManager string
	// OverrideManagers are helm-controller's --override-manager: field
	// managers (e.g. "kubectl", "kubectl-edit") whose edits drift
	// detection overrides. A live field that desired does not set is
	// drift, to be removed, when one of these managers owns it and every
	// manager owning it is one of these or FieldManager. Without them, as
	// by default in Flux, such fields are another manager's business.
	OverrideManagers []string
	// Rationalize reports and patches, as helm-controller's
	// jsondiff.Rationalize(true) does, one replace of a map or list in
	// place of the changes below it when that replace is the shorter
	// JSON patch (a data map whose every key changed). Left false, each
	// changed field is its own change. Never at the object's root or at
	// metadata, nor at a map or list holding an ignored path, so that a
	// correction never touches what it must leave alone.
	Rationalize bool
}

// HelmRelease names a Helm release: its name and the namespace it was
// installed in.
type HelmRelease struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// Helm's ownership metadata, which Helm puts on every object it creates
// and checks before adopting one.
const (
	ManagedByLabel             = "app.kubernetes.io/managed-by"
	ManagedByHelm              = "Helm"
	ReleaseNameAnnotation      = "meta.helm.sh/release-name"
	ReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// Config is a compiled, validated drift configuration, safe for concurrent
// use by any number of Detect calls.
type Config struct {
	mode     Mode
	ignore   []compiledIgnore
	managers []compiledManager
	extra    *matcher
	helm     *HelmRelease
	owner    string
	override []string
	// rationalize is Options.Rationalize.
	rationalize bool
}

type compiledIgnore struct {
	name    string
	target  *matcher
	paths   []Pointer
	display string
	whole   bool
}

type compiledManager struct {
	name       string
	target     *matcher
	targetText string
	managers   []string
}

// Mode returns the configured mode (never empty).
func (c *Config) Mode() Mode { return c.mode }

// Compile validates the ignore rules and options and prepares them for
// Detect. Errors are *RuleError values naming the rule ("ignore[1]",
// "managers[0]", "extra", "mode"), the field and the bad value.
func Compile(rules []IgnoreRule, opts Options) (*Config, error) {
	c := &Config{mode: opts.Mode}
	switch opts.Mode {
	case "":
		c.mode = ModeDisabled
	case ModeEnabled, ModeWarn, ModeDisabled:
	default:
		return nil, &RuleError{Rule: "driftDetection", Field: "mode", Value: string(opts.Mode),
			Err: fmt.Errorf("%w: mode must be enabled, warn or disabled", ErrInvalidRule)}
	}
	for i, r := range rules {
		name := "ignore[" + strconv.Itoa(i) + "]"
		if len(r.Paths) == 0 {
			return nil, &RuleError{Rule: name, Field: "paths", Value: "",
				Err: fmt.Errorf("%w: a rule must list at least one path (\"\" ignores the whole object)", ErrInvalidRule)}
		}
		ci := compiledIgnore{name: name}
		for j, s := range r.Paths {
			p, err := ParsePointer(s)
			if err != nil {
				return nil, &RuleError{Rule: name, Field: "paths[" + strconv.Itoa(j) + "]", Value: s, Err: err}
			}
			if len(p) == 0 {
				ci.whole = true
			}
			ci.paths = append(ci.paths, p)
		}
		m, err := compileSelector(name, r.Target)
		if err != nil {
			return nil, err
		}
		ci.target = m
		ci.display = describeIgnore(r)
		c.ignore = append(c.ignore, ci)
	}
	for i, r := range opts.Managers {
		name := "managers[" + strconv.Itoa(i) + "]"
		if len(r.Managers) == 0 {
			return nil, &RuleError{Rule: name, Field: "managedFieldsManagers", Value: "",
				Err: fmt.Errorf("%w: list at least one field manager", ErrInvalidRule)}
		}
		for j, mgr := range r.Managers {
			if mgr == "" {
				return nil, &RuleError{Rule: name, Field: "managedFieldsManagers[" + strconv.Itoa(j) + "]", Value: mgr,
					Err: fmt.Errorf("%w: a field manager name must not be empty", ErrInvalidRule)}
			}
		}
		m, err := compileSelector(name, r.Target)
		if err != nil {
			return nil, err
		}
		c.managers = append(c.managers, compiledManager{name: name, target: m, targetText: r.Target.String(),
			managers: append([]string(nil), r.Managers...)})
	}
	if opts.HelmRelease != nil {
		if opts.HelmRelease.Name == "" {
			return nil, &RuleError{Rule: "helmRelease", Field: "name", Value: "",
				Err: fmt.Errorf("%w: the Helm release needs a name", ErrInvalidRule)}
		}
		h := *opts.HelmRelease
		c.helm = &h
	}
	for j, mgr := range opts.OverrideManagers {
		if mgr == "" {
			return nil, &RuleError{Rule: "overrideManagers", Field: "[" + strconv.Itoa(j) + "]", Value: mgr,
				Err: fmt.Errorf("%w: a field manager name must not be empty", ErrInvalidRule)}
		}
	}
	c.owner = opts.FieldManager
	c.rationalize = opts.Rationalize
	c.override = append([]string(nil), opts.OverrideManagers...)
	if opts.Extra != nil {
		m, err := compileSelector("extra", opts.Extra)
		if err != nil {
			return nil, err
		}
		c.extra = m
	}
	return c, nil
}

func describeIgnore(r IgnoreRule) string {
	s := fmt.Sprintf("%q", r.Paths)
	if r.Target != nil {
		s += " on " + r.Target.String()
	}
	return s
}

// String renders the set fields of the selector, e.g. "kind=Deployment name=web-.*".
func (s *Selector) String() string {
	if s == nil {
		return "all objects"
	}
	out := ""
	add := func(k, v string) {
		if v == "" {
			return
		}
		if out != "" {
			out += " "
		}
		out += k + "=" + v
	}
	add("group", s.Group)
	add("version", s.Version)
	add("kind", s.Kind)
	add("namespace", s.Namespace)
	add("name", s.Name)
	add("labelSelector", s.LabelSelector)
	add("annotationSelector", s.AnnotationSelector)
	if out == "" {
		return "all objects"
	}
	return out
}

// matcher is a compiled Selector. A nil matcher matches every object.
type matcher struct {
	group, version, kind, name, namespace *regexp.Regexp
	labels, annotations                   labels.Selector
}

func compileSelector(rule string, s *Selector) (*matcher, error) {
	if s == nil {
		return nil, nil
	}
	m := &matcher{}
	fields := []struct {
		field string
		expr  string
		dst   **regexp.Regexp
	}{
		{"target.group", s.Group, &m.group},
		{"target.version", s.Version, &m.version},
		{"target.kind", s.Kind, &m.kind},
		{"target.name", s.Name, &m.name},
		{"target.namespace", s.Namespace, &m.namespace},
	}
	for _, f := range fields {
		if f.expr == "" {
			continue
		}
		re, err := regexp.Compile("^(?:" + f.expr + ")$")
		if err != nil {
			return nil, &RuleError{Rule: rule, Field: f.field, Value: f.expr, Err: fmt.Errorf("%w: %v", ErrInvalidSelector, err)}
		}
		*f.dst = re
	}
	if s.LabelSelector != "" {
		sel, err := labels.Parse(s.LabelSelector)
		if err != nil {
			return nil, &RuleError{Rule: rule, Field: "target.labelSelector", Value: s.LabelSelector, Err: fmt.Errorf("%w: %v", ErrInvalidSelector, err)}
		}
		m.labels = sel
	}
	if s.AnnotationSelector != "" {
		sel, err := labels.Parse(s.AnnotationSelector)
		if err != nil {
			return nil, &RuleError{Rule: rule, Field: "target.annotationSelector", Value: s.AnnotationSelector, Err: fmt.Errorf("%w: %v", ErrInvalidSelector, err)}
		}
		m.annotations = sel
	}
	return m, nil
}

func (m *matcher) matches(ref ObjectRef, obj *unstructured.Unstructured) bool {
	if m == nil {
		return true
	}
	if m.group != nil && !m.group.MatchString(ref.Group) ||
		m.version != nil && !m.version.MatchString(ref.Version) ||
		m.kind != nil && !m.kind.MatchString(ref.Kind) ||
		m.name != nil && !m.name.MatchString(ref.Name) ||
		m.namespace != nil && !m.namespace.MatchString(ref.Namespace) {
		return false
	}
	if m.labels != nil && !m.labels.Matches(labels.Set(stringMap(obj.Object, "labels"))) {
		return false
	}
	if m.annotations != nil && !m.annotations.Matches(labels.Set(stringMap(obj.Object, "annotations"))) {
		return false
	}
	return true
}

// stringMap reads metadata.<field> as a string map without copying when it
// can; values that are not strings are skipped.
func stringMap(obj map[string]any, field string) map[string]string {
	md, _ := obj["metadata"].(map[string]any)
	raw, _ := md[field].(map[string]any)
	if len(raw) == 0 {
		return nil
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// optedOut reports whether the object carries Flux's opt-out label or
// annotation.
func optedOut(obj map[string]any) bool {
	md, _ := obj["metadata"].(map[string]any)
	for _, field := range [...]string{"annotations", "labels"} {
		m, _ := md[field].(map[string]any)
		if v, ok := m[DisableAnnotation].(string); ok && v == DisableValue {
			return true
		}
	}
	return false
}
