package drift_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/wI2L/jsondiff"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/drift"
)

// benchPairs is a release-sized fleet: n objects, half Deployments with
// managedFields, server defaults and status, half ConfigMaps of 1–64 KB,
// every 100th live object drifted (1%).
type benchPairs struct {
	desired, live []*unstructured.Unstructured
	// dryRun is what Flux compares live with: the server-side apply
	// dry-run result, i.e. live with the desired fields restored.
	dryRun  []*unstructured.Unstructured
	drifted int
}

func makeBenchPairs(n int) *benchPairs {
	rng := rand.New(rand.NewPCG(42, 6))
	p := &benchPairs{}
	for i := 0; i < n; i++ {
		var d *unstructured.Unstructured
		if i%2 == 0 {
			d = benchDeployment(rng, i)
		} else {
			d = benchConfigMap(rng, i)
		}
		truth := benchLive(d)
		live := cloneObject(truth)
		if i%100 == 99 {
			p.drifted++
			if d.GetKind() == "Deployment" {
				c := live.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
				c["image"] = "registry.example.com/hotfix:" + fmt.Sprint(i)
			} else {
				live.Object["data"].(map[string]any)["key-0"] = "edited by hand"
			}
		}
		if d.GetKind() == "Deployment" {
			// Scaled by an HPA: ignored by the rule, not drift.
			live.Object["spec"].(map[string]any)["replicas"] = int64(3 + i%5)
		}
		// Decoded from a manifest: its own memory, like live's.
		p.desired = append(p.desired, cloneObject(d))
		p.live = append(p.live, live)
		p.dryRun = append(p.dryRun, cloneObject(truth))
	}
	return p
}

// cloneObject deep-copies an object including its strings, as two reads
// from an API server would give (no shared memory).
func cloneObject(u *unstructured.Unstructured) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: cloneValue(u.Object).(map[string]any)}
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[strings.Clone(k)] = cloneValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	case string:
		return strings.Clone(x)
	}
	return v
}

func benchMeta(kind, name string, rng *rand.Rand) map[string]any {
	return map[string]any{
		"name":      name,
		"namespace": fmt.Sprintf("team-%d", rng.IntN(20)),
		"labels": map[string]any{
			"app.kubernetes.io/name":       name,
			"app.kubernetes.io/instance":   "fleet",
			"app.kubernetes.io/managed-by": "Helm",
			"helm.sh/chart":                "fleet-1.4.2",
		},
		"annotations": map[string]any{
			"meta.helm.sh/release-name":      "fleet",
			"meta.helm.sh/release-namespace": "fleet-system",
		},
	}
}

func benchDeployment(rng *rand.Rand, i int) *unstructured.Unstructured {
	name := fmt.Sprintf("svc-%05d", i)
	var env []any
	for j := 0; j < 3+rng.IntN(10); j++ {
		env = append(env, map[string]any{"name": fmt.Sprintf("VAR_%d", j), "value": fmt.Sprintf("value-%d-%d", i, rng.IntN(1000))})
	}
	container := map[string]any{
		"name":  "app",
		"image": fmt.Sprintf("registry.example.com/%s:1.%d.%d", name, rng.IntN(10), rng.IntN(30)),
		"args":  []any{"--port=8080", "--log-level=info"},
		"ports": []any{map[string]any{"name": "http", "containerPort": int64(8080)}, map[string]any{"name": "metrics", "containerPort": int64(9090)}},
		"env":   env,
		"resources": map[string]any{
			"limits":   map[string]any{"memory": "512Mi"},
			"requests": map[string]any{"cpu": "0.25", "memory": "256Mi"},
		},
		"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/readyz", "port": "http"}, "periodSeconds": int64(5)},
		"livenessProbe":  map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": "http"}},
		"volumeMounts":   []any{map[string]any{"name": "config", "mountPath": "/etc/app"}},
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   benchMeta("Deployment", name, rng),
		"spec": map[string]any{
			"replicas": int64(2),
			"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": name}},
				"spec": map[string]any{
					"serviceAccountName": name,
					"containers":         []any{container},
					"volumes":            []any{map[string]any{"name": "config", "configMap": map[string]any{"name": name}}},
				},
			},
		},
	}}
}

func benchConfigMap(rng *rand.Rand, i int) *unstructured.Unstructured {
	size := 1024 + rng.IntN(63*1024)
	data := map[string]any{}
	for k := 0; size > 0; k++ {
		var b strings.Builder
		chunk := min(size, 4096)
		for b.Len() < chunk {
			fmt.Fprintf(&b, "setting.%d.%d = %x\n", k, b.Len(), rng.Uint64())
		}
		data[fmt.Sprintf("key-%d", k)] = b.String()
		size -= b.Len()
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   benchMeta("ConfigMap", fmt.Sprintf("cfg-%05d", i), rng),
		"data":       data,
	}}
}

