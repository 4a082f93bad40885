package releasetest

import (
	"helm.sh/helm/v3/pkg/chart"
)

// Chart returns the chart the conformance suite installs: a ConfigMap
// "<release>-config" whose data.message is the value "message", and a
// Deployment "<release>-web" with "replicas" replicas of "image". Both carry
// the label app.kubernetes.io/instance=<release>. Each call returns a new
// chart the caller may change.
func Chart() *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{
			APIVersion:  chart.APIVersionV2,
			Name:        "conformance",
			Version:     "0.1.0",
			Description: "A ConfigMap and a Deployment, for releasetest.TestCluster.",
			Type:        "application",
		},
		Values: map[string]any{
			"message":  "hello",
			"replicas": 1,
			"image":    "registry.k8s.io/pause:3.10",
		},
		Templates: []*chart.File{
			{Name: "templates/configmap.yaml", Data: []byte(configMapTemplate)},
			{Name: "templates/deployment.yaml", Data: []byte(deploymentTemplate)},
		},
	}
}

const configMapTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  labels:
    app.kubernetes.io/instance: {{ .Release.Name }}
data:
  message: {{ .Values.message | quote }}
`

const deploymentTemplate = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  labels:
    app.kubernetes.io/instance: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: {{ .Release.Name }}
    spec:
      containers:
        - name: web
          image: {{ .Values.image | quote }}
`
