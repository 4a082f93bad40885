package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/crds"
	"github.com/helmfleet/helmfleet/source"
)

// TestFluxKindsOnAPIServer installs the CRDs of release/crds on the hub
// and, through typed clients built on release.AddToScheme and
// source.AddToScheme alone, creates every HelmRelease, HelmRepository,
// OCIRepository and HelmChart of Flux's samples and test data and of our
// decode test data (older versions as Decode converts them), reads each
// back, writes a status through the status subresource, and checks that
// every object reads back as it was written: spec, labels, annotations and
// status, field for field, with the status ignored on create and on
// update of the main resource. It also lists each kind with its List type
// and reads Flux's printer columns from the API server's table.
func TestFluxKindsOnAPIServer(t *testing.T) {
	cp := controlPlane(t, "hub")
	installCRDs(t, cp.Admin)

	scheme := runtime.NewScheme()
	require.NoError(t, release.AddToScheme(scheme))
	require.NoError(t, source.AddToScheme(scheme))
	const ns = "flux-kinds"
	namespace(t, admin(t, "hub"), ns)

	releases := newKindClient(t, cp.Admin, scheme, release.GroupVersion, "helmreleases", ns,
		func() *release.Release { return &release.Release{} }, func() *release.ReleaseList { return &release.ReleaseList{} },
		func(l *release.ReleaseList) int { return len(l.Items) },
		func(r *release.Release) bool { return !reflectZero(r.Status) },
		func(r *release.Release) { r.Status = releaseStatus(r.Generation) })
	repos := newKindClient(t, cp.Admin, scheme, source.GroupVersion, "helmrepositories", ns,
		func() *source.HelmRepository { return &source.HelmRepository{} }, func() *source.HelmRepositoryList { return &source.HelmRepositoryList{} },
		func(l *source.HelmRepositoryList) int { return len(l.Items) },
		func(r *source.HelmRepository) bool { return !reflectZero(r.Status) },
		func(r *source.HelmRepository) {
			r.Status = source.HelmRepositoryStatus{ObservedGeneration: r.Generation, Conditions: readyConditions(r.Generation),
				URL: "http://source-controller/helmrepository/" + r.Name + "/index.yaml", Artifact: artifact("index.yaml")}
		})
	ocis := newKindClient(t, cp.Admin, scheme, source.GroupVersion, "ocirepositories", ns,
		func() *source.OCIRepository { return &source.OCIRepository{} }, func() *source.OCIRepositoryList { return &source.OCIRepositoryList{} },
		func(l *source.OCIRepositoryList) int { return len(l.Items) },
		func(r *source.OCIRepository) bool { return !reflectZero(r.Status) },
		func(r *source.OCIRepository) {
			ignore := "*.md"
			r.Status = source.OCIRepositoryStatus{ObservedGeneration: r.Generation, Conditions: readyConditions(r.Generation),
				URL: "http://source-controller/ocirepository/" + r.Name + "/latest.tar.gz", Artifact: artifact("chart.tgz"),
				ObservedIgnore: &ignore, ObservedLayerSelector: &source.OCILayerSelector{MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Operation: "copy"},
				ReconcileRequestStatus: source.ReconcileRequestStatus{LastHandledReconcileAt: "2026-12-04T10:00:00Z"}}
		})
	charts := newKindClient(t, cp.Admin, scheme, source.GroupVersion, "helmcharts", ns,
		func() *source.HelmChart { return &source.HelmChart{} }, func() *source.HelmChartList { return &source.HelmChartList{} },
		func(l *source.HelmChartList) int { return len(l.Items) },
		func(r *source.HelmChart) bool { return !reflectZero(r.Status) },
		func(r *source.HelmChart) {
			r.Status = source.HelmChartStatus{ObservedGeneration: r.Generation, ObservedSourceArtifactRevision: "sha256:" + strings.Repeat("ab", 32),
				ObservedChartName: r.Spec.Chart, ObservedValuesFiles: []string{"values.yaml"}, Conditions: readyConditions(r.Generation),
				URL: "http://source-controller/helmchart/" + r.Name + "/chart.tgz", Artifact: artifact("chart.tgz")}
		})

	objs := fluxObjects(t)
	for i, o := range objs.Releases {
		prepare(o, ns, i)
		t.Run("HelmRelease/"+o.Name, func(t *testing.T) { roundTripOnServer(t, releases, o) })
	}
	for i, o := range objs.HelmRepositories {
		prepare(o, ns, i)
		t.Run("HelmRepository/"+o.Name, func(t *testing.T) { roundTripOnServer(t, repos, o) })
	}
	for i, o := range objs.OCIRepositories {
		prepare(o, ns, i)
		t.Run("OCIRepository/"+o.Name, func(t *testing.T) { roundTripOnServer(t, ocis, o) })
	}
	for i, o := range objs.HelmCharts {
		prepare(o, ns, i)
		t.Run("HelmChart/"+o.Name, func(t *testing.T) { roundTripOnServer(t, charts, o) })
	}
	t.Logf("round-tripped %d HelmReleases, %d HelmRepositories, %d OCIRepositories, %d HelmCharts",
		len(objs.Releases), len(objs.HelmRepositories), len(objs.OCIRepositories), len(objs.HelmCharts))

	// Each kind lists with its List type, and the API server prints
	// Flux's columns with the status written above.
	releases.assertListed(t, len(objs.Releases), []string{"Name", "Age", "Ready", "Status"})
	repos.assertListed(t, len(objs.HelmRepositories), []string{"Name", "URL", "Age", "Ready", "Status"})
	ocis.assertListed(t, len(objs.OCIRepositories), []string{"Name", "URL", "Ready", "Status", "Age"})
	charts.assertListed(t, len(objs.HelmCharts), []string{"Name", "Chart", "Version", "Source Kind", "Source Name", "Age", "Ready", "Status"})
}

