package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/helmfleet/helmfleet/release/fleettest"
)

var update = flag.Bool("update", false, "rewrite the golden files and testdata/charts")

const (
	exampleRepo   = "../../../../examples/fluxrepo/repo"
	exampleCharts = "../../../../examples/fluxrepo/charts"
	testdata      = "../../testdata"
)

var (
	fleetFile = filepath.Join(testdata, "fleet.yaml")
	chartDir  = filepath.Join(testdata, "charts")
)

// exampleChartSet is what examples/fluxrepo's chart repositories serve.
func exampleChartSet(t *testing.T) []*chart.Chart {
	var all []*chart.Chart
	for _, v := range []string{"1.14.5", "1.15.3", "1.16.0-beta.1"} {
		ch, err := fleettest.LoadDir(os.DirFS(exampleCharts), "cert-manager", v)
		require.NoError(t, err)
		ch.Metadata.AppVersion = "v" + v
		all = append(all, ch)
	}
	for _, v := range []string{"6.5.0", "6.5.1", "6.6.0-rc.1"} {
		all = append(all, fleettest.Podinfo(v))
	}
	return all
}

// flux2Dir is fluxcd/flux2-kustomize-helm-example as release/fleet keeps it.
const flux2Dir = "../../../../release/fleet/testdata/flux2-kustomize-helm-example"

var (
	flux2Fleet  = filepath.Join(testdata, "flux2", "fleet.yaml")
	flux2Charts = filepath.Join(testdata, "flux2", "charts")
)

// flux2ChartSet stands in for the charts flux2-kustomize-helm-example
// names (cert-manager and gateway-helm from OCI, podinfo from a Helm
// repository): release/fleettest's small podinfo chart under their names.
// cert-manager and gateway-helm carry the CRDs of the kinds the
// example's infrastructure configs use, in crds/ as the real ones do.
func flux2ChartSet() []*chart.Chart {
	crds := map[string][][3]string{
		"cert-manager": {{"cert-manager.io", "ClusterIssuer", "Cluster"}},
		"gateway-helm": {{"gateway.networking.k8s.io", "GatewayClass", "Cluster"}, {"gateway.networking.k8s.io", "Gateway", "Namespaced"}},
	}
	var all []*chart.Chart
	for _, nv := range [][2]string{{"cert-manager", "1.16.0"}, {"gateway-helm", "1.8.0"}, {"podinfo", "6.9.0"}} {
		ch := fleettest.Podinfo(nv[1])
		ch.Metadata.Name = nv[0]
		for _, c := range crds[nv[0]] {
			plural := strings.ToLower(c[1]) + "es"
			if !strings.HasSuffix(c[1], "s") {
				plural = strings.ToLower(c[1]) + "s"
			}
			ch.Files = append(ch.Files, &chart.File{Name: "crds/" + plural + ".yaml", Data: []byte(fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[3]s.%[1]s
spec:
  group: %[1]s
  names: {kind: %[2]s, listKind: %[2]sList, plural: %[3]s, singular: %[4]s}
  scope: %[5]s
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, c[0], c[1], plural, strings.ToLower(c[1]), c[2]))})
		}
		all = append(all, ch)
	}
	return all
}

