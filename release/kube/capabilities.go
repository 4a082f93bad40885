package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/helmfleet/helmfleet/release"
)

var _ release.CapabilitiesReader = (*Cluster)(nil)

// discoveryAccept is the Accept header of the probe: aggregated discovery
// (one document with every group, version and resource, which the API
// server tags with an ETag), else the plain group list.
const discoveryAccept = discovery.AcceptV2 + "," + acceptV2Beta1 + "," + discovery.AcceptV1

// acceptV2Beta1 asks for aggregated discovery in its beta form, the only
// one Kubernetes 1.26 to 1.29 serve. client-go v0.37 no longer names it
// (discovery.AcceptV2Beta1 is gone there), so the text is written out
// here: the library builds with client-go v0.36 and v0.37 alike.
const acceptV2Beta1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

// maxProbeBody bounds how much of an untagged discovery document the
// probe reads to fingerprint it.
const maxProbeBody = 64 << 20

// Capabilities returns the Kubernetes version and the API versions the
// cluster serves, computed from discovery exactly as Helm's install does
// (action.GetVersionSet: every "group/version" and "group/version/Kind").
// An API service that fails discovery (an orphaned APIService) is left
// out, as Helm leaves it out, and logged to Config.Log.
//
// The result is cached per Cluster, and checked before each reuse:
//
//   - A conditional GET of the server's /apis discovery document with the
//     ETag it was last served with: one request, answered 304 Not
//     Modified while nothing changed. The aggregated discovery document
//     (Kubernetes 1.26 and later) lists every group, version and kind, so
//     any CRD or APIService added or removed by any client (Helm
//     installing a chart's crds/, an operator, kubectl) changes it. A
//     server that tags no ETag is fingerprinted by the document's SHA-256
//     instead (a full read of /apis); a server without aggregated
//     discovery then shows new groups and versions, but not a new kind in
//     a version it already served.
//   - Writing a CustomResourceDefinition or an APIService through the
//     Cluster (Apply that is not a dry run, Patch, Delete), or the Cluster's
//     RESTMapper not knowing a kind, forces the next call to rediscover.
//
// A discovery client with no REST client to probe with (client-go's fake)
// keeps the cache until one of the writes above. Calls that arrive while
// another call is checking share its result. Errors name the cluster; a
// failed discovery is not cached. The result is a copy the caller may keep
// and modify.
func (c *Cluster) Capabilities(ctx context.Context) (*chartutil.Capabilities, error) {
	caps, err := c.caps.get(ctx, c)
	if err != nil {
		return nil, ctxError(ctx, fmt.Errorf("cluster %s: capabilities: %w", c.name, err))
	}
	return caps, nil
}

// capsCache holds a Cluster's capabilities between calls.
type capsCache struct {
	// sem is held while checking or discovering.
	sem chan struct{}
	// started counts the checks started; read without sem.
	started atomic.Uint64
	// stale is set by a write that may change discovery; a rediscovery
	// clears it before it starts, so a write during it is not lost.
	stale atomic.Bool

	// Guarded by sem: the capabilities, the fingerprint of the discovery
	// document they came from ("" when unknown), and the number of the
	// last check that found them current.
	caps        *chartutil.Capabilities
	fingerprint string
	verified    uint64
}

func newCapsCache() *capsCache {
	return &capsCache{sem: make(chan struct{}, 1)}
}

// invalidate makes the next call rediscover.
func (cc *capsCache) invalidate() { cc.stale.Store(true) }

func (cc *capsCache) get(ctx context.Context, c *Cluster) (*chartutil.Capabilities, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ticket := cc.started.Load()
	select {
	case cc.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-cc.sem }()
	if cc.caps != nil && !cc.stale.Load() && cc.verified > ticket {
		// A check that started after this call arrived found them current.
		return copyCapabilities(cc.caps), nil
	}
	n := cc.started.Add(1)
	dc, err := c.getter.ToDiscoveryClient()
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	probe := newProbe(dc)
	fingerprint := ""
	if probe != nil {
		if fingerprint, err = probe.fingerprint(ctx, cc.fingerprint); err != nil {
			return nil, err
		}
	}
	if cc.caps != nil && !cc.stale.Load() && (probe == nil || fingerprint == cc.fingerprint) {
		cc.verified = n
		return copyCapabilities(cc.caps), nil
	}
	cc.stale.Store(false)
	caps, err := discover(dc, func(failed string) {
		c.log("cluster %s: WARNING: discovery failed for %s (an orphaned API service?); Capabilities leave it out, as Helm does", c.name, failed)
	})
	if err != nil {
		cc.caps, cc.fingerprint = nil, ""
		return nil, err
	}
	cc.caps, cc.fingerprint, cc.verified = caps, fingerprint, n
	return copyCapabilities(caps), nil
}

