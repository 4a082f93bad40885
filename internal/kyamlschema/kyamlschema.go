package kyamlschema

import (
	"sync"

	"sigs.k8s.io/kustomize/kyaml/openapi"
)

// once is process-wide because the schema it guards is.
var once sync.Once

// Init parses kyaml's built-in OpenAPI schema unless an earlier call did.
// Call it before every kustomize run that may overlap another.
func Init() {
	once.Do(func() { openapi.Schema() })
}
