package reconcile

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	helmrelease "helm.sh/helm/v3/pkg/release"

	"github.com/helmfleet/helmfleet/drift"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
	"github.com/helmfleet/helmfleet/values"
)

// MaskedObjects returns copies of p.Objects as they may be shown to
// people: the data and stringData of every Secret replaced by digests,
// and every value that came from a Secret through valuesFrom (and the
// common forms a chart gives it: upper case, quoted, base64) replaced by
// "(secret sha256:<12 hex>)" wherever it was rendered. p.Objects, which
// are what is applied, are not changed.
func (p Plan) MaskedObjects() []map[string]any {
	if len(p.Objects) == 0 {
		return nil
	}
	mask := newSecretMask(p.Values)
	out := make([]map[string]any, len(p.Objects))
	for i, o := range p.Objects {
		out[i] = mask.object(maskSecret(o), map[string]bool{}, nil).Object
	}
	return out
}

// releasePlanJSON is how a Plan encodes: its fields, with the
// objects masked (MaskedObjects) and the error as its text.
type releasePlanJSON struct {
	Cluster          string
	Release          *release.Release
	State            State
	Reason           string
	Action           Action
	Chart, Version   string
	Verified         *source.Verified `json:",omitempty"`
	Revision         int
	KubeVersion      string
	CapabilitiesFrom string
	Values           *values.Result
	Objects          []map[string]any
	Diff             string
	Err              string   `json:",omitempty"`
	Warnings         []string `json:",omitempty"`
}

// MarshalJSON encodes the plan with its objects masked (MaskedObjects),
// its values redacted (values.Result) and its error as text, so that a
// plan in a JSON (or sigs.k8s.io/yaml) document shows no Secret data.
func (p Plan) MarshalJSON() ([]byte, error) {
	j := releasePlanJSON{Cluster: p.Cluster, Release: shown(p.Release), State: p.State, Reason: p.Reason, Action: p.Action,
		Chart: p.Chart, Version: p.Version, Verified: p.Verified, Revision: p.Revision, KubeVersion: p.KubeVersion,
		CapabilitiesFrom: p.CapabilitiesFrom, Values: p.Values, Objects: p.MaskedObjects(), Diff: p.Diff, Warnings: p.Warnings}
	if p.Err != nil {
		j.Err = p.Err.Error()
	}
	return json.Marshal(j)
}

// String summarizes the plan on one line: the release and cluster, the
// state, the action, the chart, the objects by kind, namespace and name,
// and the error. It shows no object contents and no values.
func (p Plan) String() string {
	var b strings.Builder
	if p.Release != nil {
		fmt.Fprintf(&b, "release %s", refOf(p.Release))
	} else {
		b.WriteString("release")
	}
	fmt.Fprintf(&b, " on cluster %s: %s", p.Cluster, p.Action)
	if p.State != "" {
		fmt.Fprintf(&b, " (state %s", p.State)
		if p.Reason != "" {
			fmt.Fprintf(&b, ": %s", p.Reason)
		}
		b.WriteString(")")
	} else if p.Reason != "" {
		fmt.Fprintf(&b, " (%s)", p.Reason)
	}
	if p.Chart != "" {
		fmt.Fprintf(&b, ", chart %s %s", p.Chart, p.Version)
	}
	if len(p.Objects) > 0 {
		names := make([]string, len(p.Objects))
		for i, o := range p.Objects {
			names[i] = objectKey(o)
		}
		fmt.Fprintf(&b, ", objects [%s]", strings.Join(names, " "))
	}
	if p.Err != nil {
		fmt.Fprintf(&b, ", error: %v", p.Err)
	}
	return b.String()
}

// Format makes every fmt verb (%v, %+v, %#v, %s, %q) print String, so a
// plan never shows its objects' contents through fmt.
func (p Plan) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", p.String())
		return
	}
	_, _ = f.Write([]byte(p.String()))
}

// helmRecordJSON is what a Result shows of Helm's release record: its
// name, revision, status and chart, never its values or manifest.
type helmRecordJSON struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   int    `json:"version"`
	Status    string `json:"status,omitempty"`
	Chart     string `json:"chart,omitempty"`
}

// resultJSON is how a Result encodes.
type resultJSON struct {
	Actions      []Action
	Action       Action // Result.Last()
	State        State
	Next         Next
	RequeueAfter time.Duration
	Unlocked     bool
	Helm         *helmRecordJSON
	Values       *values.Result
	Drift        *drift.Report
	Status       release.Status
	Warnings     []string `json:",omitempty"`
}

func helmRecordOf(h *helmrelease.Release) *helmRecordJSON {
	if h == nil {
		return nil
	}
	out := &helmRecordJSON{Name: h.Name, Namespace: h.Namespace, Version: h.Version}
	if h.Info != nil {
		out.Status = h.Info.Status.String()
	}
	if h.Chart != nil && h.Chart.Metadata != nil {
		out.Chart = h.Chart.Metadata.Name + "@" + h.Chart.Metadata.Version
	}
	return out
}

// MarshalJSON encodes the result with Helm's release record cut to its
// name, revision, status and chart (the record holds the values and the
// rendered manifest in the clear) and the values redacted.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{Actions: r.Actions, Action: r.Last(), State: r.State, Next: r.Next, RequeueAfter: r.RequeueAfter,
		Unlocked: r.Unlocked, Helm: helmRecordOf(r.Helm), Values: r.Values, Drift: r.Drift, Status: r.Status, Warnings: r.Warnings})
}

// String summarizes the result on one line: the actions, the state,
// what to do next and the Helm revision. It shows no values and no
// manifest.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "actions %v, state %s, next %s", r.Actions, r.State, r.Next)
	if r.RequeueAfter > 0 {
		fmt.Fprintf(&b, " after %s", r.RequeueAfter)
	}
	if h := helmRecordOf(r.Helm); h != nil {
		fmt.Fprintf(&b, ", helm %s/%s.v%d %s", h.Namespace, h.Name, h.Version, h.Status)
	}
	if c := r.Status.GetCondition(release.ConditionReady); c != nil {
		fmt.Fprintf(&b, ", ready %s %s: %s", c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// Format makes every fmt verb print String: Helm's release record in a
// Result holds the values and the rendered manifest in the clear.
func (r Result) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", r.String())
		return
	}
	_, _ = f.Write([]byte(r.String()))
}