// TestChartCache keeps testdata/charts, the chart cache of the example
// repository, in step with examples/fluxrepo's charts (-update writes it).
func TestChartCache(t *testing.T) {
	for dir, charts := range map[string][]*chart.Chart{chartDir: exampleChartSet(t), flux2Charts: flux2ChartSet()} {
		for _, ch := range charts {
			name := ch.Metadata.Name + "-" + ch.Metadata.Version + ".tgz"
			if *update {
				require.NoError(t, os.MkdirAll(dir, 0o755))
				_, err := chartutil.Save(ch, dir)
				require.NoError(t, err)
			}
			r := NewCacheResolver(dir)
			file, err := r.pick(ch.Metadata.Name, ch.Metadata.Version)
			require.NoError(t, err, name)
			assert.Equal(t, filepath.Join(dir, name), file)
		}
	}
	// Flux's selection: the newest release the constraint admits,
	// pre-releases only when it admits them.
	r := NewCacheResolver(chartDir)
	for constraint, want := range map[string]string{"1.15.x": "cert-manager-1.15.3.tgz", ">=1.16.0-0": "cert-manager-1.16.0-beta.1.tgz", "": "cert-manager-1.15.3.tgz"} {
		file, err := r.pick("cert-manager", constraint)
		require.NoError(t, err)
		assert.Equal(t, want, filepath.Base(file), constraint)
	}
	_, err := r.pick("cert-manager", "2.x")
	assert.ErrorIs(t, err, ErrChartNotCached)
}

// run runs the command line and returns its stdout with the
// directories replaced by names, and its exit status.
func run(t *testing.T, dirs map[string]string, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, &out, &errb)
	s := out.String()
	for name, dir := range dirs {
		s = strings.ReplaceAll(s, dir, name)
	}
	t.Logf("stderr:\n%s", errb.String())
	return s, code
}

// golden compares got with testdata/name.golden (-update writes it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(testdata, name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), got, "%s differs; run go test ./cmd/helmfleet/... -update to accept", path)
}

// copyTree copies the directory src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
}

// edit replaces old with new in file of dir, once.
func edit(t *testing.T, dir, file, old, new string) {
	t.Helper()
	p := filepath.Join(dir, file)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Contains(t, string(data), old)
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644))
}

// headRepo is the example repository with prod's podinfo at 4 replicas
// instead of 3: a pull request that changes one unit on one member.
func headRepo(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "head")
	copyTree(t, exampleRepo, dir)
	edit(t, dir, "apps/prod/kustomization.yaml", "replicaCount: 3", "replicaCount: 4")
	return dir
}

func common(args ...string) []string {
	return append(args, "--fleet", fleetFile, "--chart-cache", chartDir)
}

func TestBuild(t *testing.T) {
	out, code := run(t, nil, common("build", exampleRepo, "--member", "prod-1")...)
	require.Equal(t, ExitOK, code, out)
	golden(t, "build-prod-1", out)
	// Every unit of prod-1, cert-manager rendered once its CRDs ran.
	for _, want := range []string{"# Kustomization flux-system/apps", "# HelmRelease kube-system/cert-manager (cert-manager@1.15.3",
		"# HelmRelease apps/podinfo (podinfo@6.5.1", "kind: ClusterIssuer", "replicas: 3"} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "# member dev-1")

	all, code := run(t, nil, common("build", exampleRepo)...)
	require.Equal(t, ExitOK, code)
	for _, m := range []string{"dev-1", "dev-2", "prod-1"} {
		assert.Contains(t, all, "# member "+m+"\n")
	}
}

func TestPlan(t *testing.T) {
	for _, format := range []string{FormatTable, FormatDiff, FormatJSON, FormatMarkdown} {
		t.Run(format, func(t *testing.T) {
			out, code := run(t, map[string]string{"REPO": exampleRepo}, common("plan", exampleRepo, "-o", format)...)
			assert.Equal(t, ExitChanges, code, "a fleet that runs nothing yet changes")
			golden(t, "plan."+format, out)
		})
	}
}

