package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
)

var (
	crdGVK           = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	deploymentGVK    = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	clusterIssuerGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "ClusterIssuer"}
	certificateGVK   = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}
	ingressGVK       = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}
)

// describe says what a member runs, one line per thing: the CRDs,
// cert-manager's ClusterIssuer with the member's own values, the
// Deployments with the chart that made them and podinfo's Certificate and
// Ingress host.
func describe(ctx context.Context, c *memory.Cluster) ([]string, error) {
	var lines []string
	crds, err := c.List(ctx, crdGVK, "", nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, crd := range crds {
		names = append(names, crd.GetName())
	}
	lines = append(lines, "crds "+strings.Join(names, ", "))

	get := func(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
		u, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: gvk, Namespace: namespace, Name: name})
		if errors.Is(err, release.ErrNotFound) {
			return nil, nil
		}
		return u, err
	}
	if ci, err := get(clusterIssuerGVK, "", "letsencrypt"); err != nil {
		return nil, err
	} else if ci != nil {
		email, _, _ := unstructured.NestedString(ci.Object, "spec", "acme", "email")
		solvers, _, _ := unstructured.NestedSlice(ci.Object, "spec", "acme", "solvers")
		var zones []any
		if len(solvers) > 0 {
			zones, _, _ = unstructured.NestedSlice(solvers[0].(map[string]any), "selector", "dnsZones")
		}
		lines = append(lines, fmt.Sprintf("clusterissuer letsencrypt email=%s dnsZones=%v", email, zones))
	}
	for _, d := range []struct{ namespace, name string }{{"cert-manager", "cert-manager"}, {"apps", "podinfo"}} {
		dep, err := get(deploymentGVK, d.namespace, d.name)
		if err != nil {
			return nil, err
		}
		if dep == nil {
			continue
		}
		n, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
		cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
		image, _, _ := unstructured.NestedString(cs[0].(map[string]any), "image")
		lines = append(lines, fmt.Sprintf("deployment %s/%s chart=%s replicas=%d image=%s", d.namespace, d.name, dep.GetLabels()["helm.sh/chart"], n, image))
	}
	if cert, err := get(certificateGVK, "apps", "podinfo"); err != nil {
		return nil, err
	} else if cert != nil {
		dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
		lines = append(lines, fmt.Sprintf("certificate apps/podinfo dnsNames=%v (applied by Kustomization %s)", dns, cert.GetLabels()["kustomize.toolkit.fluxcd.io/name"]))
	}
	if ing, err := get(ingressGVK, "apps", "podinfo"); err != nil {
		return nil, err
	} else if ing != nil {
		rules, _, _ := unstructured.NestedSlice(ing.Object, "spec", "rules")
		host, _, _ := unstructured.NestedString(rules[0].(map[string]any), "host")
		lines = append(lines, "ingress apps/podinfo host="+host)
	}
	return lines, nil
}
