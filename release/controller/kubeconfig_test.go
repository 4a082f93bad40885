package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kube"
	"github.com/helmfleet/helmfleet/release/memory"
)

// leak is in every hostile kubeconfig; it must reach no error, status or
// event.
const leak = "s3cr3t"

// hostileKubeconfig is one refused kubeconfig: the test kubeconfig with
// its user or cluster replaced, the field refused, and the option that
// lets it through ("" for none).
type hostileKubeconfig struct {
	name, user, cluster, field, optIn string
}

var hostileKubeconfigs = []hostileKubeconfig{
	{name: "exec", user: "{exec: {apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never, command: /tmp/" + leak + ", args: [" + leak + "]}}", field: "users[0].user.exec", optIn: "exec"},
	{name: "auth-provider", user: "{auth-provider: {name: oidc, config: {client-secret: " + leak + "}}}", field: "users[0].user.auth-provider", optIn: "exec"},
	{name: "tokenFile", user: "{tokenFile: /" + leak + "/token}", field: "users[0].user.tokenFile", optIn: "files"},
	{name: "client-certificate", user: "{client-certificate: /" + leak + "/tls.crt, client-key: /" + leak + "/tls.key}", field: "users[0].user.client-certificate", optIn: "files"},
	{name: "client-key", user: "{client-certificate-data: czNjcjN0, client-key: /" + leak + "/tls.key}", field: "users[0].user.client-key", optIn: "files"},
	{name: "certificate-authority", cluster: `{server: "https://remote.test:6443", certificate-authority: /` + leak + `/ca.crt}`, field: "clusters[0].cluster.certificate-authority", optIn: "files"},
	{name: "as-groups", user: "{token: abc, as: " + leak + ", as-groups: [system:masters]}", field: "users[0].user.as"},
}

// data is the test kubeconfig with the case's user and cluster.
func (h hostileKubeconfig) data() []byte {
	out := kubeconfig
	if h.user != "" {
		out = strings.Replace(out, "user: {token: abc}", "user: "+h.user, 1)
	}
	if h.cluster != "" {
		out = strings.Replace(out, `cluster: {server: "https://remote.test:6443"}`, "cluster: "+h.cluster, 1)
	}
	return []byte(out)
}

// A kubeconfig that would run a program or read a file of the
// controller's host is refused before any client is built, with a
// service account or without one: the status names the Secret, key and
// kubeconfig field, and no byte of the Secret.
func TestKubeconfigSecretRefusesExecAndFiles(t *testing.T) {
	for _, h := range hostileKubeconfigs {
		for _, sa := range []struct{ name, spec, def string }{{name: "no service account"}, {name: "serviceAccountName", spec: "deployer"}, {name: "default service account", def: "tenant"}} {
			t.Run(h.name+"/"+sa.name, func(t *testing.T) {
				data := h.data()
				require.NotEqual(t, kubeconfig, string(data), "the case changes the kubeconfig")
				secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "kc"}, Data: map[string][]byte{"value": data}}
				y := podinfoYAML + "  kubeConfig:\n    secretRef: {name: kc}\n"
				if sa.spec != "" {
					y += "  serviceAccountName: " + sa.spec + "\n"
				}
				e := newEnv(t, Config{RetryInterval: time.Minute, DefaultServiceAccount: sa.def}, hr(t, y), secret)
				res, err := e.reconcile("podinfo")
				require.NoError(t, err)
				assert.Equal(t, time.Minute, res.RequeueAfter)
				assert.Empty(t, e.built, "no client is built from a refused kubeconfig")
				_, st := e.get("podinfo")
				ready := st.GetCondition(release.ConditionReady)
				require.NotNil(t, ready)
				assert.Equal(t, release.ReasonInitFailed, ready.Reason)
				assert.Contains(t, ready.Message, `HelmRelease apps/podinfo: spec.kubeConfig.secretRef: kubeconfig in key "value" of Secret apps/kc: `+h.field+": ")
				assert.NotContains(t, ready.Message, leak)
				assert.NotContains(t, ready.Message, "system:masters")
				for _, ev := range e.drainEvents() {
					assert.NotContains(t, ev, leak)
				}

				_, err = e.r.targets.cluster(t.Context(), hr(t, y))
				var te *TargetError
				require.ErrorAs(t, err, &te)
				assert.Equal(t, "spec.kubeConfig.secretRef", te.Field)
				var ke *kube.KubeconfigError
				require.ErrorAs(t, err, &ke)
				assert.Equal(t, h.field, ke.Field)
			})
		}
	}
}

// The opt-ins let exec plugins and file references through, configured
// (not run: the test's cluster function builds an in-memory cluster), and
// with the service account still impersonated.
func TestKubeconfigSecretOptIns(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("tok"), 0o600))
	tests := []struct {
		name  string
		h     hostileKubeconfig
		cfg   Config
		check func(t *testing.T, rc *rest.Config)
	}{
		{name: "exec", h: hostileKubeconfigs[0], cfg: Config{InsecureKubeconfigExec: true},
			check: func(t *testing.T, rc *rest.Config) { require.NotNil(t, rc.ExecProvider) }},
		{name: "tokenFile", h: hostileKubeconfig{user: "{tokenFile: " + tokenFile + "}"}, cfg: Config{InsecureKubeconfigFiles: true},
			check: func(t *testing.T, rc *rest.Config) { assert.Equal(t, tokenFile, rc.BearerTokenFile) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "kc"}, Data: map[string][]byte{"value": tc.h.data()}}
			tc.cfg.DefaultServiceAccount = "tenant"
			e := newEnv(t, tc.cfg, hr(t, podinfoYAML+"  kubeConfig:\n    secretRef: {name: kc}\n"), secret)
			_, err := e.reconcile("podinfo")
			require.NoError(t, err)
			require.Equal(t, []string{"apps/kc as tenant"}, e.built)
			tc.check(t, e.configs[0])
			assert.Equal(t, "system:serviceaccount:apps:tenant", e.configs[0].Impersonate.UserName)
		})
	}
}

