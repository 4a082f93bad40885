package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/helmfleet/helmfleet/release"
)

// apiHost is the host of the cluster's HTTP API; nothing dials it, the
// transport answers every request itself.
const apiHost = "http://memory.invalid"

// restConfig returns a client-go config of the cluster's read-only HTTP
// API (see apiServer), without client-side rate limits.
func (c *Cluster) restConfig() *rest.Config {
	return &rest.Config{Host: apiHost, Transport: apiServer{c: c}, QPS: -1}
}

// restClient returns a REST client of group version gv (the unversioned root
// for the empty one) over the cluster's read-only HTTP API.
func (c *Cluster) restClient(gv schema.GroupVersion) *rest.RESTClient {
	path := ""
	switch {
	case gv.Group != "":
		path = "/apis/" + gv.String()
	case gv.Version != "":
		path = "/api/" + gv.Version
	}
	base, _ := url.Parse(apiHost) // a constant that parses
	content := rest.ClientContentConfig{
		ContentType:  runtime.ContentTypeJSON,
		GroupVersion: gv,
		Negotiator:   runtime.NewClientNegotiator(scheme.Codecs.WithoutConversion(), gv),
	}
	rc, _ := rest.NewRESTClient(base, path, content, nil, &http.Client{Transport: apiServer{c: c}}) // never fails
	return rc
}

// apiServer answers the read side of the Kubernetes HTTP API from the
// store: /version, discovery (/api, /apis, /apis/<group>, /api/v1,
// /apis/<group>/<version>), and GET of one object or of a list, with the
// status the simulated controllers give it (as Get and List) and list
// label selectors. It is what Helm's ownership checks and templates'
// lookup read. Anything else gets the error status an API server gives a
// request it does not serve — writes and watches 405, field selectors
// 400, subresources and OpenAPI 404 — never a silent success.
type apiServer struct{ c *Cluster }

// RoundTrip answers req, or fails as a dropped connection would while the
// cluster is unreachable or a Fault fails a read.
func (a apiServer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	if err := a.c.reachable(); err != nil {
		return nil, err
	}
	body, err := a.serve(req)
	code := http.StatusOK
	if err != nil {
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			return nil, err
		}
		st := status.Status()
		st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		body, code = &st, int(st.Code)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		StatusCode: code,
		Status:     http.StatusText(code),
		Header:     http.Header{"Content-Type": []string{runtime.ContentTypeJSON}},
		Body:       io.NopCloser(bytes.NewReader(data)),
		Request:    req,
	}, nil
}

// errNoPath is an API server's answer for a path it does not serve.
func errNoPath() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
	}}
}

func (a apiServer) serve(req *http.Request) (any, error) {
	path := strings.Trim(req.URL.Path, "/")
	if req.Method != http.MethodGet {
		return nil, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: path}, strings.ToLower(req.Method))
	}
	if path == "version" {
		return (&discoveryClient{c: a.c}).ServerVersion()
	}
	parts := strings.Split(path, "/")
	var gv schema.GroupVersion
	var tail []string
	switch {
	case path == "api":
		return &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}, nil
	case path == "apis":
		groups, err := (&discoveryClient{c: a.c}).ServerGroups()
		if err != nil {
			return nil, err
		}
		groups.Groups = slices.DeleteFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == "" })
		return groups, nil
	case parts[0] == "apis" && len(parts) == 2:
		groups, err := (&discoveryClient{c: a.c}).ServerGroups()
		if err != nil {
			return nil, err
		}
		for _, g := range groups.Groups {
			if g.Name == parts[1] && g.Name != "" {
				g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
				return &g, nil
			}
		}
		return nil, errNoPath()
	case parts[0] == "api" && len(parts) >= 2:
		gv, tail = schema.GroupVersion{Version: parts[1]}, parts[2:]
	case parts[0] == "apis" && len(parts) >= 3:
		gv, tail = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	default:
		return nil, errNoPath()
	}
	if len(tail) == 0 {
		return (&discoveryClient{c: a.c}).ServerResourcesForGroupVersion(gv.String())
	}
	namespace := ""
	if tail[0] == "namespaces" && len(tail) >= 3 {
		namespace, tail = tail[1], tail[2:]
	}
	if len(tail) > 2 {
		return nil, errNoPath() // subresources
	}
	gvk, err := a.c.store.mapper.kindFor(gv.WithResource(tail[0]))
	if err != nil {
		return nil, errNoPath()
	}
	if len(tail) == 2 {
		return a.get(release.ObjectRef{GroupVersionKind: gvk, Namespace: namespace, Name: tail[1]})
	}
	return a.list(gvk, namespace, req.URL.Query())
}

// get reads one object, as a read by Helm (OpHelmGet).
func (a apiServer) get(ref release.ObjectRef) (any, error) {
	if err := a.c.fault(OpHelmGet, ref); err != nil {
		return nil, err
	}
	obj, err := a.c.store.get(ref.GroupVersionKind, ref.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	return withStatus(obj, a.c.healthOf(obj)).Object, nil
}

// list reads the objects of gvk in namespace ("" = all) that match the
// query's labelSelector.
func (a apiServer) list(gvk schema.GroupVersionKind, namespace string, q url.Values) (any, error) {
	if w := q.Get("watch"); w == "true" || w == "1" {
		return nil, apierrors.NewMethodNotSupported(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, "watch")
	}
	if q.Get("fieldSelector") != "" {
		return nil, apierrors.NewBadRequest("the in-memory cluster does not serve field selectors")
	}
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	objs, err := a.c.store.list(gvk, namespace, sel)
	if err != nil {
		return nil, err
	}
	items := make([]any, 0, len(objs))
	for _, o := range objs {
		items = append(items, withStatus(o, a.c.healthOf(o)).Object)
	}
	return map[string]any{
		"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind + "List",
		"metadata": map[string]any{}, "items": items,
	}, nil
}
