package kubeharness

import (
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPKI(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	p, err := newPKI("member1", now)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(p.ca.cert)

	_, err = p.serving.cert.Verify(x509.VerifyOptions{
		Roots: roots, CurrentTime: now, DNSName: "127.0.0.1",
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	require.NoError(t, err, "serving certificate for 127.0.0.1")
	assert.True(t, p.serving.cert.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)))

	_, err = p.admin.cert.Verify(x509.VerifyOptions{
		Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	require.NoError(t, err, "admin client certificate")
	assert.Equal(t, []string{"system:masters"}, p.admin.cert.Subject.Organization)

	other, err := newPKI("member2", now)
	require.NoError(t, err)
	_, err = other.admin.cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.Error(t, err, "another cluster's admin is not trusted")
	assert.Contains(t, string(p.saPubPEM), "BEGIN PUBLIC KEY")
	assert.Contains(t, string(p.saKeyPEM), "BEGIN EC PRIVATE KEY")
}

func TestFindBinaries(t *testing.T) {
	dir := t.TempDir()
	_, err := FindBinaries(dir)
	require.ErrorIs(t, err, ErrNoBinaries)
	assert.Contains(t, err.Error(), ".ci/kube-binaries.sh")

	for _, name := range []string{"kube-apiserver", "etcd"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755))
	}
	b, err := FindBinaries(dir)
	require.NoError(t, err)
	assert.Equal(t, Binaries{APIServer: filepath.Join(dir, "kube-apiserver"), Etcd: filepath.Join(dir, "etcd")}, b)

	require.NoError(t, os.Chmod(filepath.Join(dir, "etcd"), 0o644))
	_, err = FindBinaries(dir)
	assert.True(t, errors.Is(err, ErrNoBinaries), "not executable")
}

func TestBinDir(t *testing.T) {
	t.Setenv(EnvBinDir, "/opt/kube")
	assert.Equal(t, "/opt/kube", BinDir())
	t.Setenv(EnvBinDir, "")
	t.Setenv("HOME", "/home/ci")
	assert.Equal(t, "/home/ci/.cache/helmfleet/kube-"+KubeVersion, BinDir())
}

func TestStartValidates(t *testing.T) {
	_, err := Start(t.Context(), Options{Dir: t.TempDir()})
	assert.ErrorContains(t, err, "Options.Binaries is required")
	_, err = Start(t.Context(), Options{Binaries: Binaries{APIServer: "a", Etcd: "b"}})
	assert.ErrorContains(t, err, "Options.Dir is required")
}

func TestStartReportsEarlyExit(t *testing.T) {
	dir := t.TempDir()
	failing := filepath.Join(dir, "fail")
	require.NoError(t, os.WriteFile(failing, []byte("#!/bin/sh\necho 'bad flag' >&2\nexit 3\n"), 0o755))
	start := time.Now()
	_, err := Start(t.Context(), Options{Binaries: Binaries{APIServer: failing, Etcd: failing}, Dir: dir})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "etcd exited")
	assert.Contains(t, err.Error(), "bad flag")
	assert.Less(t, time.Since(start), 10*time.Second)
}