// benchLive is desired as an API server returns it: defaults, status,
// server metadata and managedFields.
func benchLive(d *unstructured.Unstructured) *unstructured.Unstructured {
	l := cloneObject(d)
	md := l.Object["metadata"].(map[string]any)
	md["uid"] = "0b6f5a4c-3d2e-4f10-8e9d-7c6b5a4f3e2d"
	md["resourceVersion"] = "48213"
	md["creationTimestamp"] = "2026-11-30T09:12:44Z"
	entries := []any{map[string]any{
		"manager": "helm-controller", "operation": "Apply", "apiVersion": d.GetAPIVersion(),
		"time": "2026-11-30T09:12:44Z", "fieldsType": "FieldsV1", "fieldsV1": fieldSet(d.Object, ""),
	}}
	if d.GetKind() == "Deployment" {
		md["generation"] = int64(3)
		md["annotations"].(map[string]any)["deployment.kubernetes.io/revision"] = "3"
		spec := l.Object["spec"].(map[string]any)
		spec["progressDeadlineSeconds"] = int64(600)
		spec["revisionHistoryLimit"] = int64(10)
		spec["strategy"] = map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}}
		pod := spec["template"].(map[string]any)["spec"].(map[string]any)
		pod["dnsPolicy"] = "ClusterFirst"
		pod["restartPolicy"] = "Always"
		pod["schedulerName"] = "default-scheduler"
		pod["securityContext"] = map[string]any{}
		pod["terminationGracePeriodSeconds"] = int64(30)
		c := pod["containers"].([]any)[0].(map[string]any)
		c["imagePullPolicy"] = "IfNotPresent"
		c["terminationMessagePath"] = "/dev/termination-log"
		c["terminationMessagePolicy"] = "File"
		c["resources"].(map[string]any)["requests"].(map[string]any)["cpu"] = "250m"
		for _, p := range c["ports"].([]any) {
			p.(map[string]any)["protocol"] = "TCP"
		}
		for _, probe := range []string{"readinessProbe", "livenessProbe"} {
			pr := c[probe].(map[string]any)
			pr["httpGet"].(map[string]any)["scheme"] = "HTTP"
			pr["failureThreshold"], pr["successThreshold"], pr["timeoutSeconds"] = int64(3), int64(1), int64(1)
			if _, ok := pr["periodSeconds"]; !ok {
				pr["periodSeconds"] = int64(10)
			}
		}
		pod["volumes"].([]any)[0].(map[string]any)["configMap"].(map[string]any)["defaultMode"] = int64(420)
		l.Object["status"] = map[string]any{"availableReplicas": int64(2), "observedGeneration": int64(3), "readyReplicas": int64(2),
			"replicas": int64(2), "updatedReplicas": int64(2), "conditions": []any{
				map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
				map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}}}
		entries = append(entries, map[string]any{
			"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1", "subresource": "status",
			"fieldsType": "FieldsV1", "fieldsV1": map[string]any{
				"f:metadata": map[string]any{"f:annotations": map[string]any{"f:deployment.kubernetes.io/revision": map[string]any{}}},
				"f:status":   fieldSet(l.Object["status"], ""),
			}})
	}
	md["managedFields"] = entries
	return l
}

// fieldSet renders a value as a fieldsV1 set, keying containers, env,
// ports, volumes and mounts as the API server does.
func fieldSet(v any, field string) map[string]any {
	out := map[string]any{}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "apiVersion" || k == "kind" || k == "status" && field == "" {
				continue
			}
			out["f:"+k] = fieldSet(e, k)
		}
	case []any:
		key := map[string]string{"containers": "name", "env": "name", "volumes": "name", "volumeMounts": "mountPath", "ports": "containerPort", "conditions": "type"}[field]
		if key == "" {
			return out
		}
		for _, e := range x {
			m := e.(map[string]any)
			k := fmt.Sprintf(`k:{"%s":%q}`, key, fmt.Sprint(m[key]))
			if field == "ports" {
				k = fmt.Sprintf(`k:{"containerPort":%v,"protocol":"TCP"}`, m[key])
			}
			set := fieldSet(m, "")
			set["."] = map[string]any{}
			out[k] = set
		}
	}
	return out
}

// jsondiffInput is one pair prepared the way Flux's jsondiff.Unstructured
// prepares it, before the timer starts: ignored paths removed from both
// sides, labels/annotations split from the rest, metadata and status
// dropped.
type jsondiffInput struct {
	liveMeta, dryMeta, liveRest, dryRest map[string]any
}

