package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), embeddedRepo(t), &out))
	got := out.String()

	// The plan: each member's flux-system Kustomization reads its
	// environment's directory and produces the three Kustomizations, which
	// produce the releases; dev gets the pre-release chart, prod the
	// stable line.
	for _, want := range []string{
		`dev-1\s+Kustomization/flux-system/flux-system\s+Absent\s+apply\s+\S+:./clusters/dev@main@sha256:\w+\s.*produces Kustomization/flux-system/apps, Kustomization/flux-system/infrastructure, Kustomization/flux-system/infrastructure-crds`,
		`prod-1\s+Kustomization/flux-system/flux-system\s+Absent\s+apply\s+\S+:./clusters/prod@`,
		`dev-2\s+Kustomization/flux-system/infrastructure\s+Absent\s+apply\s+\S+:./infrastructure/dev@.*produces kube-system/cert-manager`,
		`prod-1\s+Kustomization/flux-system/infrastructure\s+Absent\s+apply\s+\S+:./infrastructure/prod@`,
		`dev-1\s+kube-system/cert-manager\s+Deferred\s+install\s+cert-manager@1\.16\.0-beta\.1\s.*member\s+planned after its dependencies: the member does not serve ClusterIssuer \(cert-manager.io/v1\) yet`,
		`dev-2\s+kube-system/cert-manager\s+Deferred\s+install\s+cert-manager@1\.16\.0-beta\.1\s`,
		`prod-1\s+kube-system/cert-manager\s+Deferred\s+install\s+cert-manager@1\.15\.3\s`,
		`prod-1\s+apps/podinfo\s+Absent\s+install\s+podinfo@6\.5\.1\s`,
	} {
		assert.Regexp(t, regexp.MustCompile(want), got)
	}
	assert.NotContains(t, got, "error:", "the plan has no errors")

	// One Apply, dev first, then prod.
	assert.Contains(t, got, "wave dev [dev-1 dev-2]: 12 succeeded, 0 failed\n")
	assert.Contains(t, got, "wave prod [prod-1]: 6 succeeded, 0 failed\n")
	assert.Less(t, strings.Index(got, "wave dev ["), strings.Index(got, "wave prod ["))

	// On every member, each unit became ready only after what it depends
	// on, across kinds: the CRDs before cert-manager, cert-manager before
	// the apps (infrastructure waits for it), the apps Kustomization before
	// podinfo.
	chain := "Kustomization flux-system/flux-system -> Kustomization flux-system/infrastructure-crds -> " +
		"Kustomization flux-system/infrastructure -> HelmRelease kube-system/cert-manager -> " +
		"Kustomization flux-system/apps -> HelmRelease apps/podinfo\n"
	for _, m := range members {
		assert.Contains(t, got, padName(m.name)+chain)
	}

	// Flux's status of each Kustomization: its inventory holds the plain
	// objects it applied (the CRDs; a Namespace; a Namespace and the
	// Certificate), not the HelmReleases and sources the fleet runs.
	for _, want := range []string{
		`dev-1\s+flux-system/infrastructure-crds\s+Ready=True ReconciliationSucceeded, 2 objects, revision main@sha256:\w{12}\n`,
		`dev-2\s+flux-system/infrastructure\s+Ready=True ReconciliationSucceeded, 1 objects, `,
		`prod-1\s+flux-system/apps\s+Ready=True ReconciliationSucceeded, 2 objects, `,
	} {
		assert.Regexp(t, regexp.MustCompile(want), got)
	}

	// What runs: the CRDs from the Kustomization, the ClusterIssuer the
	// chart makes of them with the member's own values, the chart each
	// environment selects, podinfo with the member's variables.
	for _, want := range []string{
		"dev-1  crds certificates.cert-manager.io, clusterissuers.cert-manager.io\n",
		"dev-1  clusterissuer letsencrypt email=platform-dev@example.com dnsZones=[dev-1.dev.example.com]\n",
		"dev-2  clusterissuer letsencrypt email=platform-dev@example.com dnsZones=[dev-2.dev.example.com]\n",
		"prod-1 clusterissuer letsencrypt email=platform@example.com dnsZones=[prod-1.example.com]\n",
		"dev-2  deployment cert-manager/cert-manager chart=cert-manager-1.16.0-beta.1 replicas=1 image=quay.io/jetstack/cert-manager-controller:v1.16.0-beta.1\n",
		"prod-1 deployment cert-manager/cert-manager chart=cert-manager-1.15.3 replicas=2 image=quay.io/jetstack/cert-manager-controller:v1.15.3\n",
		"dev-1  deployment apps/podinfo chart=podinfo-6.5.1 replicas=1 ",
		"prod-1 deployment apps/podinfo chart=podinfo-6.5.1 replicas=3 ",
		"dev-2  certificate apps/podinfo dnsNames=[podinfo.dev-2.dev.example.com] (applied by Kustomization apps)\n",
		"prod-1 ingress apps/podinfo host=podinfo.prod-1.example.com\n",
	} {
		assert.Contains(t, got, want)
	}

	// Reconciling again changes nothing.
	assert.Contains(t, got, "\n== plan again: 18 units, 0 to change\n")
}