func TestDiff(t *testing.T) {
	head := headRepo(t)
	dirs := map[string]string{"HEAD": head, "BASE": exampleRepo}
	for _, format := range []string{FormatTable, FormatDiff, FormatJSON, FormatMarkdown} {
		t.Run(format, func(t *testing.T) {
			out, code := run(t, dirs, common("diff", exampleRepo, head, "-o", format)...)
			assert.Equal(t, ExitChanges, code, out)
			golden(t, "diff."+format, out)
		})
	}
	t.Run("exactly the changed unit and object per member", func(t *testing.T) {
		out, code := run(t, dirs, common("diff", exampleRepo, head, "-o", "table")...)
		require.Equal(t, ExitChanges, code)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 4, out)
		assert.Regexp(t, `^dev-1\s+\(no change\)`, lines[1])
		assert.Regexp(t, `^dev-2\s+\(no change\)`, lines[2])
		assert.Regexp(t, `^prod-1\s+HelmRelease apps/podinfo\s+OutOfSync\s+upgrade\s+podinfo@6.5.1\s+Deployment/apps/podinfo update\s*$`, lines[3])
		diff, _ := run(t, dirs, common("diff", exampleRepo, head, "-o", "diff")...)
		assert.Contains(t, diff, "-  replicas: 3\n+  replicas: 4\n")
	})
	t.Run("one member", func(t *testing.T) {
		out, code := run(t, dirs, common("diff", exampleRepo, head, "-o", "markdown", "--member", "dev-1")...)
		assert.Equal(t, ExitOK, code, "dev-1 does not change")
		assert.Equal(t, "## helmfleet diff\n\n### dev-1: 0 units change\n\n", out)
	})
	t.Run("no change", func(t *testing.T) {
		out, code := run(t, nil, common("diff", exampleRepo, exampleRepo)...)
		assert.Equal(t, ExitOK, code, out)
	})
}

// TestSecretsMasked: a pull request that sets a Secret's value shows
// that the Secret changes, never the value, in every output.
func TestSecretsMasked(t *testing.T) {
	const token = "hunter2-do-not-print"
	head := headRepo(t)
	edit(t, head, "apps/prod/kustomization.yaml", "replicaCount: 4", "replicaCount: 4\n          auth:\n            token: "+token)
	encoded := base64.StdEncoding.EncodeToString([]byte(token))
	outs := map[string]string{}
	for _, format := range []string{FormatTable, FormatDiff, FormatJSON, FormatMarkdown} {
		out, code := run(t, nil, common("diff", exampleRepo, head, "-o", format)...)
		require.Equal(t, ExitChanges, code, out)
		outs["diff -o "+format] = out
		out, _ = run(t, nil, common("plan", head, "-o", format)...)
		outs["plan -o "+format] = out
	}
	out, code := run(t, nil, common("build", head, "--member", "prod-1")...)
	require.Equal(t, ExitOK, code)
	outs["build"] = out
	assert.Contains(t, outs["diff -o diff"], "Secret/apps/podinfo", "the Secret's change shows")
	assert.Contains(t, outs["build"], "token: (sha256:")
	for name, out := range outs {
		assert.NotContains(t, out, token, name)
		assert.NotContains(t, out, encoded, name)
	}
}

func TestTest(t *testing.T) {
	out, code := run(t, nil, common("test", exampleRepo)...)
	assert.Equal(t, ExitOK, code, out)
	golden(t, "test.ok", out)

	// A pull request that asks prod for a podinfo no cache holds.
	head := headRepo(t)
	edit(t, head, "apps/prod/kustomization.yaml", "        values:\n", "        chart:\n          spec:\n            version: 7.x\n        values:\n")
	for _, format := range []string{FormatTable, FormatJSON, FormatMarkdown} {
		out, code := run(t, map[string]string{"HEAD": head}, common("test", head, "-o", format)...)
		assert.Equal(t, ExitError, code, out)
		golden(t, "test.fail."+format, out)
	}
}

func TestErrors(t *testing.T) {
	_, code := run(t, nil, "plan", exampleRepo)
	assert.Equal(t, ExitError, code, "no --fleet")
	_, code = run(t, nil, common("plan", exampleRepo, "-o", "yaml")...)
	assert.Equal(t, ExitError, code)
	_, code = run(t, nil, common("build", exampleRepo, "--member", "nope")...)
	assert.Equal(t, ExitError, code)
}

