// Package kustomize reads a fleet kept as Kustomize overlays, the layout
// Flux's examples recommend (clusters/<env>, infrastructure/base/<tool>,
// infrastructure/<env>/<tool> patching the base's HelmRelease, values
// from generated ConfigMaps), into helmfleet's objects.
//
// Build runs kustomize itself (sigs.k8s.io/kustomize/api's krusty, as
// `kustomize build` does: resources, bases, components, strategic-merge
// and JSON 6902 patches, namespace, labels and commonLabels, ConfigMap
// and Secret generators, replacements, images, …) over a directory of an
// fs.FS, then decodes HelmReleases, Flux Kustomizations, Flux sources and
// Karmada policies with release.Load (strict, defaulted, validated) and
// keeps every other object (CRDs, Namespaces, NetworkPolicies,
// ConfigMaps) as unstructured, in kustomize's output order. Flux
// Kustomization objects are returned, not followed: build each of their
// paths with its own call.
//
// # Nothing remote, nothing executed
//
// Before kustomize runs, Build reads the tree itself, entry by entry, and
// refuses remote bases and files (git URLs, http files: nothing is
// fetched), paths and symbolic links that leave the fs.FS, cycles, inputs
// over the limits of Options, YAML whose aliases, in any document of a
// file, expand it to more than 4 times its written nodes plus 10000
// (kustomize would expand them without limit), files that are not
// regular files (FIFOs, devices), Helm chart inflation (it runs the helm
// program), plugins other than kustomize's builtins (exec, Go and KRM
// function plugins) and openapi (process-wide state in kustomize). Each
// refusal is an *EntryError naming the kustomization file and the entry,
// e.g.
//
//	infrastructure/dev/kustomization.yaml: resources[2] "../missing": file does not exist
//
// kustomize then runs, with plugins and Helm disabled, over a read-only
// filesys.FileSystem that holds exactly the files the walk read and
// checked (writes fail). The walk reads every file kustomize will need
// anyway, so this costs nothing over a lazy adapter from fs.FS to kyaml's
// filesys.FileSystem, and it is safer: kustomize can reach no file the
// walk did not check, whatever the fs.FS would follow. It is not kyaml's
// filesys.MakeFsInMemory, which would cost a copy and refuses file names
// outside [a-zA-Z0-9-_.:] ("app@v1", "values prod.yaml"). Measured on a
// repository of seven kustomizations in Flux's recommended layout: the walk
// allocates 345 KB, indexing its files 9 KB more, copying them into
// MakeFsInMemory 25 KB; a whole Build allocates 9.0 MB in 14.3 ms
// against krusty's 7.0 MB in 11.0 ms over the same tree in memory (the
// difference is the walk and decoding the objects; 9.7 MB since the
// clusters' Flux Kustomizations are decoded too).
//
// # Files on disk
//
// What Build guarantees about the files it reads depends on the fs.FS:
//
//   - A Dir (DirFS) or an os.DirFS: every file is looked up and opened
//     through an os.Root at the directory, so no symbolic link leads out
//     of it, not even one swapped in between Build's checks of a file and
//     its read; each file is opened without blocking and read only if
//     what was opened is a regular file, so a FIFO or device swapped in
//     is refused (ErrNotRegular) rather than read or waited on. Build
//     upgrades an os.DirFS this way itself, opening a root for the
//     duration of the call; DirFS keeps one open across calls.
//   - Any other fs.FS (fstest.MapFS, embed.FS, an unpacked archive in
//     memory): files are opened by name, as the fs.FS resolves it, and
//     refused unless the fs.FS says they are regular files. Such a file
//     system cannot swap a link in behind Build's back unless it is
//     itself backed by a directory someone else writes to; wrap such a
//     directory with DirFS instead.
//
// # Errors
//
// kustomize's own errors (a strategic-merge patch of an object that does
// not exist, conflicting generators) are a *BuildError. kustomize quotes
// the nodes it fails on, so when the tree holds Secret data (values a
// secretGenerator reads, or a file with a Secret object) its error is
// replaced by a *release.WithheldError naming the directory, and its
// text is not shown. An object that release.Load rejects is a Problem of a
// *DecodeError that names the file the object came from, the object and
// the field path. The file comes from kustomize's origin annotations:
// Build asks for them (and removes them again unless the kustomization
// asked too) when Options.Origins is set, and otherwise builds a second
// time to find them only when an object fails.
//
// # Fidelity
//
// Build's output is checked against krusty's own Run over the same tree
// on disk (filesys.MakeFsOnDisk): the same objects in the same order,
// for every kustomization of testdata/fleet, from os.DirFS and
// fstest.MapFS, under each reordering and load restriction and with
// origins tracked, and for small trees of the fields the fleet does not
// use (deprecated patch fields, replacements, images, replicas,
// sortOptions, generator options, the kustomization's own
// originAnnotations). Known
// differences: symbolic links inside the fs.FS are transparent (paths
// stay logical, as in fs.FS, where kustomize on disk resolves a linked
// directory before reading "../" from it); kustomize prints deprecation
// warnings to standard error itself, which Build cannot prevent (they are
// also in Result.Warnings); and, as in kustomize, a patch whose target
// selector matches nothing does nothing, silently.
//
// # Flux Kustomizations on one cluster
//
// A Reconciler runs release.Kustomization objects (Flux's
// kustomize.toolkit.fluxcd.io/v1) the way Flux's kustomize-controller
// does, against a release.ObjectClient (release/memory, release/kube):
//
//   - Build reads the source tree that ReconcilerConfig.Sources gives for
//     spec.sourceRef, at spec.path, generating a kustomization.yaml where
//     there is none; sets spec.targetNamespace, namePrefix and
//     nameSuffix on the top kustomization (replacing its own), adds
//     spec.patches, images and components (ignoreMissingComponents
//     drops absent ones), as Flux's generator does (fluxcd/pkg
//     kustomize); builds it with Build (so nothing remote, nothing
//     executed, and the same errors naming files and entries); and
//     substitutes spec.postBuild variables in every object before it is
//     decoded: substituteFrom ConfigMaps and Secrets in order, a later
//     one overriding, substitute over all, ${var:=default} and bash
//     string functions, $${var} for a literal, objects labelled or
//     annotated kustomize.toolkit.fluxcd.io/substitute: disabled left
//     alone, and a variable without value or default an error naming
//     the Kustomization, the file, the object and the variable (Flux's
//     StrictPostBuildSubstitutions, on by default since v1.9;
//     ReconcilerConfig.LenientSubstitution turns it off). As in Flux, a
//     kustomization may read any file of the source (LoadRestrictionsNone)
//     and objects keep the order of its entries.
//   - Plan compares each object with the cluster by a server-side
//     dry-run apply and lists what prune would delete, writing nothing;
//     Secret data and values that came from Secrets are masked (see
//     "Secret values" below).
//   - Reconcile applies server-side in Flux's stages (CRDs, Namespaces
//     and ClusterRoles, waited for; then *Class kinds; then the rest),
//     labels every object with its Kustomization, keeps the inventory
//     in status.inventory with Flux's ids, prunes what left it
//     (spec.prune), waits with kstatus, or with the CEL expressions of
//     spec.healthCheckExprs for the groups and kinds they name
//     (spec.wait, spec.healthChecks; not for what
//     ReconcilerConfig.Exclude left out, which is not on the cluster:
//     whoever runs it checks its health) and sets Flux's conditions
//     Ready, Reconciling, Stalled, Healthy.
//   - Delete deletes the inventory per spec.deletionPolicy.
//
// # Secret values
//
// Values of spec.postBuild.substituteFrom Secrets never show in what a
// Reconciler returns: plans, errors, conditions. They are masked in the
// object tree, before anything is written out as text, so no YAML
// quoting, escaping or line folding and no slice of a value
// (${VAR:9:10}) escapes it. What is applied keeps the real values.
//
// Which parts of an object came from a Secret is found by substituting
// the object twice more, each time with a distinct placeholder for every
// variable read from a Secret (two sets that differ in length, case and
// first letter): every scalar, map key, list element or whole subtree
// that differs between the real result and either placeholder result,
// by value, type or shape, came from a Secret. A plan's diff then shows,
// on both sides:
//
//   - (secret value) where such a value is the same live and as it
//     would be applied, or exists on one side only;
//   - (secret value, old) and (secret value, new) where it differs, as
//     after the Secret was rotated: the live side is masked at the same
//     places as the built side (a list element that has a name field is
//     found by its name), so the old value does not show either;
//   - (secret key N) for a map key that came from a Secret, with its
//     value masked; on the live side every key of that map that the
//     build does not write from literal text is masked the same way, the
//     same N for the same key on both sides;
//   - every value of a Secret object's data and stringData masked as
//     above, and kubectl's last-applied-configuration annotation of a
//     masked object;
//   - any other scalar, on either side, whose text equals a Secret
//     variable's value or a masked value (a value the manifest has moved
//     since the last apply).
//
// A Kustomization the build produces whose spec.postBuild.substitute
// got a Secret's value (a parent passing a cluster's variables on to its
// children) carries SecretSubstitutesAnnotation naming those variables,
// and its own plans mask them as a Secret's. A HelmRelease the build
// produces that holds values substituted from a Secret carries
// release.SecretFieldsAnnotation: a JSON array of JSON pointers into the
// HelmRelease ("/spec/values/db/password", "/spec/chart/spec/version"),
// paths only, never values. A pointer names the map, not the key, where
// a map key came from a Secret; what the source's own annotation lists
// stays listed, so the annotation only ever adds marking. The release
// engine treats the inline values at those pointers as a valuesFrom
// Secret's: the HelmRelease's plans, diffs and printed or encoded values
// mask them, and Helm's error text for the release is withheld. A field
// outside spec.values (a chart version, a valuesFrom name) withholds
// Helm's errors too, but plans show it as it is, as they show object
// identities; so do they show map keys under spec.values that came from
// a Secret (keep secrets out of keys).
//
// No hash of a value is shown: a short secret's hash is found by trying
// every value. A live value that came from a Secret at a place the build
// no longer substitutes, and that equals none of the current values (the
// manifest moved it and the Secret was rotated since), is shown.
// Object identities (kind, namespace, name) are shown as they are, even
// when substituted from a Secret: they name the object in the plan, the
// inventory and errors.
//
// Errors whose text may quote a Secret's value are replaced by a
// *release.WithheldError that names the Kustomization, the step and the
// file or object, and nothing of the text: a substituted object that no
// longer reads as YAML or as an object (a *SubstituteError problem);
// release.Load's error about a decoded object (a HelmRelease, a
// Kustomization, a source, a policy) that holds substituted Secret
// values; the cluster refusing, in a dry run or an apply, an object that
// holds them or is a Secret; and, for those objects, the status message
// of a failed health check is replaced by a note. Errors that cannot
// contain a substituted value keep their text: an unset variable (it
// names the variable), an expression that does not parse (substitution
// is one pass over the source text), a missing source or path, the
// errors of the tree walk and of kustomize itself (kustomize runs before
// substitution; its errors are withheld when the tree holds Secret data,
// see Errors).
//
// ReconcilerConfig.Exclude (FleetUnit) keeps HelmReleases, Flux
// Kustomizations and sources and Karmada policies out of what is
// applied, for a fleet that runs them as units of its own.
//
// Over the same seven kustomizations: Build allocates 9.7 MB, a
// Reconciler's build of the same directories 11.0 MB (the objects also
// as unstructured, Result.Manifests), 14.1 MB with targetNamespace,
// namePrefix and an image set, 15.3 MB with postBuild substitution.
//
// # Running tenants
//
// A platform that runs the Kustomizations of several tenants, each in a
// namespace of its own, turns on ReconcilerConfig.NoCrossNamespaceRefs
// (off by default, as Flux's --no-cross-namespace-refs is). A
// Kustomization whose spec.sourceRef or spec.dependsOn names another
// namespace is then refused with a *release.AccessDeniedError naming the
// Kustomization, the field path and the other namespace, before its
// source is read: Build and Plan return it, and Reconcile records Ready
// False and Stalled, reason AccessDenied, and applies nothing, until the
// spec changes. dependsOn is refused too, where Flux refuses only the
// source, so that nothing about another tenant's units (whether they
// exist, whether they are ready) shows in a tenant's status. A reference
// in the Kustomization's own namespace, spelled out or left empty, is
// allowed. spec.postBuild.substituteFrom and spec.kubeConfig cannot name
// a namespace. spec.targetNamespace, the namespaces of the built objects
// and spec.healthChecks are not references and are not refused. What
// guards them is the identity the objects are applied with: Plan,
// Reconcile and Delete act as spec.serviceAccountName, or
// ReconcilerConfig.DefaultServiceAccount when it names none (Flux's
// --default-service-account), a service account of the Kustomization's
// namespace, through the cluster's release.Impersonator role
// (release/kube and release/memory have it); a cluster client without
// the role fails the Kustomization (Ready False, ReconciliationFailed)
// rather than applying with its own credentials. substituteFrom is read
// with the caller's client, as Flux's controller reads it with its own.
// A platform running tenants sets DefaultServiceAccount too.
package kustomize
