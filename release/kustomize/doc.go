// Package kustomize reads a fleet kept as Kustomize overlays, the layout
// Flux's examples recommend (clusters/<env>, infrastructure/base/<tool>,
// infrastructure/<env>/<tool> patching the base's HelmRelease, values
// from generated ConfigMaps), into helmfleet's objects.
//
// Build runs kustomize itself (sigs.k8s.io/kustomize/api's krusty, as
// `kustomize build` does: resources, bases, components, strategic-merge
// and JSON 6902 patches, namespace, labels and commonLabels, ConfigMap
// and Secret generators, replacements, images, …) over a directory of an
// fs.FS, then decodes HelmReleases, Flux sources and Karmada policies with
// release.Load (strict, defaulted, validated) and keeps every other object
// (CRDs, Namespaces, NetworkPolicies, ConfigMaps, Flux Kustomizations) as
// unstructured, in kustomize's output order. Flux Kustomization objects
// are returned, not followed: build each of their paths with its own
// call.
//
// # Nothing remote, nothing executed
//
// Before kustomize runs, Build reads the tree itself, entry by entry, and
// refuses remote bases and files (git URLs, http files: nothing is
// fetched), paths and symbolic links that leave the fs.FS, cycles, inputs
// over the limits of Options, Helm chart inflation (it runs the helm
// program), plugins other than kustomize's builtins (exec, Go and KRM
// function plugins) and openapi (process-wide state in kustomize). Each
// refusal is an *EntryError naming the kustomization file and the entry,
// e.g.
//
//	infrastructure/dev/kustomization.yaml: resources[2] "../missing": file does not exist
//
// kustomize then runs over an in-memory copy (kyaml's
// filesys.MakeFsInMemory) of exactly the files the walk read, with
// plugins and Helm disabled. The copy, rather than an adapter from fs.FS
// to kyaml's filesys.FileSystem, is deliberate: kustomize can reach no
// file the walk did not check, whatever the fs.FS would follow, and it
// costs little next to the build: for the seven kustomizations of
// testdata/fleet, the copy adds 25 KB of allocation to a walk of 345 KB
// (BenchmarkWalkCopy), against 9.0 MB for the whole Build and 7.0 MB for
// krusty alone over the same tree in memory (BenchmarkBuild). An adapter
// would save at most the 25 KB and would still need the walk.
//
// # Errors
//
// kustomize's own errors (a strategic-merge patch of an object that does
// not exist, conflicting generators) are a *BuildError, with every value a
// secretGenerator reads (literals, files, env files, and their base64)
// masked. An object that release.Load rejects is a Problem of a
// *DecodeError that names the file the object came from (kustomize's
// origin annotations, asked for by Build and removed again unless the
// kustomization asked for them too), the object and the field path.
//
// # Fidelity
//
// Build's output is checked against krusty's own Run over the same tree
// on disk (filesys.MakeFsOnDisk): the same objects in the same order,
// for every kustomization of testdata/fleet, from os.DirFS and
// fstest.MapFS, under each reordering and load restriction. Known
// differences: symbolic links inside the fs.FS are transparent (paths
// stay logical, as in fs.FS, where kustomize on disk resolves a linked
// directory before reading "../" from it); kustomize prints deprecation
// warnings to standard error itself, which Build cannot prevent (they are
// also in Result.Warnings); and, as in kustomize, a patch whose target
// selector matches nothing does nothing, silently.
package kustomize
