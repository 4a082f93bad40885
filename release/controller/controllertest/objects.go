package controllertest

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Objects decodes YAML documents (HelmReleases, ConfigMaps, Karmada
// policies, …) into objects for NewEnv, NewFleetEnv or Client.Create.
// The error names the document that does not decode.
func Objects(yaml string) ([]client.Object, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(yaml)), 4096)
	var out []client.Object
	for i := 0; ; i++ {
		u := &unstructured.Unstructured{}
		err := d.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("controllertest: document %d: %w", i, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("controllertest: document %d (%s): apiVersion and kind are required", i, u.GetName())
		}
		out = append(out, u)
	}
}
