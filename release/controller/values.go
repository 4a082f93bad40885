package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/helmfleet/helmfleet/source"
	"github.com/helmfleet/helmfleet/values"
)

// ValuesReader is a values.Reader over a controller-runtime client: it
// reads the ConfigMaps (.data) and Secrets (.data, decoded bytes) of a
// HelmRelease's spec.valuesFrom. A missing object is an error matching
// values.ErrNotFound. Errors name the object and never quote its data.
//
// Give it the manager's API reader (mgr.GetAPIReader()) so Secrets are
// read on demand and not all cached in the controller's memory, as Flux's
// helm-controller does; the watches that trigger reconciles only cache
// metadata.
type ValuesReader struct {
	// Reader reads ConfigMaps and Secrets.
	Reader client.Reader
}

var (
	_ values.Reader       = ValuesReader{}
	_ source.SecretReader = ValuesReader{}
)

// SecretData returns the data of the Secret namespace/name: the trusted
// keys that a source's spec.verify.secretRef names. It makes a
// ValuesReader the source.OCIOptions.Secrets of a resolver, so charts
// that ask for signature verification can be verified (without one they
// are refused).
func (r ValuesReader) SecretData(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	return r.Read(ctx, values.KindSecret, namespace, name)
}

// Read returns the data of the ConfigMap or Secret namespace/name.
func (r ValuesReader) Read(ctx context.Context, kind values.Kind, namespace, name string) (map[string][]byte, error) {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	switch kind {
	case values.KindConfigMap:
		var cm corev1.ConfigMap
		if err := r.Reader.Get(ctx, key, &cm); err != nil {
			return nil, readError(kind, key, err)
		}
		out := make(map[string][]byte, len(cm.Data))
		for k, v := range cm.Data {
			out[k] = []byte(v)
		}
		return out, nil
	case values.KindSecret:
		var s corev1.Secret
		if err := r.Reader.Get(ctx, key, &s); err != nil {
			return nil, readError(kind, key, err)
		}
		out := make(map[string][]byte, len(s.Data))
		for k, v := range s.Data {
			out[k] = v
		}
		return out, nil
	default:
		return nil, fmt.Errorf("read values from %s %s: kind must be %s or %s", kind, key, values.KindConfigMap, values.KindSecret)
	}
}

// readError wraps a client error; API errors carry the object's name and
// the server's reason, never the object's data.
func readError(kind values.Kind, key client.ObjectKey, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s: %w", kind, key, values.ErrNotFound)
	}
	return fmt.Errorf("read %s %s: %w", kind, key, err)
}
