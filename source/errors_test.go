package source

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestRedact(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "https://charts.example.com/stable", "https://charts.example.com/stable"},
		{"user and password", "https://bob:s3cret@charts.example.com/x", "https://charts.example.com/x"},
		{"token in query", "https://charts.example.com/index.yaml?sig=s3cret#frag", "https://charts.example.com/index.yaml"},
		{"oci", "oci://bob:s3cret@ghcr.io/org/charts", "oci://ghcr.io/org/charts"},
		{"unparseable", "https://bob:s3cret@exa mple.com:port/x", "https://exa mple.com:port/x"},
		{"not a url", "./charts/app", "./charts/app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Redact(tt.in))
		})
	}
}

func TestErrorMessage(t *testing.T) {
	err := &Error{Op: "download chart", Source: "https://charts.example.com", Chart: "app", Constraint: "1.x",
		StatusCode: 403, Err: statusError(403)}
	assert.Equal(t, `source: download chart chart "app" version "1.x" from https://charts.example.com: forbidden: HTTP 403`, err.Error())
	require.ErrorIs(t, err, ErrForbidden)
	for code, want := range map[int]error{401: ErrUnauthorized, 404: ErrNotFound, 500: ErrServer, 418: ErrServer} {
		assert.ErrorIs(t, statusError(code), want, "HTTP %d", code)
	}
}

func TestHTTPResolverCancelled(t *testing.T) {
	tr := newTestRepo(t)
	tr.add("app", "1.0.0", packageChart(t, "app", "1.0.0", nil), "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := NewHTTPResolver(tr.srv.Client(), HTTPOptions{}).Resolve(ctx, Ref{Chart: "app", HelmRepository: helmRepo(tr.srv.URL)})
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
	assert.Equal(t, 0, tr.count("/index.yaml"))
}

func TestHTTPResolverJSONIndex(t *testing.T) {
	tr := newTestRepo(t)
	tr.add("app", "1.0.0", packageChart(t, "app", "1.0.0", nil), "")
	tr.add("app", "1.1.0", packageChart(t, "app", "1.1.0", nil), "")
	f := genIndex(0, 0)
	tr.mu.Lock()
	require.NoError(t, yamlToIndex(tr.index, f))
	tr.mu.Unlock()
	tr.setIndex(marshalIndex(t, f, true))
	got, err := NewHTTPResolver(tr.srv.Client(), HTTPOptions{}).Resolve(context.Background(), Ref{Chart: "app", Version: "~1.0", HelmRepository: helmRepo(tr.srv.URL)})
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", got.Version)
}

// TestHTTPResolverLeavesNothingRunning: once Resolve returns and the
// caller's client drops its idle connections, no goroutine of ours is left.
func TestHTTPResolverLeavesNothingRunning(t *testing.T) {
	tr := newTestRepo(t)
	tr.add("app", "1.0.0", packageChart(t, "app", "1.0.0", nil), "")
	client := tr.srv.Client()
	opts := goleak.IgnoreCurrent()
	_, err := NewHTTPResolver(client, HTTPOptions{}).Resolve(context.Background(), Ref{Chart: "app", HelmRepository: helmRepo(tr.srv.URL)})
	require.NoError(t, err)
	client.CloseIdleConnections()
	// The test server's side of the connection is not ours.
	goleak.VerifyNone(t, opts, goleak.IgnoreAnyFunction("net/http.(*conn).serve"))
}
