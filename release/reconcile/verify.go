package reconcile

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
)

// markSourceVerified records the outcome of the verification of the
// chart prepare fetched: True with the signer, False with the refusal
// (nothing is installed then), removed when no verification was asked for
// and the chart was fetched.
func (ru *run) markSourceVerified(d *desired, err error) {
	switch {
	case err != nil && errors.Is(err, source.ErrUnverified):
		ru.setCondition(release.ConditionSourceVerified, metav1.ConditionFalse, release.ReasonVerificationError, err.Error())
	case err != nil:
		// Not fetched: the last verification outcome stands.
	case d.chart.Verified != nil:
		ru.setCondition(release.ConditionSourceVerified, metav1.ConditionTrue, release.ReasonVerificationSucceeded, verifiedMessage(d.chart))
	default:
		ru.rel.Status.RemoveCondition(release.ConditionSourceVerified)
	}
}

// markSourceWarnings adds the chart's warnings to the Result's and sets
// the SourceWarnings condition to them, one a line, or removes it when the
// chart came without any. When the chart was not fetched (err), the last
// condition stands, as for SourceVerified.
func (ru *run) markSourceWarnings(d *desired, err error) {
	switch {
	case err != nil:
	case len(d.chart.Warnings) == 0:
		ru.rel.Status.RemoveCondition(release.ConditionSourceWarnings)
	default:
		for _, w := range d.chart.Warnings {
			ru.warn(w)
		}
		ru.setCondition(release.ConditionSourceWarnings, metav1.ConditionTrue, release.ReasonAcceptedWithWarnings, strings.Join(d.chart.Warnings, "\n"))
	}
}

// verifiedMessage says what verified a chart: the version, the digest
// and the signer.
func verifiedMessage(ch *Chart) string {
	v := ch.Verified
	return fmt.Sprintf("verified %s signature of version %s (%s) by %s", v.Provider, ch.Chart.Metadata.Version, v.Digest, v.Signer)
}

// checkVerified refuses a chart returned unverified for a Release whose
// chart.spec asks for verification: a ChartGetter other than Charts, or
// one over a resolver that does not verify, would otherwise install it
// unchecked. (A chartRef's source objects are the ChartGetter's to read.)
func checkVerified(rel *release.Release, ch *Chart) error {
	if rel.Spec.Chart == nil || rel.Spec.Chart.Spec.Verify == nil || ch.Verified != nil {
		return nil
	}
	return &source.VerifyError{Object: release.Kind + " " + refOf(rel), Field: "spec.chart.spec.verify", Digest: ch.Digest,
		Reason: "the chart getter returned the chart without verifying it (use Charts over a source.OCIResolver with OCIOptions.Secrets): refusing rather than installing it unverified"}
}
