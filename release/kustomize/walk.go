package kustomize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/api/konfig"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/safefile"
	"github.com/helmfleet/helmfleet/internal/strictyaml"
)

// walker reads a kustomization tree from a file system the way kustomize
// will, before kustomize does: it checks every entry (remote, outside the
// file system or the kustomization's root, missing, cyclic, too large),
// refuses what would run a program, and keeps the content of every file
// kustomize may read, so that kustomize later runs over exactly these
// files and nothing else.
type walker struct {
	ctx  context.Context
	fsys fs.FS
	root *os.Root // when fsys is a directory on disk: every file is opened through it
	opts Options
	// beforeOpen, when set, is called with each file's path after its
	// checks and before it is opened (tests swap the file there).
	beforeOpen func(p string)

	files    map[string][]byte // by path in fsys
	total    int64             // bytes of files
	visits   map[string]int64  // kustomization directory: kustomizations it includes, itself too
	stack    []string          // kustomization directories being walked
	warnings []string
	secrets  []string        // values a Secret generator reads, to mask in errors
	seeded   map[string]bool // files put in files by seed, not read from fsys
}

// seed makes p a file of the tree with content data, whether or not
// fsys has it: the kustomization file a Flux Kustomization's settings
// change or generate. It must be called before the walk.
func (w *walker) seed(p string, data []byte) {
	if w.seeded == nil {
		w.seeded = map[string]bool{}
	}
	w.seeded[p] = true
	w.files[p] = data
}

// seededInfo is the fs.FileInfo of a seeded file.
type seededInfo struct {
	name string
	size int64
}

func (i seededInfo) Name() string       { return path.Base(i.name) }
func (i seededInfo) Size() int64        { return i.size }
func (i seededInfo) Mode() fs.FileMode  { return 0o444 }
func (i seededInfo) ModTime() time.Time { return time.Time{} }
func (i seededInfo) IsDir() bool        { return false }
func (i seededInfo) Sys() any           { return nil }

func newWalker(ctx context.Context, fsys fs.FS, opts Options) *walker {
	return &walker{ctx: ctx, fsys: fsys, opts: opts, files: map[string][]byte{}, visits: map[string]int64{}}
}

// kustomization walks the kustomization in directory dir and returns how
// many kustomizations a build of it loads (itself and every inclusion,
// counted each time it is included). Errors about dir itself (missing,
// no kustomization file, a cycle) are returned bare, for the caller to
// name the entry that led here; errors inside are *EntryErrors.
func (w *walker) kustomization(dir string) (int64, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	if i := slices.Index(w.stack, dir); i >= 0 {
		return 0, &CycleError{Cycle: append(slices.Clone(w.stack[i:]), dir)}
	}
	if n, ok := w.visits[dir]; ok {
		return n, nil
	}
	if int64(len(w.stack)) >= int64(w.opts.MaxDepth) {
		return 0, &LimitError{What: "depth", Limit: int64(w.opts.MaxDepth), Got: int64(len(w.stack)) + 1}
	}
	file, err := w.kustomizationFile(dir)
	if err != nil {
		return 0, err
	}
	data, err := w.read(file)
	if err != nil {
		return 0, err
	}
	var k kustypes.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return 0, &EntryError{File: file, Err: err}
	}
	if msgs := k.CheckDeprecatedFields(); msgs != nil {
		for _, m := range *msgs {
			w.warnings = append(w.warnings, file+": "+strings.TrimPrefix(m, "# "))
		}
	}
	w.stack = append(w.stack, dir)
	defer func() { w.stack = w.stack[:len(w.stack)-1] }()

	kw := kustWalk{w: w, dir: dir, file: file, visits: 1}
	if err := kw.walk(&k); err != nil {
		return 0, err
	}
	w.visits[dir] = kw.visits
	return kw.visits, nil
}