func prepareJSONDiff(p *benchPairs, native bool) []jsondiffInput {
	out := make([]jsondiffInput, len(p.live))
	for i := range p.live {
		split := func(u *unstructured.Unstructured) (map[string]any, map[string]any) {
			c := cloneObject(u).Object
			md := c["metadata"].(map[string]any)
			meta := map[string]any{"metadata": map[string]any{"labels": md["labels"], "annotations": md["annotations"]}}
			delete(c, "metadata")
			delete(c, "status")
			if u.GetKind() == "Deployment" {
				delete(c["spec"].(map[string]any), "replicas")
			}
			if native {
				return jsonNative(meta).(map[string]any), jsonNative(c).(map[string]any)
			}
			return meta, c
		}
		var in jsondiffInput
		in.liveMeta, in.liveRest = split(p.live[i])
		in.dryMeta, in.dryRest = split(p.dryRun[i])
		out[i] = in
	}
	return out
}

// jsonNative converts int64 to float64, as encoding/json would decode.
func jsonNative(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonNative(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jsonNative(e)
		}
	case int64:
		return float64(x)
	}
	return v
}

func jsondiffDrifted(b *testing.B, in []jsondiffInput, compare func(a, b any) (jsondiff.Patch, error)) int {
	drifted := 0
	for i := range in {
		meta, err := compare(in[i].liveMeta, in[i].dryMeta)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, op := range meta {
			if op.Type == jsondiff.OperationAdd || op.Type == jsondiff.OperationReplace {
				n++
			}
		}
		rest, err := compare(in[i].liveRest, in[i].dryRest)
		if err != nil {
			b.Fatal(err)
		}
		if n+len(rest) > 0 {
			drifted++
		}
	}
	return drifted
}

// BenchmarkDetect compares 10,000 pairs per op. helmfleet runs all of
// Detect (matching, rules, comparison, report); jsondiff runs only the
// two jsondiff.Compare calls per pair that Flux makes, on inputs already
// filtered outside the timer; jsondiff-nomarshal skips jsondiff's
// marshalling round trip too.
func BenchmarkDetect(b *testing.B) {
	const n = 10000
	p := makeBenchPairs(n)
	cfg, err := drift.Compile([]drift.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &drift.Selector{Kind: "Deployment"}}},
		drift.Options{Mode: drift.ModeEnabled})
	if err != nil {
		b.Fatal(err)
	}
	// perPair reports wall and CPU time per pair; start is processCPU()
	// taken before the loop.
	perPair := func(b *testing.B, start time.Duration) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/pair")
		b.ReportMetric(float64((processCPU()-start).Nanoseconds())/float64(b.N)/n, "cpu-ns/pair")
	}
	// Like the jsondiff inputs below, the pairs are copied pair by pair
	// right before use, so both sides read memory laid out the same way.
	desired, live := make([]*unstructured.Unstructured, n), make([]*unstructured.Unstructured, n)
	for i := range desired {
		desired[i], live[i] = cloneObject(p.desired[i]), cloneObject(p.live[i])
	}
	b.Run("helmfleet", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU()
		for b.Loop() {
			rep, err := drift.Detect(desired, live, cfg)
			if err != nil {
				b.Fatal(err)
			}
			if got := rep.Count(drift.StatusModified); got != p.drifted {
				b.Fatalf("modified = %d, want %d", got, p.drifted)
			}
		}
		perPair(b, cpu)
	})
	in := prepareJSONDiff(p, false)
	b.Run("jsondiff", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU()
		for b.Loop() {
			if got := jsondiffDrifted(b, in, func(x, y any) (jsondiff.Patch, error) { return jsondiff.Compare(x, y, jsondiff.Rationalize()) }); got != p.drifted {
				b.Fatalf("drifted = %d, want %d", got, p.drifted)
			}
		}
		perPair(b, cpu)
	})
	native := prepareJSONDiff(p, true)
	b.Run("jsondiff-nomarshal", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU()
		for b.Loop() {
			if got := jsondiffDrifted(b, native, func(x, y any) (jsondiff.Patch, error) {
				return jsondiff.CompareWithoutMarshal(x, y, jsondiff.Rationalize())
			}); got != p.drifted {
				b.Fatalf("drifted = %d, want %d", got, p.drifted)
			}
		}
		perPair(b, cpu)
	})
}

