package postrender

import (
	"encoding/base64"
	"errors"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// Kustomize's errors quote the YAML node they trip on. So far that is
// always the patch's side, but an error must never carry a Secret's value
// into a status, event or log, so the errors of a run are scrubbed of the
// values of the Secrets in its input before they are returned.

// minMasked is the length under which a value is not masked: masking "1"
// or "true" everywhere would garble messages and protect nothing.
const minMasked = 4

// mask is what a masked value becomes.
const mask = "***"

// secretValues returns the data and stringData values (and the decoded data
// values) of the Secrets in manifests, longest first.
func secretValues(manifests []byte) []string {
	if !strings.Contains(string(manifests), "Secret") {
		return nil
	}
	var out []string
	for _, doc := range releaseutil.SplitManifests(string(manifests)) {
		var s struct {
			Kind       string            `json:"kind"`
			Data       map[string]string `json:"data"`
			StringData map[string]string `json:"stringData"`
		}
		if yaml.Unmarshal([]byte(doc), &s) != nil || s.Kind != "Secret" {
			continue
		}
		for _, v := range s.Data {
			out = append(out, v)
			if d, err := base64.StdEncoding.DecodeString(v); err == nil {
				out = append(out, string(d))
			}
		}
		for _, v := range s.StringData {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// maskSecrets returns err, or an error with the same message minus the
// Secret values of manifests when it contains any. The masked error does
// not unwrap to err, which would give the values back.
func maskSecrets(manifests []byte, err error) error {
	msg := err.Error()
	masked := msg
	for _, v := range secretValues(manifests) {
		if len(v) >= minMasked {
			masked = strings.ReplaceAll(masked, v, mask)
		}
	}
	if masked == msg {
		return err
	}
	return errors.New(masked)
}