// TestDiffGitRefs: BASE and HEAD as two commits of one Git repository,
// the Flux repository in a directory of it.
func TestDiffGitRefs(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git("init", "-q")
	copyTree(t, exampleRepo, filepath.Join(repo, "fleet"))
	git("add", ".")
	git("commit", "-qm", "base")
	edit(t, filepath.Join(repo, "fleet"), "apps/prod/kustomization.yaml", "replicaCount: 3", "replicaCount: 4")
	git("commit", "-qam", "head")

	out, code := run(t, nil, common("diff", "HEAD~1", "HEAD", "--git", repo, "--path", "fleet", "-o", "table")...)
	require.Equal(t, ExitChanges, code, out)
	golden(t, "diff.git.table", out)
	assert.Contains(t, out, "Deployment/apps/podinfo update")

	_, code = run(t, nil, common("diff", "HEAD~1", "nope", "--git", repo, "--path", "fleet")...)
	assert.Equal(t, ExitError, code, "a ref that does not exist")

	// A ref git would read as an option is refused before git runs: no
	// file is written by --output.
	written := filepath.Join(t.TempDir(), "written.tar")
	var stderr strings.Builder
	code = Main(context.Background(), []string{"diff", "--git", repo, "--path", "fleet", "--fleet", fleetFile, "--chart-cache", chartDir,
		"--", "HEAD~1", "--output=" + written}, io.Discard, &stderr)
	assert.Equal(t, ExitError, code)
	assert.Contains(t, stderr.String(), `not a ref`)
	assert.NoFileExists(t, written)
}

// TestFlux2Example: fluxcd/flux2-kustomize-helm-example, its
// ArtifactGenerator's ExternalArtifacts served from the fleet file's
// sources, passes test, and a change of production's podinfo values
// shows as exactly that release's Deployment on production.
func TestFlux2Example(t *testing.T) {
	args := func(a ...string) []string {
		return append(a, "--fleet", flux2Fleet, "--chart-cache", flux2Charts)
	}
	out, code := run(t, nil, args("test", flux2Dir)...)
	require.Equal(t, ExitOK, code, out)
	assert.Equal(t, "ok: 14 units rendered and placed on every member\n", out)

	head := filepath.Join(t.TempDir(), "head")
	copyTree(t, flux2Dir, head)
	edit(t, head, "apps/production/podinfo-values.yaml", "  values:\n", "  values:\n    replicaCount: 2\n")
	dirs := map[string]string{"HEAD": head, "BASE": flux2Dir}
	for _, format := range []string{FormatTable, FormatMarkdown} {
		out, code := run(t, dirs, args("diff", flux2Dir, head, "-o", format)...)
		require.Equal(t, ExitChanges, code, out)
		golden(t, "flux2.diff."+format, out)
	}
	out, _ = run(t, dirs, args("diff", flux2Dir, head, "-o", "diff")...)
	assert.Equal(t, "### production HelmRelease podinfo/podinfo (upgrade)\n", strings.SplitAfter(out, "\n")[0])
	assert.Contains(t, out, "-  replicas: 1\n+  replicas: 2\n")
	assert.NotContains(t, out, "### staging")
}

// TestDiffRemovedAndBroken: a pull request that removes a release shows
// its uninstall on every member (HEAD's fleet loads what BASE installed);
// one that breaks a build fails with the member and Kustomization named.
func TestDiffRemovedAndBroken(t *testing.T) {
	removed := filepath.Join(t.TempDir(), "removed")
	copyTree(t, exampleRepo, removed)
	edit(t, removed, "apps/base/podinfo/kustomization.yaml", "  - release.yaml\n", "")
	for _, env := range []string{"dev", "prod"} {
		p := filepath.Join(removed, "apps", env, "kustomization.yaml")
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		s := string(data)
		require.NoError(t, os.WriteFile(p, []byte(s[:strings.Index(s, "patches:")]), 0o644))
	}
	out, code := run(t, nil, common("diff", exampleRepo, removed, "-o", "table")...)
	require.Equal(t, ExitChanges, code, out)
	for _, m := range []string{"dev-1", "dev-2", "prod-1"} {
		assert.Regexp(t, `(?m)^`+m+`\s+HelmRelease apps/podinfo\s+Removed\s+uninstall`, out)
	}
	assert.Equal(t, 4, strings.Count(out, "\n"), out)

	broken := filepath.Join(t.TempDir(), "broken")
	copyTree(t, exampleRepo, broken)
	edit(t, broken, "apps/base/podinfo/kustomization.yaml", "  - release.yaml\n", "")
	out, code = run(t, nil, common("diff", exampleRepo, broken, "-o", "json")...)
	require.Equal(t, ExitError, code, out)
	assert.Contains(t, out, `"error": "member prod-1: kustomization flux-system/apps: kustomize build apps/prod: no resource matches`)
}