// discover computes capabilities as Helm's action.Configuration does when
// it has none: the discovery cache invalidated, the server's version, and
// action.GetVersionSet, whose tolerance of group discovery failures is
// reported to warn.
func discover(dc discovery.CachedDiscoveryInterface, warn func(failed string)) (*chartutil.Capabilities, error) {
	dc.Invalidate()
	v, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("server version: %w", err)
	}
	groups, resources, err := dc.ServerGroupsAndResources()
	if failed, ok := err.(*discovery.ErrGroupDiscoveryFailed); ok {
		gvs := make([]string, 0, len(failed.Groups))
		for gv, gerr := range failed.Groups {
			gvs = append(gvs, gv.String()+": "+gerr.Error())
		}
		slices.Sort(gvs)
		warn(strings.Join(gvs, "; "))
	}
	set, err := action.GetVersionSet(discovered{ServerResourcesInterface: dc, groups: groups, resources: resources, err: err})
	if err != nil {
		return nil, err
	}
	slices.Sort(set)
	return &chartutil.Capabilities{
		KubeVersion: chartutil.KubeVersion{Version: v.GitVersion, Major: v.Major, Minor: v.Minor},
		APIVersions: set,
		HelmVersion: chartutil.DefaultCapabilities.HelmVersion,
	}, nil
}

// discovered answers ServerGroupsAndResources with a result already read,
// so that Helm's GetVersionSet computes from the same discovery the
// warning came from.
type discovered struct {
	discovery.ServerResourcesInterface
	groups    []*metav1.APIGroup
	resources []*metav1.APIResourceList
	err       error
}

func (d discovered) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return d.groups, d.resources, d.err
}

func copyCapabilities(c *chartutil.Capabilities) *chartutil.Capabilities {
	out := c.Copy()
	out.APIVersions = slices.Clip(slices.Clone(c.APIVersions))
	return out
}

// probe fingerprints the server's /apis discovery document.
type probe struct {
	client *http.Client
	// url is requested (with the discovery client's query, a server
	// timeout); name is what errors show.
	url, name string
}

// newProbe returns the probe of dc's server, or nil when dc has no REST
// client to reach it with.
func newProbe(dc discovery.DiscoveryInterface) *probe {
	rc, ok := dc.RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		return nil
	}
	client := rc.Client
	if client == nil {
		client = http.DefaultClient
	}
	u := rc.Get().AbsPath("/apis").URL()
	name := *u
	name.RawQuery = ""
	return &probe{client: client, url: u.String(), name: name.String()}
}

// fingerprint returns "etag:<ETag>" or "sha256:<hex>" of the document;
// last is the previous fingerprint, whose ETag the request sends so that
// an unchanged document costs a 304 and no body.
func (p *probe) fingerprint(ctx context.Context, last string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return "", fmt.Errorf("discovery probe: %w", err)
	}
	req.Header.Set("Accept", discoveryAccept)
	if etag, ok := strings.CutPrefix(last, "etag:"); ok {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("discovery probe: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return last, nil
	case http.StatusOK:
	default:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return "", fmt.Errorf("discovery probe: GET %s: %s: %s", p.name, resp.Status, strings.TrimSpace(string(body)))
	}
	if etag := resp.Header.Get("ETag"); etag != "" {
		// Drained so that the connection is reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxProbeBody))
		return "etag:" + etag, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(resp.Body, maxProbeBody)); err != nil {
		return "", fmt.Errorf("discovery probe: GET %s: %w", p.name, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// changesDiscovery reports whether writing an object of kind gk may change
// what discovery serves: a CRD or an aggregated APIService.
func changesDiscovery(gk schema.GroupKind) bool {
	return gk == schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"} ||
		gk == schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"}
}
