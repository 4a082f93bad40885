// Package source turns a chart reference into a loaded, verified Helm
// chart, the way Flux's source-controller does, as a library.
//
// # Resolving a chart
//
// A Ref names a chart and its source: a Flux HelmRepository (an HTTP(S)
// index or an OCI registry), an OCIRepository, a HelmChart with its
// repository, or a local Path. A Resolver returns a *Chart: the chart as
// Helm's loader loaded it, the selected version, the artifact digest, where
// it came from, and the chart's valuesFiles in order.
//
//	r := source.Composite{
//		HTTP:  source.NewHTTPResolver(httpClient, source.HTTPOptions{}),
//		OCI:   source.NewOCIResolver(source.OCIOptions{ClientOptions: registryOptions}),
//		Local: source.NewLocalResolver(0),
//	}
//	c, err := r.Resolve(ctx, source.Ref{Chart: "podinfo", Version: "6.5.*", HelmRepository: repo})
//
// The resolvers take the caller's clients: an *http.Client for HTTP
// repositories (auth, TLS, proxies), and for OCI the options of Helm's
// registry client (credentials, plain HTTP) with an optional *http.Client;
// the OCI resolver builds a registry client per resolution, so that ctx and
// spec.timeout bound the pull, which Helm's client alone would not. Resolver is one method, so callers can wrap it
// (caching, mirroring, metrics) or replace it (an air-gapped store); the
// release package only depends on the interface.
//
// # Version selection
//
// SelectVersion is the pure rule every resolver uses, identical to Flux's:
// an exact string match first; "" or "*" is the latest stable version;
// anything else is a Masterminds/semver constraint (pre-releases only when
// the constraint has one, e.g. ">=1.0.0-0"); candidates are read as Flux
// reads them (fluxcd/pkg version.ParseVersion: strict semver with an
// optional "v", so "1.2" is no candidate and only its exact string selects
// it); among versions equal but for build metadata the newer "created"
// wins. OCI tags are read with "_" standing for "+".
//
// A chart name asked of a Helm repository (HTTP or OCI) must have the form
// Flux's chart builder accepts: lower-case letters, digits and dashes, in
// parts separated by single slashes or periods; anything else, or an empty
// name, is ErrInvalidChartName before any request. A repository URL that
// does not parse, or an OCI digest that is not algorithm:hex, is
// ErrUnsupportedSource, also before any request. Repository URLs are
// normalised as Flux normalises them: an HTTP(S) index is read at the path
// with its trailing slashes folded into one, plus index.yaml (query kept),
// and relative archive URLs resolve against that path; an oci:// URL loses
// every trailing slash before the chart's name is appended.
//
// The peers' own test data checks all of this: peer_flux_test.go runs the
// data-driven cases of source-controller's Helm repository, OCI and chart
// builder tests and of fluxcd/pkg's version parsing, kept under
// testdata/peer/flux with the tag and commit they were read at.
//
// # Where helmfleet differs from Flux
//
// Each item: what Flux does, what helmfleet does, and why.
//
//   - Unverified archives. Flux downloads the archive an index entry points
//     at and uses it when the entry has no digest. helmfleet refuses such an
//     entry (ErrDigestMismatch): an archive nothing vouches for is not
//     deployed, so a compromised or confused mirror cannot swap it.
//   - The chart is the one resolved. Flux loads whatever the archive holds:
//     asked for grafana 6.17.4, it accepts a chart named helmchart 0.1.0 (its
//     own builder tests do). helmfleet requires the loaded Chart.yaml to name
//     the chart and version it was resolved as (ErrChartMismatch), so what
//     runs is what the reference and the status say.
//   - Values files and the chart version. Flux merges a HelmChart's
//     valuesFiles into the chart and re-packages it with the generation as
//     build metadata (0.3.0+3), so a values change is a new artifact.
//     helmfleet never rewrites a chart: the files go on unmerged to the
//     values package, the release records the values digest, and the
//     version stays the repository's, which can be looked up there.
//   - Other charts' entries. Flux (like Helm) rejects a whole index whose
//     entries for other charts are malformed; helmfleet resolves the chart
//     asked for (see Large indexes): one broken entry does not stop every
//     release from that repository.
//   - The semver library. Flux v2.6 (source-controller v1.6) pinned
//     Masterminds/semver v3.3.0; helmfleet uses v3.5.0, as Flux v2.9
//     (source-controller v1.9) and Helm v3.21 do. Since v3.4 one
//     pre-release bound opens its AND group to pre-releases: ">1.0.0-beta.1
//     <2" selects 1.5.0-rc.1, which Flux v2.6 would not (it picks 1.4.0).
//   - OCIRepository tags. source-controller v1.6 skips tags holding "_";
//     v1.9 reads "_" as "+" when the layer is a Helm chart, as helmfleet
//     always does (it only pulls charts). Both read the tags as the
//     registry lists them ("v1.2.3" included), as helmfleet does; an OCI
//     HelmRepository sees Helm's list (strict semver without "v") in both.
//     helmfleet also lets a semver string equal to a tag select that tag
//     first, as for a HelmRepository, where Flux sorts equal versions
//     (1.0.0 and 1.0.0_build) in no defined order.
//
// # Large indexes
//
// Public indexes reach 20–100 MB and Helm's repo.LoadIndexFile decodes all
// of it for every lookup. FindChartVersion instead locates the one chart's
// block in the YAML text (or walks a JSON index with a scanner that decodes
// only that chart's array), reads just the version and created fields, and
// decodes only the selected entry. Documents it cannot scan safely (flow
// style, quoted or repeated keys, tabs, aliases reaching outside the
// block) are parsed whole, with the same answer. An IndexCache keeps the
// parsed versions per (index digest, chart), so a repeated resolution is a
// map lookup.
//
// The JSON scanner steps over other charts' arrays 64 bytes at a time: it
// marks the quotes, backslashes and brackets of each block (with AVX2 on
// amd64 machines that have it, eight bytes at a time elsewhere), keeps the
// strings' bytes out with a parity of the unescaped quotes, and counts
// only the brackets left, so a 20 MB index costs a few milliseconds.
//
// HTTPResolver goes further with a JSON index: it never holds it whole.
// The response body streams through a fixed 256 KiB window, the scanner
// keeps only the asked chart's array, and the cache key is computed on
// each chunk as it is read, so resolving from a 20 MB JSON index allocates
// a few hundred KB. A YAML index is read into memory once (its scanner
// looks across lines of the whole document), hashed as it arrives, and
// dropped after the scan. The cache key is the index's length and a
// seeded 64-bit maphash (10 GB/s); the SHA-256 revision Flux reports for a
// HelmRepository (1.7 GB/s: as slow as the scan itself) is computed only
// for repositories whose HTTPResolver.IndexDigest was asked. Per
// repository the resolver remembers only the ETag, Last-Modified and key
// of the last good index: a chart the cache holds for that key is
// revalidated with a conditional request (a 304 costs nothing more), while
// a chart not resolved from it before costs one unconditional download.
//
// helmfleet differs from Helm and Flux in one way here: an index whose
// entries for OTHER charts are malformed (an unknown field, a wrong type)
// still resolves the chart asked for, where they reject the whole index.
//
// # Verification and limits
//
// Index downloads are capped (DefaultMaxIndexSize, 50 MiB like Flux) and
// revalidated with ETag / Last-Modified; archives are capped
// (DefaultMaxChartSize, both the download and the uncompressed tar stream
// it expands to, headers included; MaxChartEntries entries), verified
// against the index digest (an entry without a digest is refused) or the
// OCI descriptor, checked for entries that leave the chart directory or
// links, and only then loaded; the loaded chart's Chart.yaml must then
// name the chart and version it was resolved as (ErrChartMismatch). A cap
// exceeded is a *LimitError naming the cap. HelmRepository.Spec.Timeout
// bounds each download from the repository, the index and the archive;
// for an OCI registry, OCIRepository.Spec.Timeout (or the OCI
// HelmRepository's) bounds the tag list, manifest and blob of one pull.
// Nothing from a failed or unverified download is kept.
//
// A local chart directory is read with Helm's rules (.helmignore) within
// the same caps; a symbolic link is followed only when its target stays
// inside the directory, and devices, FIFOs and sockets are refused, each
// an error naming the file. Links inside the directory stay allowed.
//
// # Values files
//
// Ref.ValuesFiles name chart-relative files that replace the chart's
// default values.yaml (it counts only if listed). They are returned raw, in
// order, in Chart.ValuesFiles; merging them is the values package's job —
// the library has one deep merge. IgnoreMissingValuesFiles skips files the
// chart lacks; otherwise a missing one is ErrValuesFileMissing.
//
// # Errors
//
// Every failure is an *Error naming the operation, the repository URL
// (without credentials or query, see Redact), the chart and the
// constraint, with the HTTP status when there was one, wrapping a sentinel
// such as ErrInvalidChartName, ErrChartNotFound, ErrNoMatchingVersion,
// ErrInvalidIndex, ErrTooLarge, ErrDigestMismatch, ErrInvalidArchive,
// ErrChartMismatch, ErrUnreachable, ErrUnauthorized, ErrForbidden,
// ErrNotFound, ErrServer or ErrUnsupportedSource.
// No printed form of an error holds a URL's user, password or query
// values: URLs quoted in messages (the archive's, a redirect target's,
// those net/http and the registry client quote) are masked as
// https://***@host/app-1.0.0.tgz?sig=***, while errors.Is and errors.As
// still reach the underlying net/http errors.
package source