// installCRDs creates every CRD of release/crds and waits until the API
// server serves them; they are deleted when the test ends.
func installCRDs(t *testing.T, cfg *rest.Config) {
	t.Helper()
	c, err := apiextensionsclient.NewForConfig(cfg)
	require.NoError(t, err)
	crdClient := c.ApiextensionsV1().CustomResourceDefinitions()
	for _, name := range crds.Names() {
		data, err := fs.ReadFile(crds.FS(), name)
		require.NoError(t, err)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, yaml.UnmarshalStrict(data, crd), name)
		_, err = crdClient.Create(ctx(t), crd, metav1.CreateOptions{})
		require.NoError(t, err, "create %s", crd.Name)
		t.Cleanup(func() {
			// t.Context is done by the time cleanups run.
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := crdClient.Delete(cctx, crd.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete CRD %s: %v", crd.Name, err)
			}
		})
		err = wait.PollUntilContextTimeout(ctx(t), 100*time.Millisecond, 30*time.Second, true, func(ctx2 context.Context) (bool, error) {
			got, err := crdClient.Get(ctx2, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		require.NoError(t, err, "CRD %s not established", crd.Name)
	}
}

// apiObject is what a typed client takes: a runtime.Object with metadata.
type apiObject interface {
	runtime.Object
	metav1.Object
}

// kindClient is a typed client of one kind, built on the scheme alone,
// with what the test needs to know of the kind's status.
type kindClient[T apiObject, L runtime.Object] struct {
	*gentype.ClientWithList[T, L]
	rest      rest.Interface
	resource  string
	namespace string
	count     func(L) int
	hasStatus func(T) bool
	setStatus func(T)
	// ready is the status of the Ready condition written, by name; nil
	// where no Ready condition was written.
	ready map[string]any
}

func newKindClient[T apiObject, L runtime.Object](t *testing.T, admin *rest.Config, scheme *runtime.Scheme,
	gv schema.GroupVersion, resource, namespace string, newObj func() T, newList func() L,
	count func(L) int, hasStatus func(T) bool, setStatus func(T),
) *kindClient[T, L] {
	t.Helper()
	cfg := rest.CopyConfig(admin)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	require.NoError(t, err)
	c := gentype.NewClientWithList[T, L](resource, rc, runtime.NewParameterCodec(scheme), namespace, newObj, newList)
	return &kindClient[T, L]{ClientWithList: c, rest: rc, resource: resource, namespace: namespace,
		count: count, hasStatus: hasStatus, setStatus: setStatus, ready: map[string]any{}}
}

// roundTripOnServer creates sent, reads it back, writes a status through
// the status subresource and checks each answer against what was sent.
func roundTripOnServer[T apiObject, L runtime.Object](t *testing.T, c *kindClient[T, L], sent T) {
	// The status to write: the sample's own, or one as Flux would write.
	withStatus := sent.DeepCopyObject().(T)
	if !c.hasStatus(withStatus) {
		c.setStatus(withStatus)
	}
	wantStatus := fields(t, withStatus)["status"]
	c.ready[sent.GetName()] = readyOf(wantStatus)

	created, err := c.Create(ctx(t), sent.DeepCopyObject().(T), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), created.GetGeneration())
	assert.Equal(t, withoutServerFields(t, sent), withoutServerFields(t, created), "created as sent")
	assert.Empty(t, fields(t, created)["status"], "status is not written on create")

	got, err := c.Get(ctx(t), sent.GetName(), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, fields(t, created), fields(t, got), "read back as created")

	// Write the status through the subresource.
	update := got.DeepCopyObject().(T)
	setStatusFrom(t, update, wantStatus)
	updated, err := c.UpdateStatus(ctx(t), update, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, wantStatus, fields(t, updated)["status"], "status written")
	assert.Equal(t, int64(1), updated.GetGeneration(), "a status update is no new generation")

	got, err = c.Get(ctx(t), sent.GetName(), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, withoutServerFields(t, sent), withoutServerFields(t, got), "spec and metadata unchanged")
	assert.Equal(t, wantStatus, fields(t, got)["status"], "status read back as written")

	// The main resource ignores a status change.
	update = got.DeepCopyObject().(T)
	setStatusFrom(t, update, map[string]any{"observedGeneration": 42})
	updated, err = c.Update(ctx(t), update, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, wantStatus, fields(t, updated)["status"], "the main resource does not write the status")
}

// assertListed lists the kind with its List type and reads the API
// server's table of it: Flux's columns, and in the Ready column the
// status of each object's Ready condition as written.
func (c *kindClient[T, L]) assertListed(t *testing.T, n int, columns []string) {
	t.Helper()
	list, err := c.List(ctx(t), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, n, c.count(list), "%s listed", c.resource)

	raw, err := c.rest.Get().Namespace(c.namespace).Resource(c.resource).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx(t)).Raw()
	require.NoError(t, err)
	var table metav1.Table
	require.NoError(t, json.Unmarshal(raw, &table))
	var names []string
	ready := -1
	for i, col := range table.ColumnDefinitions {
		names = append(names, col.Name)
		if col.Name == "Ready" {
			ready = i
		}
	}
	assert.Equal(t, columns, names, "%s columns", c.resource)
	require.Len(t, table.Rows, n)
	require.GreaterOrEqual(t, ready, 0)
	for _, row := range table.Rows {
		var meta metav1.PartialObjectMetadata
		require.NoError(t, json.Unmarshal(row.Object.Raw, &meta))
		want, ok := c.ready[meta.Name]
		require.True(t, ok, "%s: row of an object not written: %s", c.resource, meta.Name)
		assert.Equal(t, want, row.Cells[ready], "%s %s: Ready column", c.resource, meta.Name)
	}
}

