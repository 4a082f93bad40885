// Command realcluster installs or upgrades one small Helm release on every
// cluster named by a kubeconfig path, through release/kube, and prints a
// table of cluster, release, revision and status.
//
//	go run ./examples/realcluster -message hi ~/.kube/eu-1 ~/.kube/us-1
//
// Each cluster is named by its kubeconfig's current context. A cluster
// that fails is reported in the table; the exit status is 1 if any did.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"text/tabwriter"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kube"
)

func main() {
	namespace := flag.String("namespace", "helmfleet-demo", "namespace of the release and its records")
	name := flag.String("release", "hello", "release name")
	message := flag.String("message", "hello from helmfleet", "value of the chart's message")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: realcluster [flags] KUBECONFIG...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if !run(ctx, os.Stdout, flag.Args(), *namespace, *name, *message) {
		os.Exit(1)
	}
}

// result is one row of the table.
type result struct {
	cluster, release, status string
	revision                 int
}

// run releases on each cluster in turn, prints the table to out, and
// reports whether every cluster succeeded.
func run(ctx context.Context, out io.Writer, kubeconfigs []string, namespace, name, message string) bool {
	var rows []result
	ok := true
	for _, path := range kubeconfigs {
		r, err := releaseOn(ctx, path, namespace, name, message)
		if err != nil {
			ok = false
			r.status = "error: " + strings.ReplaceAll(err.Error(), "\n", " ")
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b result) int { return strings.Compare(a.cluster, b.cluster) })
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tRELEASE\tREVISION\tSTATUS")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", r.cluster, r.release, r.revision, r.status)
	}
	_ = w.Flush()
	return ok
}

// releaseOn installs the release on the cluster of one kubeconfig, or
// upgrades it when it exists.
func releaseOn(ctx context.Context, kubeconfig, namespace, name, message string) (result, error) {
	r := result{cluster: kubeconfig, release: name}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	if raw, err := flags.ToRawKubeConfigLoader().RawConfig(); err == nil && raw.CurrentContext != "" {
		r.cluster = raw.CurrentContext
	}
	c, err := kube.New(kube.Config{Name: r.cluster, Getter: flags, FieldManager: "realcluster"})
	if err != nil {
		return r, err
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(namespace)
	if _, err := c.Apply(ctx, ns, release.ApplyOptions{}); err != nil {
		return r, err
	}
	cfg, err := c.HelmConfig(ctx, release.HelmScope{StorageNamespace: namespace, Namespace: namespace})
	if err != nil {
		return r, err
	}
	values := map[string]any{"message": message}
	_, err = action.NewHistory(cfg).Run(name)
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound):
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace = name, namespace
		rel, err := install.RunWithContext(ctx, helloChart(), values)
		if err != nil {
			return r, err
		}
		r.revision, r.status = rel.Version, rel.Info.Status.String()
	case err != nil:
		return r, err
	default:
		upgrade := action.NewUpgrade(cfg)
		upgrade.Namespace = namespace
		rel, err := upgrade.RunWithContext(ctx, name, helloChart(), values)
		if err != nil {
			return r, err
		}
		r.revision, r.status = rel.Version, rel.Info.Status.String()
	}
	return r, nil
}

// helloChart is a one-ConfigMap chart, built in Go so that the example
// needs no files.
func helloChart() *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "hello", Version: "1.0.0"},
		Values:   map[string]any{"message": "hello"},
		Templates: []*chart.File{{Name: "templates/configmap.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  message: {{ .Values.message | quote }}
`)}},
	}
}
