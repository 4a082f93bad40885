// Package strictyaml decodes Kubernetes-style YAML streams into Go types
// strictly: every unknown field and every value of the wrong type is
// reported with its field path, all at once, instead of the first one only
// (sigs.k8s.io/yaml.UnmarshalStrict) or none at all (encoding/json).
//
// A stream is split into documents with Split, each document is turned
// into JSON with ToJSON (YAML syntax errors and duplicate keys carry the
// line of the stream), and Unmarshal checks the JSON against the target
// type before decoding it. Unmarshal walks the Go type by its json tags,
// inlining embedded structs as encoding/json does; types that decode
// themselves (json.Unmarshaler, encoding.TextUnmarshaler, such as
// metav1.Duration and metav1.Time) are leaves whose own errors are
// reported at their path.
package strictyaml