// readyOf returns the status of the Ready condition in status, as JSON
// fields, or nil, as the table's cell is when there is none.
func readyOf(status any) any {
	st, _ := status.(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		if c, ok := c.(map[string]any); ok && c["type"] == "Ready" {
			return c["status"]
		}
	}
	return nil
}

// fluxObjects decodes the objects of modeled kinds from Flux's samples
// and test data (release/crds/testdata/flux) and from our decode test
// data, skipping other kinds and the Flux guide's abbreviated fragments.
func fluxObjects(t *testing.T) *release.Objects {
	t.Helper()
	all := &release.Objects{}
	var files []string
	for _, glob := range []string{
		"../../release/crds/testdata/flux/*/*.yaml",
		"../../release/testdata/decode/*.yaml",
	} {
		m, err := filepath.Glob(glob)
		require.NoError(t, err)
		require.NotEmpty(t, m, glob)
		files = append(files, m...)
	}
	fragments := map[string]bool{"flux_guide.yaml backend": true, "flux_guide.yaml frontend": true}
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			require.NoError(t, yaml.Unmarshal(doc, &head), file)
			group, _, _ := strings.Cut(head.APIVersion, "/")
			switch {
			case group == release.Group && head.Kind == release.Kind:
			case group == source.Group && (head.Kind == source.KindHelmRepository || head.Kind == source.KindOCIRepository || head.Kind == source.KindHelmChart):
			default:
				continue
			}
			if fragments[filepath.Base(file)+" "+head.Metadata.Name] {
				continue
			}
			objs, err := release.Decode(bytes.NewReader(doc))
			require.NoError(t, err, file)
			all.Releases = append(all.Releases, objs.Releases...)
			all.HelmRepositories = append(all.HelmRepositories, objs.HelmRepositories...)
			all.OCIRepositories = append(all.OCIRepositories, objs.OCIRepositories...)
			all.HelmCharts = append(all.HelmCharts, objs.HelmCharts...)
		}
	}
	return all
}