// DefaultServiceAccount applies to a release on a kubeconfig's cluster as
// to one on the local cluster.
func TestDefaultServiceAccountOnKubeconfigTarget(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "kc"}, Data: map[string][]byte{"value": []byte(kubeconfig)}}
	e := newEnv(t, Config{DefaultServiceAccount: "tenant"}, hr(t, podinfoYAML+"  kubeConfig:\n    secretRef: {name: kc}\n"), secret)
	_, err := e.reconcile("podinfo")
	require.NoError(t, err)
	require.Equal(t, []string{"apps/kc as tenant"}, e.built)
	assert.Equal(t, "system:serviceaccount:apps:tenant", e.configs[0].Impersonate.UserName)
	assert.Equal(t, "abc", e.configs[0].BearerToken)
}

// SecretMembers refuses the same kubeconfigs, naming the member, Secret,
// key and field, and takes the same opt-ins.
func TestSecretMembersRefusesExecAndFiles(t *testing.T) {
	for _, h := range hostileKubeconfigs {
		t.Run(h.name, func(t *testing.T) {
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "kc", Labels: map[string]string{MemberLabel: "m1"}},
				Data: map[string][]byte{"value.yaml": h.data()}}
			c := fake.NewClientBuilder().WithObjects(sec).Build()
			var built []*rest.Config
			build := func(name string, cfg *rest.Config) (release.Cluster, error) {
				built = append(built, cfg)
				return memory.New(name), nil
			}
			s := &SecretMembers{Reader: c, Namespace: "fleet", NewCluster: build}
			_, err := s.Members(t.Context())
			var ke *kube.KubeconfigError
			require.ErrorAs(t, err, &ke)
			assert.Equal(t, h.field, ke.Field)
			assert.Contains(t, err.Error(), `member m1: kubeconfig in key "value.yaml" of Secret fleet/kc: `+h.field+": ")
			assert.NotContains(t, err.Error(), leak)
			assert.Empty(t, built)
			if h.optIn == "" {
				return
			}
			s = &SecretMembers{Reader: c, Namespace: "fleet", NewCluster: build,
				InsecureKubeconfigExec: h.optIn == "exec", InsecureKubeconfigFiles: h.optIn == "files"}
			_, err = s.Members(t.Context())
			if h.optIn == "files" {
				// The files are not there: clientcmd fails to read them,
				// and still nothing names them.
				require.Error(t, err)
				assert.NotContains(t, err.Error(), leak)
				var ke *kube.KubeconfigError
				require.ErrorAs(t, err, &ke)
				assert.Empty(t, ke.Field, "past the refusal: the files are read")
				return
			}
			require.NoError(t, err)
			require.Len(t, built, 1)
		})
	}
}

// ownIdentityOnly is a member cluster without the Impersonator role.
type ownIdentityOnly struct{ release.Cluster }

// In fleet mode a release's service account (or the default) is
// impersonated on every member; a member that cannot impersonate fails
// the release, visibly, and gets nothing installed.
func TestFleetServiceAccounts(t *testing.T) {
	tests := []struct {
		name, spec, def, user string
	}{
		{name: "serviceAccountName", spec: "deployer", user: "system:serviceaccount:apps:deployer"},
		{name: "DefaultServiceAccount", def: "tenant", user: "system:serviceaccount:apps:tenant"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pp := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(placeEverywhere), &pp.Object))
			y := podinfoYAML
			if tc.spec != "" {
				y += "  serviceAccountName: " + tc.spec + "\n"
			}
			hub := fake.NewClientBuilder().WithScheme(testScheme(t)).
				WithObjects(hr(t, y), pp).WithStatusSubresource(&release.Release{}).Build()
			dev, prod := memory.New("dev-1"), memory.New("prod-1")
			m, err := NewMetrics(nil)
			require.NoError(t, err)
			r, err := NewFleet(FleetConfig{
				Client: hub, Charts: testCharts, Metrics: m, DefaultServiceAccount: tc.def,
				Members: StaticMembers{
					{Cluster: dev, Facts: policy.Cluster{Labels: map[string]string{"env": "dev"}}},
					{Cluster: ownIdentityOnly{prod}, Facts: policy.Cluster{Name: "prod-1", Labels: map[string]string{"env": "prod"}}},
				},
			})
			require.NoError(t, err)
			_, err = r.Reconcile(t.Context(), ctrl.Request{NamespacedName: fleetRequest.NamespacedName})
			require.NoError(t, err)
			got := &release.Release{}
			require.NoError(t, hub.Get(t.Context(), client.ObjectKey{Namespace: "apps", Name: "podinfo"}, got))
			ready := got.Status.GetCondition(release.ConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, metav1.ConditionFalse, ready.Status)
			assert.Contains(t, ready.Message, "ready on 1/2 members; prod-1: ")
			assert.Contains(t, ready.Message, "release apps/podinfo on member prod-1: spec.serviceAccountName")
			assert.Contains(t, ready.Message, "cluster cannot impersonate")
			assert.Contains(t, dev.Impersonations(), memory.Impersonation{User: tc.user, Call: "HelmConfig", Namespace: "apps"})
			assert.NotContains(t, strings.Join(prod.Summary(), "\n"), "podinfo", "nothing installed with prod-1's own credentials")
		})
	}
}
