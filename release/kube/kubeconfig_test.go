package kube

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// canary is a value of the test kubeconfigs that must never appear in an
// error.
const canary = "canary-9f3b"

// testCA stands for CA data: clientcmd does not parse it, the transport
// would.
var testCA = []byte("test CA bundle")

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// kubeconfigYAML is a kubeconfig whose second user and cluster (the ones
// the current context uses) carry the given extra fields; the first pair
// is plain, so paths must name index 1.
func kubeconfigYAML(user, cluster string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: plain-%[3]s
  cluster:
    server: https://plain.example.com
- name: target-%[3]s
  cluster:
    server: https://target.example.com:6443
%[2]s
users:
- name: plain-%[3]s
  user:
    token: plain-%[3]s
- name: tenant-%[3]s
  user:
%[1]s
contexts:
- name: ctx-%[3]s
  context:
    cluster: target-%[3]s
    user: tenant-%[3]s
current-context: ctx-%[3]s
`, user, cluster, canary)
}

func TestRESTConfigFromKubeconfigRefuses(t *testing.T) {
	dir := t.TempDir()
	tokenPath := filepath.Join(dir, canary+"-token")
	require.NoError(t, os.WriteFile(tokenPath, []byte("host-token-"+canary), 0o600))

	tests := []struct {
		name, user, cluster string
		field               string
		allowedBy           KubeconfigOptions // options under which it is accepted; zero: never
	}{
		{name: "exec", user: "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n      command: /bin/" + canary + "\n      args: [\"" + canary + "\"]",
			field: "users[1].user.exec", allowedBy: KubeconfigOptions{AllowExec: true}},
		{name: "exec beside a token", user: "    token: t-" + canary + "\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n      command: " + canary,
			field: "users[1].user.exec", allowedBy: KubeconfigOptions{AllowExec: true}},
		{name: "auth-provider", user: "    auth-provider:\n      name: oidc\n      config:\n        idp-certificate-authority: /" + canary,
			field: "users[1].user.auth-provider"},
		{name: "tokenFile", user: "    tokenFile: " + tokenPath,
			field: "users[1].user.tokenFile", allowedBy: KubeconfigOptions{AllowFiles: true}},
		{name: "tokenFile beside a token", user: "    token: t-" + canary + "\n    tokenFile: " + tokenPath,
			field: "users[1].user.tokenFile", allowedBy: KubeconfigOptions{AllowFiles: true}},
		{name: "client-certificate", user: "    client-certificate: /" + canary + "/tls.crt\n    client-key-data: " + b64([]byte(canary)),
			field: "users[1].user.client-certificate"},
		{name: "client-key", user: "    client-certificate-data: " + b64([]byte(canary)) + "\n    client-key: /" + canary + "/tls.key",
			field: "users[1].user.client-key"},
		{name: "certificate-authority", user: "    token: t-" + canary, cluster: "    certificate-authority: /" + canary + "/ca.crt",
			field: "clusters[1].cluster.certificate-authority"},
		{name: "as", user: "    token: t-" + canary + "\n    as: " + canary, field: "users[1].user.as"},
		{name: "as-groups", user: "    token: t-" + canary + "\n    as-groups: [system:masters]", field: "users[1].user.as-groups"},
		{name: "as-uid", user: "    token: t-" + canary + "\n    as-uid: " + canary, field: "users[1].user.as-uid"},
		{name: "as-user-extra", user: "    token: t-" + canary + "\n    as-user-extra:\n      k: [" + canary + "]", field: "users[1].user.as-user-extra"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := kubeconfigYAML(tc.user, tc.cluster)
			_, err := RESTConfigFromKubeconfig(data, KubeconfigOptions{Secret: "team-a/kc", Key: "value"})
			var ke *KubeconfigError
			require.ErrorAs(t, err, &ke)
			assert.Equal(t, tc.field, ke.Field)
			assert.Equal(t, "team-a/kc", ke.Secret)
			assert.Equal(t, "value", ke.Key)
			assert.Contains(t, err.Error(), `kubeconfig in key "value" of Secret team-a/kc: `+tc.field+": ")
			assert.NotContains(t, err.Error(), canary)
			assert.NotContains(t, err.Error(), "system:masters")

			if tc.allowedBy == (KubeconfigOptions{}) {
				// The other opt-ins do not let it through.
				_, err := RESTConfigFromKubeconfig(data, KubeconfigOptions{AllowExec: tc.field != "users[1].user.auth-provider", AllowFiles: !strings.Contains(tc.field, "cert") && !strings.Contains(tc.field, "key")})
				require.ErrorAs(t, err, &ke)
				return
			}
			rc, err := RESTConfigFromKubeconfig(data, tc.allowedBy)
			require.NoError(t, err)
			assert.Equal(t, "https://target.example.com:6443", rc.Host)
			if tc.allowedBy.AllowExec {
				require.NotNil(t, rc.ExecProvider, "the plugin is configured, not run")
			}
			if tc.allowedBy.AllowFiles {
				assert.Equal(t, tokenPath, rc.BearerTokenFile)
			}
		})
	}
}

// The opt-ins accept what they name: an auth-provider with AllowExec,
// certificate files with AllowFiles (read when the config is built).
func TestRESTConfigFromKubeconfigOptIns(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(ca, testCA, 0o600))

	rc, err := RESTConfigFromKubeconfig(kubeconfigYAML("    auth-provider:\n      name: oidc", ""), KubeconfigOptions{AllowExec: true})
	require.NoError(t, err)
	require.NotNil(t, rc.AuthProvider)
	assert.Equal(t, "oidc", rc.AuthProvider.Name)
	assert.Nil(t, rc.AuthConfigPersister, "nothing writes refreshed tokens back")

	rc, err = RESTConfigFromKubeconfig(kubeconfigYAML("    token: t", "    certificate-authority: "+ca), KubeconfigOptions{AllowFiles: true})
	require.NoError(t, err)
	assert.Equal(t, ca, rc.CAFile)

	// An allowed file that is not there is an error that does not name it.
	_, err = RESTConfigFromKubeconfig(kubeconfigYAML("    token: t", "    certificate-authority: "+filepath.Join(dir, canary)), KubeconfigOptions{AllowFiles: true})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), canary)
}

func TestRESTConfigFromKubeconfigPlain(t *testing.T) {
	t.Run("token", func(t *testing.T) {
		rc, err := RESTConfigFromKubeconfig(kubeconfigYAML("    token: tok", "    certificate-authority-data: "+b64(testCA)+"\n    proxy-url: http://proxy.example.com:3128"), KubeconfigOptions{})
		require.NoError(t, err)
		assert.Equal(t, "https://target.example.com:6443", rc.Host)
		assert.Equal(t, "tok", rc.BearerToken)
		assert.Equal(t, testCA, rc.CAData)
		assert.NotNil(t, rc.Proxy)
		assert.Empty(t, refusedRESTField(rc, KubeconfigOptions{}))
	})
	t.Run("client certificate data", func(t *testing.T) {
		rc, err := RESTConfigFromKubeconfig(kubeconfigYAML("    client-certificate-data: "+b64([]byte("crt"))+"\n    client-key-data: "+b64([]byte("key")), ""), KubeconfigOptions{})
		require.NoError(t, err)
		assert.Equal(t, []byte("crt"), rc.CertData)
		assert.Equal(t, []byte("key"), rc.KeyData)
	})
}

func TestRESTConfigFromKubeconfigUnusable(t *testing.T) {
	tests := []struct {
		name  string
		data  []byte
		field string
	}{
		{name: "empty", data: nil},
		{name: "not yaml", data: []byte("{{" + canary)},
		{name: "wrong kind", data: []byte("apiVersion: v9\nkind: " + canary)},
		{name: "no current context", data: []byte("apiVersion: v1\nkind: Config\nclusters: []\n"), field: "current-context"},
		{name: "unknown current context", data: []byte("apiVersion: v1\nkind: Config\ncurrent-context: " + canary + "\n"), field: "current-context"},
		{name: "unknown cluster", data: []byte("apiVersion: v1\nkind: Config\ncontexts:\n- name: a\n  context: {cluster: " + canary + "}\n- name: c\n  context: {cluster: " + canary + "}\ncurrent-context: c\n"), field: "contexts[1].context.cluster"},
		{name: "unknown user", data: []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://x}\ncontexts:\n- name: c\n  context: {cluster: c, user: " + canary + "}\ncurrent-context: c\n"), field: "contexts[0].context.user"},
		{name: "no server", data: []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {tls-server-name: " + canary + "}\ncontexts:\n- name: c\n  context: {cluster: c}\ncurrent-context: c\n")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RESTConfigFromKubeconfig(tc.data, KubeconfigOptions{Secret: "ns/s", Key: "value"})
			var ke *KubeconfigError
			require.ErrorAs(t, err, &ke)
			assert.Equal(t, tc.field, ke.Field)
			assert.NotContains(t, err.Error(), canary)
		})
	}
}

// The second line of defence: whatever clientcmd would fill in that the
// kubeconfig checks missed is refused on the rest.Config itself.
func TestRefusedRESTField(t *testing.T) {
	tests := []struct {
		name  string
		cfg   rest.Config
		field string
		allow KubeconfigOptions
	}{
		{name: "exec", cfg: rest.Config{ExecProvider: &clientcmdapi.ExecConfig{Command: "x"}}, field: "ExecProvider", allow: KubeconfigOptions{AllowExec: true}},
		{name: "auth-provider", cfg: rest.Config{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "x"}}, field: "AuthProvider", allow: KubeconfigOptions{AllowExec: true}},
		{name: "token file", cfg: rest.Config{BearerTokenFile: "/x"}, field: "BearerTokenFile", allow: KubeconfigOptions{AllowFiles: true}},
		{name: "cert file", cfg: rest.Config{TLSClientConfig: rest.TLSClientConfig{CertFile: "/x"}}, field: "CertFile", allow: KubeconfigOptions{AllowFiles: true}},
		{name: "key file", cfg: rest.Config{TLSClientConfig: rest.TLSClientConfig{KeyFile: "/x"}}, field: "KeyFile", allow: KubeconfigOptions{AllowFiles: true}},
		{name: "ca file", cfg: rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: "/x"}}, field: "CAFile", allow: KubeconfigOptions{AllowFiles: true}},
		{name: "impersonation", cfg: rest.Config{Impersonate: rest.ImpersonationConfig{Groups: []string{"g"}}}, field: "Impersonate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.field, refusedRESTField(&tc.cfg, KubeconfigOptions{}))
			if tc.allow != (KubeconfigOptions{}) {
				assert.Empty(t, refusedRESTField(&tc.cfg, tc.allow))
			}
		})
	}
}

func TestKubeconfigErrorMessage(t *testing.T) {
	err := error(&KubeconfigError{Secret: "ns/s", Key: "value", Field: "users[0].user.exec", Reason: "refused"})
	assert.Equal(t, `kubeconfig in key "value" of Secret ns/s: users[0].user.exec: refused`, err.Error())
	assert.Equal(t, "kubeconfig: does not parse", (&KubeconfigError{Reason: "does not parse"}).Error())
	var ke *KubeconfigError
	assert.True(t, errors.As(fmt.Errorf("wrapped: %w", err), &ke))
}

// Whatever the bytes, RESTConfigFromKubeconfig does not panic, quotes
// nothing of them, and accepts nothing that runs a plugin, reads a file
// or impersonates.
func FuzzRESTConfigFromKubeconfig(f *testing.F) {
	f.Add(kubeconfigYAML("    token: t", ""))
	f.Add(kubeconfigYAML("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n      command: x", ""))
	f.Add(kubeconfigYAML("    tokenFile: /etc/hostname", "    certificate-authority: /etc/hostname"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Config","users":[{"name":"u","user":{"as":"x"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rc, err := RESTConfigFromKubeconfig(data, KubeconfigOptions{Secret: "ns/s", Key: "value"})
		if err != nil {
			var ke *KubeconfigError
			require.ErrorAs(t, err, &ke)
			return
		}
		assert.Empty(t, refusedRESTField(rc, KubeconfigOptions{}))
	})
}
