package values_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/values"
	"github.com/helmfleet/helmfleet/values/valuestest"
)

// benchDoc is one source of 1,000 leaves at depth 4 that overlaps the other
// sources' trees, so that every merge recurses and replaces.
func benchDoc(src int) []byte {
	root := map[string]any{}
	for j := range 1000 {
		l1 := fmt.Sprintf("group%d", j%10)
		l2 := fmt.Sprintf("svc%d", (j/10)%10)
		l3 := fmt.Sprintf("item%d", j/100)
		m1, ok := root[l1].(map[string]any)
		if !ok {
			m1 = map[string]any{}
			root[l1] = m1
		}
		m2, ok := m1[l2].(map[string]any)
		if !ok {
			m2 = map[string]any{}
			m1[l2] = m2
		}
		m3, ok := m2[l3].(map[string]any)
		if !ok {
			m3 = map[string]any{}
			m2[l3] = m3
		}
		if j%2 == 0 {
			m3[fmt.Sprintf("key%d", src%3)] = fmt.Sprintf("value-%d-%d", src, j)
		} else {
			m3[fmt.Sprintf("n%d", src%2)] = j * src
		}
	}
	b, err := yaml.Marshal(root)
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkCompose composes 10 sources of 1,000 keys each at depth 4 (two
// chart files, six ConfigMaps, a Secret, inline values) plus one targetPath
// assignment: helmfleet (with provenance, redaction bookkeeping and digest)
// against the same work done with Helm's chartutil.ReadValues,
// chartutil.MergeTables and strvals.ParseInto.
func BenchmarkCompose(b *testing.B) {
	docs := make([][]byte, 10)
	for i := range docs {
		docs[i] = benchDoc(i)
	}
	inline, err := chartutil.ReadValues(docs[9])
	if err != nil {
		b.Fatal(err)
	}
	r := valuestest.NewReader().Secret(ns, "secret", map[string][]byte{"values.yaml": docs[8], "token": []byte("abc")})
	req := values.Request{Release: "apps/bench", Namespace: ns, Inline: inline,
		Files: []values.File{{Name: "values.yaml", Data: docs[0]}, {Name: "values-prod.yaml", Data: docs[1]}}}
	for i := 2; i < 8; i++ {
		name := fmt.Sprintf("cm%d", i)
		r.ConfigMap(ns, name, map[string]string{"values.yaml": string(docs[i])})
		req.From = append(req.From, values.Reference{Kind: values.KindConfigMap, Name: name})
	}
	req.From = append(req.From,
		values.Reference{Kind: values.KindSecret, Name: "secret"},
		values.Reference{Kind: values.KindSecret, Name: "secret", ValuesKey: "token", TargetPath: "group1.svc2.item3.token"})
	ctx := context.Background()

	b.Run("helmfleet", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := values.Compose(ctx, r, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("helm-sdk", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			acc := map[string]any{}
			for i := range 9 {
				doc, err := chartutil.ReadValues(docs[i])
				if err != nil {
					b.Fatal(err)
				}
				acc = chartutil.MergeTables(doc, acc)
			}
			acc = chartutil.MergeTables(copyValues(inline), acc)
			if err := strvals.ParseInto("group1.svc2.item3.token=abc", acc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// reportCPU adds cpu-ns/op, the process CPU time per operation (GC
// included): on a shared machine it varies less than wall time.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// copyValues is the deep copy the baseline needs so that merging does not
// write into the inline values of the next iteration.
func copyValues(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if vm, ok := v.(map[string]any); ok {
			out[k] = copyValues(vm)
			continue
		}
		out[k] = v
	}
	return out
}

// manyRefsRequest is a release with n valuesFrom references, the shape of
// issue 17: every reference overrides the same two keys (so each key's
// history grows with n) and adds one key of its own; every tenth reads a
// Secret and every seventh assigns at a targetPath.
func manyRefsRequest(n int) (*valuestest.Reader, values.Request) {
	r := valuestest.NewReader()
	req := values.Request{Release: "apps/many", Namespace: ns}
	const perObject = 100
	cms := map[string]map[string]string{}
	secrets := map[string]map[string][]byte{}
	for i := range n {
		obj := fmt.Sprintf("obj-%d", i/perObject)
		key := fmt.Sprintf("k%d", i%perObject)
		doc := fmt.Sprintf("common:\n  replicas: %d\n  tag: v-%d\nsvc%d:\n  enabled: true\n", i, i, i)
		ref := values.Reference{Kind: values.KindConfigMap, Name: obj, ValuesKey: key}
		if i%7 == 3 {
			doc = fmt.Sprintf("value-%d", i)
			ref.TargetPath = fmt.Sprintf("targets.t%d", i%50)
		}
		if i%10 == 0 {
			ref.Kind = values.KindSecret
			if secrets[obj] == nil {
				secrets[obj] = map[string][]byte{}
			}
			secrets[obj][key] = []byte(doc)
		} else {
			if cms[obj] == nil {
				cms[obj] = map[string]string{}
			}
			cms[obj][key] = doc
		}
		req.From = append(req.From, ref)
	}
	for name, data := range cms {
		r.ConfigMap(ns, name, data)
	}
	for name, data := range secrets {
		r.Secret(ns, name, data)
	}
	return r, req
}

// BenchmarkComposeManyRefs composes releases with 5,000 and 10,000
// valuesFrom references and builds their provenance: the cost must grow
// linearly (issue 17 measured 13 s and 3.5 GB for 10,000).
func BenchmarkComposeManyRefs(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{5000, 10000} {
		r, req := manyRefsRequest(n)
		req.Limits.MaxReferences = n
		b.Run(fmt.Sprintf("refs=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				res, err := values.Compose(ctx, r, req)
				if err != nil {
					b.Fatal(err)
				}
				if res.Provenance() == nil {
					b.Fatal("no provenance")
				}
			}
		})
	}
}