// keyedListPair is a Deployment with n containers and its live copy with
// the containers in reverse order, managedFields keyed by name, and the
// image of every 100th container changed by hand.
func keyedListPair(n int) (desired, live *unstructured.Unstructured, drifted int) {
	containers := make([]any, n)
	for i := range containers {
		containers[i] = map[string]any{
			"name":  fmt.Sprintf("c-%05d", i),
			"image": fmt.Sprintf("registry.example.com/c-%05d:1.0", i),
			"env":   []any{map[string]any{"name": "INDEX", "value": fmt.Sprint(i)}},
			"ports": []any{map[string]any{"containerPort": int64(8000 + i%1000)}},
		}
	}
	desired = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "wide", "namespace": "shop"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": containers,
		}}},
	}}
	live = cloneObject(desired)
	lc := containersOf(live)
	for i, j := 0, len(lc)-1; i < j; i, j = i+1, j-1 {
		lc[i], lc[j] = lc[j], lc[i]
	}
	for i, c := range lc {
		if i%100 == 99 {
			c.(map[string]any)["image"] = "registry.example.com/hotfix:2.0"
			drifted++
		}
	}
	live.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{
		"manager": "helm-controller", "operation": "Apply", "apiVersion": "apps/v1",
		"fieldsType": "FieldsV1", "fieldsV1": fieldSet(desired.Object, ""),
	}}
	return desired, live, drifted
}

// BenchmarkDetectKeyedList detects drift in a Deployment whose live
// containers are the desired ones reversed, at two sizes in one run: with
// keyed lists matched through an index, twice the containers cost about
// twice the time and bytes (it was quadratic: 2.1 s at 4,000 containers).
//
// The input (desired, live and its managed fields) takes about 22 MB at
// 5,000 containers and 45 MB at 10,000: the smaller may fit in the
// last-level cache, the larger does not, so the warm ratio of the two
// sizes moves with how much of a shared cache the machine leaves us.
// cold/containers=n measures the same with the caches flushed before each
// op, both sizes reading from memory: the doubling of the algorithm under
// equal conditions.
//
// floor/containers=n is the physical floor beside it: the same two lists
// compared element by element by a plain deep equality that is told the
// pairing (live is desired reversed), allocating nothing: what reading
// both lists once costs on this machine; its own ratio of the two sizes
// shows how much of Detect's is the memory hierarchy rather than its
// algorithm.
func BenchmarkDetectKeyedList(b *testing.B) {
	cfg, err := drift.Compile(nil, drift.Options{Mode: drift.ModeEnabled})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{5000, 10000} {
		desired, live, drifted := keyedListPair(n)
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				rep, err := drift.Detect([]*unstructured.Unstructured{desired}, []*unstructured.Unstructured{live}, cfg)
				if err != nil {
					b.Fatal(err)
				}
				if got := len(rep.Objects[0].Changes); got != drifted {
					b.Fatalf("changes = %d, want %d", got, drifted)
				}
			}
			// On a shared machine, CPU time shows the scaling better than wall
			// time, which includes waiting for a CPU.
			b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
		// The same from a cold cache: before each op (timer stopped) the
		// caches are flushed, so both sizes read their input from memory,
		// as a Detect of objects this large does in a controller that
		// fetched and rendered other things in between. Warm, the smaller
		// input fits in the last-level cache and the larger does not.
		b.Run(fmt.Sprintf("cold/containers=%d", n), func(b *testing.B) {
			flush := make([]byte, flushBytes)
			b.ReportAllocs()
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				evictCaches(flush)
				start := processCPU()
				b.StartTimer()
				rep, err := drift.Detect([]*unstructured.Unstructured{desired}, []*unstructured.Unstructured{live}, cfg)
				b.StopTimer()
				cpu += processCPU() - start
				b.StartTimer()
				if err != nil {
					b.Fatal(err)
				}
				if got := len(rep.Objects[0].Changes); got != drifted {
					b.Fatalf("changes = %d, want %d", got, drifted)
				}
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
		b.Run(fmt.Sprintf("floor/containers=%d", n), func(b *testing.B) {
			dc := containersOf(desired)
			lc := containersOf(live)
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				changed := 0
				for j := range dc {
					if !plainEqual(dc[j], lc[len(lc)-1-j]) {
						changed++
					}
				}
				if changed != drifted {
					b.Fatalf("changed = %d, want %d", changed, drifted)
				}
			}
			b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// flushBytes is what evictCaches writes: four times the largest
// last-level cache of the machines the benchmarks run on (32 MB).
const flushBytes = 128 << 20

// evictCaches writes one byte of every cache line of buf, pushing what the
// caches held out to memory.
func evictCaches(buf []byte) {
	for i := 0; i < len(buf); i += 64 {
		buf[i]++
	}
}

func containersOf(u *unstructured.Unstructured) []any {
	return u.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
}

// plainEqual is the least a comparison of two decoded JSON values does:
// each key of one looked up in the other, strings and integers compared.
func plainEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !plainEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !plainEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case string:
		y, ok := b.(string)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	}
	return false
}