// padName pads a member name as the output's member column does.
func padName(name string) string { return name + strings.Repeat(" ", 7-len(name)) }

// copyRepo writes the embedded repository to a directory, each file
// named in edits changed by its function, as a checkout for -repo.
func copyRepo(t *testing.T, edits map[string]func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	repo := embeddedRepo(t)
	require.NoError(t, fs.WalkDir(repo, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, p), 0o755)
		}
		data, err := fs.ReadFile(repo, p)
		if err != nil {
			return err
		}
		s := string(data)
		if edit, ok := edits[p]; ok {
			edited := edit(s)
			require.NotEqual(t, s, edited, "the edit changes %s", p)
			s = edited
			delete(edits, p)
		}
		return os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644)
	}))
	require.Empty(t, edits, "files to edit that the repository does not have")
	return dir
}

func TestRunHaltsAfterABrokenDevWave(t *testing.T) {
	// Dev's patch asks for a cert-manager no repository offers: cert-manager
	// and everything after it fail on dev, the rollout halts, and prod is
	// never touched.
	dir := copyRepo(t, map[string]func(string) string{
		"infrastructure/dev/cert-manager/helmrelease-patch.yaml": func(s string) string {
			return strings.Replace(s, `version: ">=1.16.0-0"`, `version: ">=2.0.0-0"`, 1)
		},
	})
	var out bytes.Buffer
	err := run(context.Background(), os.DirFS(dir), &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dev-1:kube-system/cert-manager")
	assert.Contains(t, err.Error(), `spec.chart.spec.version: version ">=2.0.0-0" of chart cert-manager`)
	assert.Contains(t, err.Error(), "rollout halted after wave dev")
	got := out.String()
	assert.Regexp(t, `dev-1\s+Kustomization/flux-system/infrastructure-crds\s+succeeded`, got)
	assert.Regexp(t, `dev-1\s+apps/podinfo\s+skipped\s.*dependency dev-1:kube-system/cert-manager failed`, got)
	assert.Regexp(t, `prod-1\s+Kustomization/flux-system/flux-system\s+not-started`, got)
	assert.Regexp(t, `prod-1\s+kube-system/cert-manager\s+not-started`, got)
	assert.NotContains(t, got, "== what each member runs")
}

func TestDependencyAcrossKindsAlone(t *testing.T) {
	// Without Flux's workaround (infrastructure waiting for all of
	// infrastructure-crds), only cert-manager's own dependsOn on the CRD
	// Kustomization orders it after the CRDs: its chart has a
	// ClusterIssuer, planned after the CRDs (Deferred) and installed once
	// they are served, so every member having one shows the order held.
	noWorkaround := func(s string) string {
		return strings.Replace(s, "  dependsOn:\n    - name: infrastructure-crds\n", "", 1)
	}
	dir := copyRepo(t, map[string]func(string) string{
		"clusters/dev/infrastructure.yaml":  noWorkaround,
		"clusters/prod/infrastructure.yaml": noWorkaround,
	})
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), os.DirFS(dir), &out))
	got := out.String()
	for _, m := range members {
		line := regexp.MustCompile(`(?m)^` + padName(m.name) + `(Kustomization flux-system/flux-system -> .*)$`).FindStringSubmatch(got)
		require.NotNil(t, line, "the order of %s", m.name)
		order := strings.Split(line[1], " -> ")
		assert.Less(t, slices.Index(order, "Kustomization flux-system/infrastructure-crds"), slices.Index(order, "HelmRelease kube-system/cert-manager"), "on %s: %s", m.name, line[1])
		assert.True(t, strings.Contains(got, padName(m.name)+"clusterissuer letsencrypt email="),
			"%s has no ClusterIssuer: cert-manager was installed before the CRDs", m.name)
	}
}