// TestTestKubeVersion: a chart whose kubeVersion a member's Kubernetes
// version does not satisfy fails test on that member only, named.
func TestTestKubeVersion(t *testing.T) {
	cache := t.TempDir()
	for _, ch := range exampleChartSet(t) {
		if ch.Metadata.Name == "podinfo" && ch.Metadata.Version == "6.5.1" {
			ch.Metadata.KubeVersion = ">=1.31.0-0"
		}
		_, err := chartutil.Save(ch, cache)
		require.NoError(t, err)
	}
	out, code := run(t, nil, "test", exampleRepo, "--fleet", fleetFile, "--chart-cache", cache)
	t.Log(out)
	require.Equal(t, ExitError, code, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	assert.Regexp(t, `^prod-1\s+HelmRelease apps/podinfo\s+\./apps/prod\s+.*kubeVersion|^prod-1\s+HelmRelease apps/podinfo\s+\./apps/prod\s+.*Kubernetes`, lines[1])
	assert.Contains(t, lines[1], "1.30")
	assert.Equal(t, "FAIL: 1 problem", lines[2])
}

// A value a Kustomization substitutes from a Secret is masked in build's
// output wherever it landed, as the Kustomization's plan masks it.
func TestBuildMasksSecretSubstitutes(t *testing.T) {
	const token = "tok-7f3a-do-not-print"
	head := headRepo(t)
	edit(t, head, "clusters/prod/apps.yaml", "      - kind: ConfigMap\n        name: cluster-vars\n",
		"      - kind: ConfigMap\n        name: cluster-vars\n      - kind: Secret\n        name: cluster-secrets\n")
	edit(t, head, "apps/base/podinfo/certificate.yaml", "  name: podinfo\n", "  name: podinfo\n  annotations:\n    example.com/token: \"${api_token}\"\n")
	fleetData, err := os.ReadFile(fleetFile)
	require.NoError(t, err)
	bootstrap, err := filepath.Abs(filepath.Join(testdata, "bootstrap.yaml"))
	require.NoError(t, err)
	withSecret := strings.Replace(string(fleetData), "bootstrap: bootstrap.yaml", "bootstrap: "+bootstrap, 1)
	withSecret = strings.Replace(withSecret, "         data: {cluster_name: prod-1, cluster_domain: prod-1.example.com}}\n",
		"         data: {cluster_name: prod-1, cluster_domain: prod-1.example.com}}\n"+
			"      - {apiVersion: v1, kind: Secret, metadata: {namespace: flux-system, name: cluster-secrets},\n"+
			"         data: {api_token: "+base64.StdEncoding.EncodeToString([]byte(token))+"}}\n", 1)
	require.Contains(t, withSecret, "cluster-secrets")
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	require.NoError(t, os.WriteFile(fleet, []byte(withSecret), 0o600))

	out, code := run(t, nil, "build", head, "--member", "prod-1", "--fleet", fleet, "--chart-cache", chartDir)
	require.Equal(t, ExitOK, code, out)
	assert.Contains(t, out, "example.com/token: (secret value)", "the substituted annotation is built, masked")
	assert.NotContains(t, out, token)
}