// kustomizationFile returns the kustomization file of dir, as kustomize
// finds it: exactly one of its recognized names.
func (w *walker) kustomizationFile(dir string) (string, error) {
	info, err := w.stat(dir)
	if err != nil {
		return "", err
	}
	if !info.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	var found []string
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := path.Join(dir, name)
		if info, err := w.stat(p); err == nil && !info.IsDir() {
			found = append(found, p)
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	switch len(found) {
	case 0:
		return "", ErrNoKustomization
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("more than one kustomization file: %s", strings.Join(found, ", "))
}

// kustWalk walks the entries of one kustomization file.
type kustWalk struct {
	w         *walker
	dir, file string
	visits    int64
}

func (kw *kustWalk) fail(field, value string, err error) error {
	var ee *EntryError
	if errors.As(err, &ee) {
		return err // from deeper down: it names its own file
	}
	return &EntryError{File: kw.file, Field: field, Value: value, Err: err}
}

// walk checks every field of k that names a file, a directory or a
// program. The list is complete for kustomize/api v0.21.2
// (TestEveryKustomizationFieldClassified keeps it so).
func (kw *kustWalk) walk(k *kustypes.Kustomization) error {
	switch {
	case len(k.HelmCharts) > 0:
		return kw.fail("helmCharts", "", fmt.Errorf("%w: Helm chart inflation runs the helm program; declare the chart as a HelmRelease instead", ErrUnsupported))
	case len(k.HelmChartInflationGenerator) > 0:
		return kw.fail("helmChartInflationGenerator", "", fmt.Errorf("%w: Helm chart inflation runs the helm program; declare the chart as a HelmRelease instead", ErrUnsupported))
	case k.HelmGlobals != nil:
		return kw.fail("helmGlobals", "", fmt.Errorf("%w: Helm chart inflation runs the helm program; declare the chart as a HelmRelease instead", ErrUnsupported))
	case len(k.OpenAPI) > 0:
		// kustomize keeps the schema in a process-wide variable, so it
		// would change the builds running beside this one.
		return kw.fail("openapi", "", fmt.Errorf("%w: a custom OpenAPI schema is process-wide state in kustomize", ErrUnsupported))
	}
	for _, f := range []struct {
		name    string
		entries []string
	}{{"resources", k.Resources}, {"bases", k.Bases}} {
		for i, e := range f.entries {
			if err := kw.resource(fmt.Sprintf("%s[%d]", f.name, i), e, false); err != nil {
				return err
			}
		}
	}
	for i, e := range k.Components {
		field := fmt.Sprintf("components[%d]", i)
		p, err := kw.local(e)
		if err != nil {
			return kw.fail(field, e, err)
		}
		if err := kw.include(field, e, p); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name    string
		entries []string
	}{{"crds", k.Crds}, {"configurations", k.Configurations}} {
		for i, e := range f.entries {
			if err := kw.fileEntry(fmt.Sprintf("%s[%d]", f.name, i), e); err != nil {
				return err
			}
		}
	}
	for i, e := range k.PatchesStrategicMerge {
		// kustomize reads an entry as a file if it can, else as an
		// inline patch.
		s := string(e)
		if strings.Contains(s, "\n") || strings.Contains(s, ": ") {
			continue
		}
		if err := kw.fileEntry(fmt.Sprintf("patchesStrategicMerge[%d]", i), s); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name    string
		entries []kustypes.Patch
	}{{"patches", k.Patches}, {"patchesJson6902", k.PatchesJson6902}} {
		for i, p := range f.entries {
			if p.Path != "" {
				if err := kw.fileEntry(fmt.Sprintf("%s[%d].path", f.name, i), p.Path); err != nil {
					return err
				}
			}
		}
	}
	for i, r := range k.Replacements {
		if r.Path != "" {
			if err := kw.fileEntry(fmt.Sprintf("replacements[%d].path", i), r.Path); err != nil {
				return err
			}
		}
	}
	for i, g := range k.ConfigMapGenerator {
		if err := kw.generator(fmt.Sprintf("configMapGenerator[%d]", i), g.KvPairSources, false); err != nil {
			return err
		}
	}
	for i, g := range k.SecretGenerator {
		if err := kw.generator(fmt.Sprintf("secretGenerator[%d]", i), g.KvPairSources, true); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name    string
		entries []string
	}{{"generators", k.Generators}, {"transformers", k.Transformers}, {"validators", k.Validators}} {
		for i, e := range f.entries {
			field := fmt.Sprintf("%s[%d]", f.name, i)
			if inline(e) {
				if err := checkPluginConfigs([]byte(e)); err != nil {
					return kw.fail(field, "", err)
				}
				continue
			}
			if err := kw.resource(field, e, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// inline reports whether a generators/transformers/validators entry is a
// plugin configuration written in place rather than a path.
func inline(e string) bool {
	var m map[string]any
	return strings.Contains(e, "\n") && yaml.Unmarshal([]byte(e), &m) == nil && len(m) > 0
}

// resource checks a resources (or generators, transformers, validators)
// entry: a file, or a directory with a kustomization.
func (kw *kustWalk) resource(field, entry string, plugin bool) error {
	p, err := kw.local(entry)
	if err != nil {
		return kw.fail(field, entry, err)
	}
	info, err := kw.w.stat(p)
	if err != nil {
		return kw.fail(field, entry, err)
	}
	if info.IsDir() {
		return kw.include(field, entry, p)
	}
	data, err := kw.readFile(p)
	if err != nil {
		return kw.fail(field, entry, err)
	}
	if plugin {
		if err := checkPluginConfigs(data); err != nil {
			return kw.fail(field, entry, err)
		}
	}
	return nil
}

// include walks the kustomization in directory p, an entry of this one.
func (kw *kustWalk) include(field, entry, p string) error {
	n, err := kw.w.kustomization(p)
	if err != nil {
		return kw.fail(field, entry, err)
	}
	kw.visits += n
	if max := int64(kw.w.opts.MaxKustomizations); kw.visits > max {
		return kw.fail(field, entry, &LimitError{What: "kustomizations", Limit: max, Got: kw.visits})
	}
	return nil
}

// fileEntry checks an entry that must be a file.
func (kw *kustWalk) fileEntry(field, entry string) error {
	p, err := kw.local(entry)
	if err == nil {
		_, err = kw.readFile(p)
	}
	if err != nil {
		return kw.fail(field, entry, err)
	}
	return nil
}

// generator checks the files and env files of a ConfigMap or Secret
// generator; for a Secret it keeps the values to mask them in errors.
func (kw *kustWalk) generator(field string, src kustypes.KvPairSources, secret bool) error {
	if secret {
		for _, l := range src.LiteralSources {
			if _, v, ok := strings.Cut(l, "="); ok {
				kw.w.secret(v)
			}
		}
	}
	check := func(sub, entry, p string) error {
		data, err := kw.readFile(p)
		if err != nil {
			return kw.fail(field+"."+sub, entry, err)
		}
		if secret {
			kw.w.secret(string(data))
		}
		return nil
	}
	for i, e := range src.FileSources {
		// "key=path" or "path"
		_, p, ok := strings.Cut(e, "=")
		if !ok || remote(e) {
			p = e
		}
		lp, err := kw.local(p)
		if err != nil {
			return kw.fail(fmt.Sprintf("%s.files[%d]", field, i), e, err)
		}
		if err := check(fmt.Sprintf("files[%d]", i), e, lp); err != nil {
			return err
		}
	}
	envs := src.EnvSources
	names := make([]string, len(envs))
	for i := range envs {
		names[i] = fmt.Sprintf("envs[%d]", i)
	}
	if src.EnvSource != "" {
		envs, names = append(envs, src.EnvSource), append(names, "env")
	}
	for i, e := range envs {
		lp, err := kw.local(e)
		if err != nil {
			return kw.fail(field+"."+names[i], e, err)
		}
		if err := check(names[i], e, lp); err != nil {
			return err
		}
	}
	return nil
}

// local resolves a relative entry against the kustomization's directory,
// refusing URLs and paths that leave the file system.
func (kw *kustWalk) local(entry string) (string, error) {
	if remote(entry) {
		return "", ErrRemote
	}
	if path.IsAbs(entry) || strings.Contains(entry, `\`) {
		return "", fmt.Errorf("%w: an absolute or Windows path", ErrOutsideFS)
	}
	p := path.Join(kw.dir, entry)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", ErrOutsideFS
	}
	return p, nil
}

// file reads a file entry, enforcing LoadRestrictionsRootOnly.
func (kw *kustWalk) readFile(p string) ([]byte, error) {
	if kw.w.opts.LoadRestrictions == kustypes.LoadRestrictionsRootOnly && !within(kw.dir, p) {
		return nil, ErrOutsideRoot
	}
	info, err := kw.w.stat(p)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a file", p)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s (mode %s)", ErrNotRegular, p, info.Mode().Type())
	}
	return kw.w.read(p)
}

func within(dir, p string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// remote reports whether kustomize would fetch entry over the network
// (an http(s) file, a git repository) rather than read it from disk:
// any URL scheme, go-getter's "git::", SCP-like "user@host:path" and
// "github.com/…" or "github.com:…", the forms kustomize's own git URL
// parser takes for remote. It errs on the side of refusing.
func remote(entry string) bool {
	lower := strings.ToLower(entry)
	first, _, _ := strings.Cut(lower, "/")
	return strings.Contains(lower, "://") ||
		strings.HasPrefix(lower, "git::") ||
		strings.HasPrefix(lower, "github.com/") || strings.HasPrefix(lower, "github.com:") ||
		strings.Contains(first, "@") && strings.Contains(lower, ":")
}

// secret records a value a Secret generator reads, and each of its lines.
func (w *walker) secret(v string) {
	w.secrets = append(w.secrets, v)
	for line := range strings.Lines(v) {
		if _, val, ok := strings.Cut(line, "="); ok { // an env file
			w.secrets = append(w.secrets, strings.TrimSpace(val))
		}
		w.secrets = append(w.secrets, strings.TrimSpace(line))
	}
}

// checkPluginConfigs refuses plugin configurations that are not
// kustomize's builtins, and Helm chart inflation: the only plugins Build
// lets kustomize load are the builtins that run no program.
func checkPluginConfigs(data []byte) error {
	for doc := range bytes.SplitSeq(data, []byte("\n---")) {
		var h struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &h); err != nil || h.Kind == "" {
			continue // kustomize reports it
		}
		switch {
		case h.Kind == "HelmChartInflationGenerator":
			return fmt.Errorf("%w: HelmChartInflationGenerator runs the helm program", ErrUnsupported)
		case h.APIVersion != konfig.BuiltinPluginApiVersion:
			return fmt.Errorf("%w: plugin %s %s: only kustomize's builtin plugins run (exec, Go and KRM function plugins are disabled)", ErrUnsupported, h.APIVersion, h.Kind)
		}
	}
	return nil
}

// stat returns what p is, after checking that neither p nor any of its
// parents is a symbolic link that leaves the file system.
func (w *walker) stat(p string) (fs.FileInfo, error) {
	if w.seeded[p] {
		return seededInfo{name: p, size: int64(len(w.files[p]))}, nil
	}
	if err := w.checkLinks(p); err != nil {
		return nil, err
	}
	info, err := fs.Stat(w.fsys, p)
	if errors.Is(err, fs.ErrNotExist) {
		// The entry names the path already; the fs.FS's wording varies.
		return nil, fs.ErrNotExist
	}
	return info, err
}

// maxLinks is the most symbolic links one path may go through, as Linux
// allows (MAXSYMLINKS).
const maxLinks = 40

// checkLinks follows every symbolic link on the way to p, within the file
// system, and refuses a link that leaves it (an absolute target, or one
// that climbs above the root) or a chain of more than maxLinks links. A
// file system without ReadLinkFS shows no links.
func (w *walker) checkLinks(p string) error {
	if _, ok := w.fsys.(fs.ReadLinkFS); !ok || p == "." {
		return nil
	}
	hops := 0
	rest := strings.Split(p, "/")
	cur := "."
	for len(rest) > 0 {
		next := path.Join(cur, rest[0])
		rest = rest[1:]
		info, err := fs.Lstat(w.fsys, next)
		if err != nil {
			return nil // fs.Stat reports it
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		target, err := fs.ReadLink(w.fsys, next)
		if err != nil {
			return err
		}
		if hops++; hops > maxLinks {
			return &SymlinkError{Path: next, Target: target, Reason: fmt.Sprintf("more than %d links", maxLinks)}
		}
		if path.IsAbs(target) || strings.HasPrefix(target, `\`) {
			return &SymlinkError{Path: next, Target: target, Reason: reasonLeaves}
		}
		resolved := path.Join(cur, target)
		if resolved == ".." || strings.HasPrefix(resolved, "../") {
			return &SymlinkError{Path: next, Target: target, Reason: reasonLeaves}
		}
		// Go on from the link's target, through what is left of p.
		rest = append(strings.Split(resolved, "/"), rest...)
		cur = "."
	}
	return nil
}

// read returns the content of file p, counting it against the limits.
func (w *walker) read(p string) ([]byte, error) {
	if data, ok := w.files[p]; ok {
		return data, nil
	}
	if err := w.ctx.Err(); err != nil {
		return nil, err
	}
	if max := w.opts.MaxFiles; len(w.files) >= max {
		return nil, &LimitError{What: "files", Limit: int64(max), Got: int64(len(w.files)) + 1}
	}
	if err := w.checkLinks(p); err != nil {
		return nil, err
	}
	f, err := w.open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Read at most one byte more than allowed, whatever Stat says.
	max := min(w.opts.MaxFileBytes, w.opts.MaxTotalBytes-w.total)
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if n := int64(len(data)); n > max {
		if n > w.opts.MaxFileBytes {
			return nil, &LimitError{What: "file size", Limit: w.opts.MaxFileBytes, Got: n}
		}
		return nil, &LimitError{What: "total size", Limit: w.opts.MaxTotalBytes, Got: w.total + n}
	}
	if err := checkAliases(p, data); err != nil {
		return nil, err
	}
	w.total += int64(len(data))
	w.files[p] = data
	return data, nil
}

// open opens file p for read. On disk it opens through w.root, so that a
// link swapped in since the checks cannot lead out of the root, without
// blocking, so that a FIFO swapped in cannot hang the walk, and checks
// what it opened, not what the name was. Any other fs.FS is opened by
// name; what it opened is checked all the same.
func (w *walker) open(p string) (io.ReadCloser, error) {
	if w.beforeOpen != nil {
		w.beforeOpen(p)
	}
	if w.root != nil {
		f, err := safefile.OpenRegular(w.root, p)
		if errors.Is(err, safefile.ErrNotRegular) {
			return nil, fmt.Errorf("%w: %s changed while it was read: it is no longer a regular file", ErrNotRegular, p)
		}
		return f, err
	}
	f, err := w.fsys.Open(p)
	if err != nil {
		return nil, err
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s (mode %s)", ErrNotRegular, p, info.Mode().Type())
	}
	return f, nil
}

// checkAliases refuses YAML file p whose aliases, in any of its
// documents, expand to far more than it says (a "billion laughs"
// document): kustomize parses such a file in no time and then expands it
// without limit. Each document may expand to at most a small multiple of
// its written nodes, the budget Helm's files get too. A file with no
// anchor and no alias is not parsed here; one that is not YAML is
// kustomize's to report.
func checkAliases(p string, data []byte) error {
	if err := strictyaml.CheckAliasesStream(data); err != nil {
		return &LimitError{What: "YAML aliases", detail: p + ": " + err.Error()}
	}
	return nil
}
