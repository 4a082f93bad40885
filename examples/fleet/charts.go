package main

import (
	"context"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// charts serves every chart the fleet's releases name, at the version each
// asks for, from code: podinfo is release/fleettest's small chart, the
// others are small stand-ins for cert-manager (with a CRD in crds/), the
// ingress-nginx controller and PostgreSQL. A real program resolves charts
// with package source instead.
func charts() reconcile.ChartGetter {
	return reconcile.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
		spec := rel.Spec.Chart.Spec
		var (
			ch  *chart.Chart
			err error
		)
		switch spec.Chart {
		case fleettest.PodinfoName:
			ch = fleettest.Podinfo(spec.Version)
		case "cert-manager":
			ch, err = build(spec.Chart, spec.Version, certManagerFiles)
		case "ingress-nginx":
			ch, err = build(spec.Chart, spec.Version, ingressNginxFiles)
		case "postgresql":
			ch, err = build(spec.Chart, spec.Version, postgresqlFiles)
		default:
			return nil, fmt.Errorf("release %s/%s: spec.chart.spec.chart: no chart %q in this example", rel.Namespace, rel.Name, spec.Chart)
		}
		if err != nil {
			return nil, err
		}
		return &reconcile.Chart{Chart: ch}, nil
	})
}

// build is a chart kept in code: files maps templates/…, crds/… and
// values.yaml to their text.
func build(name, version string, files map[string]string) (*chart.Chart, error) {
	c := fleettest.Chart{Name: name, Version: version, Templates: map[string]string{}, CRDs: map[string]string{}, Files: map[string]string{}}
	for p, data := range files {
		switch dir, file, _ := strings.Cut(p, "/"); dir {
		case "templates":
			c.Templates[file] = data
		case "crds":
			c.CRDs[file] = data
		default:
			c.Files[p] = data
		}
	}
	return c.Build()
}

const labels = `
  labels:
    app.kubernetes.io/name: {{ .Chart.Name }}
    app.kubernetes.io/instance: {{ .Release.Name }}
    helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}`

var certManagerFiles = map[string]string{
	"values.yaml": "replicaCount: 1\n",
	// Helm installs crds/ before the templates, and never templates them.
	"crds/certificates.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: certificates.cert-manager.io
spec:
  group: cert-manager.io
  scope: Namespaced
  names: {kind: Certificate, listKind: CertificateList, plural: certificates, singular: certificate}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`,
	"templates/serviceaccount.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}` + labels + "\n",
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}` + labels + `
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels: {app.kubernetes.io/name: {{ .Chart.Name }}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: {{ .Chart.Name }}}
    spec:
      serviceAccountName: {{ .Release.Name }}
      containers:
        - name: controller
          image: quay.io/jetstack/cert-manager-controller:v{{ .Chart.AppVersion }}
`,
}

var ingressNginxFiles = map[string]string{
	"values.yaml": "controller:\n  replicaCount: 1\n  ingressClass: nginx\n",
	"templates/ingressclass.yaml": `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: {{ .Values.controller.ingressClass }}` + labels + `
spec:
  controller: k8s.io/ingress-nginx
`,
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-controller` + labels + `
spec:
  replicas: {{ .Values.controller.replicaCount }}
  selector:
    matchLabels: {app.kubernetes.io/name: {{ .Chart.Name }}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: {{ .Chart.Name }}}
    spec:
      containers:
        - name: controller
          image: registry.k8s.io/ingress-nginx/controller:v1.10.1
          args: [--ingress-class={{ .Values.controller.ingressClass }}]
`,
	"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-controller` + labels + `
spec:
  type: ClusterIP
  selector: {app.kubernetes.io/name: {{ .Chart.Name }}}
  ports:
    - {name: http, port: 80, targetPort: 80}
    - {name: https, port: 443, targetPort: 443}
`,
}

var postgresqlFiles = map[string]string{
	"values.yaml": "storage: 8Gi\n",
	"templates/statefulset.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Release.Name }}` + labels + `
spec:
  replicas: 1
  serviceName: {{ .Release.Name }}
  selector:
    matchLabels: {app.kubernetes.io/name: {{ .Chart.Name }}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: {{ .Chart.Name }}}
    spec:
      containers:
        - name: postgresql
          image: docker.io/bitnami/postgresql:16.3.0
          ports: [{name: tcp-postgresql, containerPort: 5432}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: {{ .Values.storage }}}}
`,
	"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}` + labels + `
spec:
  selector: {app.kubernetes.io/name: {{ .Chart.Name }}}
  ports:
    - {name: tcp-postgresql, port: 5432, targetPort: 5432}
`,
}
