package values_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/helmfleet/helmfleet/values"
	"github.com/helmfleet/helmfleet/values/valuestest"
)

// A release takes its values from the chart's values file, a ConfigMap, a
// Secret (one key placed at a target path), inline values and a per-cluster
// override; the provenance report says where each value came from and
// redacts the Secret's.
func Example() {
	cluster := valuestest.NewReader().
		ConfigMap("apps", "podinfo-values", map[string]string{
			"values.yaml": "replicaCount: 2\nimage:\n  tag: 6.5.0\n",
		}).
		Secret("apps", "podinfo-db", map[string][]byte{"password": []byte("hunter2")})

	res, err := values.Compose(context.Background(), cluster, values.Request{
		Release:   "apps/podinfo",
		Namespace: "apps",
		Files: []values.File{{Name: "values.yaml", Data: []byte(
			"replicaCount: 1\nimage:\n  repository: ghcr.io/stefanprodan/podinfo\n  tag: 6.0.0\n")}},
		From: []values.Reference{
			{Kind: values.KindConfigMap, Name: "podinfo-values"},
			{Kind: values.KindSecret, Name: "podinfo-db", ValuesKey: "password", TargetPath: "db.password"},
		},
		Inline:    map[string]any{"replicaCount": 3},
		Overrides: []values.Override{{Name: "cluster eu-1", Merge: map[string]any{"region": "eu"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(res.Provenance())
	fmt.Println(res.Explain("image.tag")[0].Source)
	// Output:
	// db.password = <redacted sha256:1f79a29f>  <- Secret/podinfo-db[password] at db.password
	// image.repository = "ghcr.io/stefanprodan/podinfo"  <- file "values.yaml"
	// image.tag = "6.5.0"  <- ConfigMap/podinfo-values[values.yaml] (overrode file "values.yaml")
	// region = "eu"  <- override "cluster eu-1"
	// replicaCount = 3  <- inline values (overrode file "values.yaml", ConfigMap/podinfo-values[values.yaml])
	// ConfigMap/podinfo-values[values.yaml]
}

// A missing Secret that is not optional is an error naming the release and
// the reference.
func ExampleCompose_missing() {
	_, err := values.Compose(context.Background(), valuestest.NewReader(), values.Request{
		Release:   "apps/podinfo",
		Namespace: "apps",
		From:      []values.Reference{{Kind: values.KindSecret, Name: "podinfo-db"}},
	})
	fmt.Println(err)
	// Output:
	// release "apps/podinfo": values from Secret/podinfo-db[values.yaml]: not found: Secret apps/podinfo-db does not exist: Secret apps/podinfo-db: not found
}

// Merge is the library's one deep merge: maps recurse, lists replace.
func ExampleMerge() {
	out := values.Merge(
		map[string]any{"image": map[string]any{"repository": "app", "tag": "1.0"}, "ports": []any{80, 443}},
		map[string]any{"image": map[string]any{"tag": "1.1"}, "ports": []any{8080}},
	)
	fmt.Println(out)
	// Output:
	// map[image:map[repository:app tag:1.1] ports:[8080]]
}

// SecretValues lists the texts that came from Secrets, so that a plan can
// mask them in rendered manifests. Booleans and texts shorter than
// MinSecretValueLength (the user "app" here) are left out: masking them would
// garble the manifest.
func ExampleResult_SecretValues() {
	cluster := valuestest.NewReader().
		Secret("apps", "podinfo-db", map[string][]byte{"values.yaml": []byte("db:\n  password: hunter2\n  port: 5432\n  tls: true\n  user: app\n")})
	res, err := values.Compose(context.Background(), cluster, values.Request{
		Release:   "apps/podinfo",
		Namespace: "apps",
		From:      []values.Reference{{Kind: values.KindSecret, Name: "podinfo-db"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	manifest := "env:\n- name: DB_URL\n  value: postgres://app:hunter2@db:5432/app\n"
	for _, s := range res.SecretValues() {
		manifest = strings.ReplaceAll(manifest, s, "***")
	}
	fmt.Println(res.SecretValues())
	fmt.Print(manifest)
	// Output:
	// [5432 hunter2]
	// env:
	// - name: DB_URL
	//   value: postgres://app:***@db:***/app
}
