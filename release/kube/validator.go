package kube

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/openapi/cached"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/validation"
)

// validatorFactory is the kubectl factory Helm's kube client builds
// objects with, but its Validator shares one answer per kind, for the
// Cluster's life, to "does the server validate fields itself?".
//
// kubectl's Validator makes a new verifier on every call, and Helm calls
// it on every Build (each install, upgrade and hook): the verifier parses
// the OpenAPI v3 document of each group version the manifest uses to find
// the fieldValidation parameter. On a local API server that parse was
// three quarters of a controller's CPU installing ten-object releases.
// The validation itself is unchanged: the same schema, the same verifier
// chain (OpenAPI v3, then v2), the same directive.
type validatorFactory struct {
	cmdutil.Factory
	verifier *sharedVerifier
}

// newValidatorFactory returns the factory of getter with a verifier kept
// in shared (built on first use).
func newValidatorFactory(getter genericclioptions.RESTClientGetter, shared *sharedVerifier) *validatorFactory {
	return &validatorFactory{Factory: cmdutil.NewFactory(getter), verifier: shared}
}

// Validator returns kubectl's validating schema for directive with the
// shared field-validation verifier.
func (f *validatorFactory) Validator(directive string) (validation.Schema, error) {
	if directive == metav1.FieldValidationIgnore {
		return validation.NullSchema{}, nil
	}
	v, err := f.verifier.get(f.Factory)
	if err != nil {
		return nil, err
	}
	schema := validation.ConjunctiveSchema{validation.NewSchemaValidation(f.Factory), validation.NoDoubleKeySchema{}}
	return validation.NewParamVerifyingSchema(schema, v, directive), nil
}

// sharedVerifier builds the fieldValidation verifier once and remembers
// its definite answers per kind: supported, or not (ParamUnsupported).
// Other errors (the kind not served yet, a failed request) are not
// remembered, so a CRD installed later is asked about again.
type sharedVerifier struct {
	once sync.Once
	next resource.Verifier
	err  error

	mu    sync.RWMutex
	known map[schema.GroupVersionKind]error
}

func newSharedVerifier() *sharedVerifier {
	return &sharedVerifier{known: map[schema.GroupVersionKind]error{}}
}

func (s *sharedVerifier) get(f cmdutil.Factory) (resource.Verifier, error) {
	s.once.Do(func() {
		dyn, err := f.DynamicClient()
		if err != nil {
			s.err = err
			return
		}
		dc, err := f.ToDiscoveryClient()
		if err != nil {
			s.err = err
			return
		}
		primary := resource.NewQueryParamVerifierV3(dyn, cached.NewClient(dc.OpenAPIV3()), resource.QueryParamFieldValidation)
		secondary := resource.NewQueryParamVerifier(dyn, dc, resource.QueryParamFieldValidation)
		s.next = resource.NewFallbackQueryParamVerifier(primary, secondary)
	})
	if s.err != nil {
		return nil, s.err
	}
	return s, nil
}

// HasSupport implements resource.Verifier.
func (s *sharedVerifier) HasSupport(gvk schema.GroupVersionKind) error {
	s.mu.RLock()
	err, ok := s.known[gvk]
	s.mu.RUnlock()
	if ok {
		return err
	}
	err = s.next.HasSupport(gvk)
	if err == nil || resource.IsParamUnsupportedError(err) {
		s.mu.Lock()
		s.known[gvk] = err
		s.mu.Unlock()
	}
	return err
}