// prepare puts a decoded object in the test's namespace under a unique
// name, at the version the CRD serves, with no server-set metadata.
func prepare(o apiObject, ns string, i int) {
	name := fmt.Sprintf("s%03d-%s", i, o.GetName())
	if len(name) > 63 {
		name = name[:63]
	}
	o.SetName(strings.TrimRight(name, "-."))
	o.SetNamespace(ns)
	o.SetGeneration(0)
	o.SetResourceVersion("")
	o.SetUID("")
	gvk := o.GetObjectKind().GroupVersionKind()
	switch gvk.Group {
	case release.Group:
		gvk.Version = release.Version
	case source.Group:
		gvk.Version = source.Version
	}
	o.GetObjectKind().SetGroupVersionKind(gvk)
}

// fields returns obj as JSON fields, as a client sends and reads them.
func fields(t *testing.T, obj runtime.Object) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

// withoutServerFields returns obj's fields without the status, the
// metadata the API server sets, and the type fields.
func withoutServerFields(t *testing.T, obj runtime.Object) map[string]any {
	t.Helper()
	m := fields(t, obj)
	delete(m, "status")
	// A typed client's decoder clears apiVersion and kind, as client-go
	// does for every typed object it returns.
	delete(m, "apiVersion")
	delete(m, "kind")
	if meta, ok := m["metadata"].(map[string]any); ok {
		for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"} {
			delete(meta, k)
		}
	}
	return m
}

// setStatusFrom sets obj's status to the JSON fields status.
func setStatusFrom(t *testing.T, obj runtime.Object, status any) {
	t.Helper()
	m := fields(t, obj)
	m["status"] = status
	data, err := json.Marshal(m)
	require.NoError(t, err)
	// Decode into a zeroed object, so that no field of the old status
	// survives.
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
	require.NoError(t, json.Unmarshal(data, obj))
}

// reflectZero reports whether v is its type's zero value.
func reflectZero(v any) bool { return reflect.ValueOf(v).IsZero() }

func readyConditions(gen int64) []metav1.Condition {
	return []metav1.Condition{{
		Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: gen, Reason: "Succeeded",
		Message:            "stored artifact for revision 'sha256:" + strings.Repeat("ab", 32) + "'",
		LastTransitionTime: metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)),
	}}
}

func artifact(file string) *source.Artifact {
	size := int64(12345)
	return &source.Artifact{
		Path: "helmchart/ns/name/" + file, URL: "http://source-controller/" + file, Revision: "6.5.4",
		Digest: "sha256:" + strings.Repeat("cd", 32), LastUpdateTime: metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)),
		Size: &size, Metadata: map[string]string{"org.opencontainers.image.source": "https://github.com/stefanprodan/podinfo"},
	}
}

// releaseStatus is a status as the reconciler writes it after an install.
func releaseStatus(gen int64) release.Status {
	at := metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
	st := release.Status{
		ObservedGeneration: gen, LastAttemptedGeneration: gen, HelmChart: "flux-system/podinfo", StorageNamespace: "default",
		LastAttemptedReleaseAction: release.ReleaseActionInstall, LastAttemptedRevision: "6.5.4",
		LastAttemptedConfigDigest: "sha256:" + strings.Repeat("ef", 32),
		History: release.Snapshots{{
			Digest: "sha256:" + strings.Repeat("12", 32), Name: "podinfo", Namespace: "default", Version: 1,
			Status: release.SnapshotStatusDeployed, ChartName: "podinfo", ChartVersion: "6.5.4",
			ConfigDigest: "sha256:" + strings.Repeat("ef", 32), FirstDeployed: at, LastDeployed: at,
		}},
		Inventory: &release.ResourceInventory{Entries: []release.ResourceRef{{ID: "default_podinfo_apps_Deployment", Version: "v1"}}},
	}
	st.History[0].SetTestHooks(map[string]*release.TestHookStatus{"podinfo-test": {LastStarted: at, LastCompleted: at, Phase: release.HookPhaseSucceeded}})
	st.SetCondition(metav1.Condition{Type: release.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: gen,
		Reason: release.ReasonInstallSucceeded, Message: "Helm install succeeded for release default/podinfo.v1 with chart podinfo@6.5.4", LastTransitionTime: at})
	return st
}
