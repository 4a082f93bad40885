// Package kyamlschema loads kustomize's built-in OpenAPI schema once per
// process, before kustomize runs on several goroutines.
//
// kyaml (sigs.k8s.io/kustomize/kyaml/openapi) parses its built-in schema
// lazily into package state on first use, and openapi.IsNamespaceScoped
// reads part of that state without the lock the parse holds. Two kustomize
// runs that start together, one resolving a strategic merge patch (which
// parses the schema) and one setting the namespace of a kind the schema
// does not know (which reads it), race on it: go test -race found it in a
// fleet plan that builds Kustomizations for several members at once.
// Init parses the schema first; after it, kustomize only reads that state,
// because helmfleet refuses a kustomization's openapi field, the one
// input that would make kustomize parse a schema again. A program that
// itself calls openapi.SetSchema or openapi.ResetOpenAPI while helmfleet
// builds steps outside this guarantee.
package kyamlschema
