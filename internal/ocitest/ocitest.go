// Package ocitest serves an OCI registry in-process for tests and signs
// artifacts in it the way cosign does with a key pair, so that signature
// verification is tested against signatures made in the test.
package ocitest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd" // htpasswd auth for App
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory" // in-memory storage for App
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// App is a distribution registry with in-memory storage, behind htpasswd
// auth when user is set.
func App(t testing.TB, user, password string) http.Handler {
	t.Helper()
	htpasswd := ""
	if user != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		require.NoError(t, err)
		htpasswd = filepath.Join(t.TempDir(), "htpasswd")
		require.NoError(t, os.WriteFile(htpasswd, []byte(user+":"+string(hash)+"\n"), 0o600))
	}
	return Handler(htpasswd)
}

// Handler is a distribution registry with in-memory storage, behind
// htpasswd auth with the file htpasswd when it is not empty.
func Handler(htpasswd string) http.Handler {
	config := &configuration.Configuration{}
	config.Storage = configuration.Storage{"inmemory": configuration.Parameters{}}
	config.Log.Level = "error"
	config.Log.AccessLog.Disabled = true
	if htpasswd != "" {
		config.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "test", "path": htpasswd}}
	}
	return handlers.NewApp(context.Background(), config)
}

// Key is a cosign key pair: ECDSA P-256, the public half in PEM as
// `cosign generate-key-pair` writes cosign.pub.
type Key struct {
	private *ecdsa.PrivateKey
	// PublicPEM is the public key, PEM-encoded.
	PublicPEM []byte
}

// NewKey generates a key pair.
func NewKey(t testing.TB) *Key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	pem, err := cryptoutils.MarshalPublicKeyToPEM(k.Public())
	require.NoError(t, err)
	return &Key{private: k, PublicPEM: pem}
}

// SimpleSigning is cosign's payload signing the artifact ref@digest.
func SimpleSigning(ref, digest string) []byte {
	return []byte(`{"critical":{"identity":{"docker-reference":"` + ref + `"},"image":{"docker-manifest-digest":"` + digest +
		`"},"type":"cosign container image signature"},"optional":null}`)
}

// Sign pushes to repo, as cosign sign does, a signature of payload made
// with k under the tag of digest (sha256-<hex>.sig). When tamper is set,
// the payload is changed by it after it was signed.
func (k *Key) Sign(t testing.TB, repo *remote.Repository, digest string, payload []byte, tamper func([]byte) []byte) {
	t.Helper()
	h := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, k.private, h[:])
	require.NoError(t, err)
	if tamper != nil {
		payload = tamper(payload)
	}
	PushSignature(t, repo, digest, payload, map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)})
}

// PushSignature pushes to repo, under the cosign signature tag of digest
// (sha256-<hex>.sig), a signature manifest of one simple-signing layer
// holding payload, with annotations (the signature, and for keyless
// signatures the certificate, chain and Rekor bundle).
func PushSignature(t testing.TB, repo *remote.Repository, digest string, payload []byte, annotations map[string]string) {
	t.Helper()
	ctx := context.Background()
	pushBlob := func(mediaType string, data []byte, annotations map[string]string) ocispec.Descriptor {
		d := content.NewDescriptorFromBytes(mediaType, data)
		require.NoError(t, repo.Push(ctx, d, bytes.NewReader(data)))
		d.Annotations = annotations
		return d
	}
	m := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    pushBlob(ocispec.MediaTypeImageConfig, []byte("{}"), nil),
		Layers:    []ocispec.Descriptor{pushBlob("application/vnd.dev.cosign.simplesigning.v1+json", payload, annotations)},
	}
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	md := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
	require.NoError(t, repo.Manifests().PushReference(ctx, md, bytes.NewReader(raw), strings.Replace(digest, ":", "-", 1)+".sig"))
}

// Refer pushes to repo a manifest of artifactType whose subject is the
// manifest with digest subject, as cosign stores its newer sigstore
// bundles (OCI 1.1 referrers).
func Refer(t testing.TB, repo *remote.Repository, subject, artifactType string) {
	t.Helper()
	ctx := context.Background()
	sd, err := repo.Resolve(ctx, subject)
	require.NoError(t, err)
	empty := ocispec.DescriptorEmptyJSON
	require.NoError(t, repo.Push(ctx, empty, bytes.NewReader(empty.Data)))
	layer := content.NewDescriptorFromBytes(artifactType, []byte("{}"))
	require.NoError(t, repo.Push(ctx, layer, bytes.NewReader([]byte("{}"))))
	raw, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: artifactType, Config: empty, Layers: []ocispec.Descriptor{layer}, Subject: &sd,
	})
	require.NoError(t, err)
	md := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
	require.NoError(t, repo.Push(ctx, md, bytes.NewReader(raw)))
}

// Repository returns the repository host/name of a plain-HTTP registry,
// with client (nil: anonymous).
func Repository(t testing.TB, host, name string, client remote.Client) *remote.Repository {
	t.Helper()
	r, err := remote.NewRepository(host + "/" + name)
	require.NoError(t, err)
	r.PlainHTTP = true
	if client != nil {
		r.Client = client
	}
	return r
}
