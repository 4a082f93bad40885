package kubeharness

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// DefaultClusters are the control planes Start runs when Options.Clusters
// is empty.
var DefaultClusters = []string{"hub", "member1", "member2"}

// UnprivilegedUser is the user of ControlPlane.Unprivileged: authenticated
// (by token) but bound to no role, so RBAC denies it.
const UnprivilegedUser = "helmfleet-nobody"

// Options configure Start.
type Options struct {
	// Binaries to run; required (see FindBinaries).
	Binaries Binaries
	// Dir holds certificates, kubeconfigs, etcd data and logs; required.
	Dir string
	// Clusters names the control planes; empty means DefaultClusters.
	Clusters []string
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
	// ReadyTimeout bounds the wait for every /readyz; zero means two
	// minutes.
	ReadyTimeout time.Duration
}

// Harness is a set of running control planes: one etcd shared by all
// (each API server keeps its data under its own --etcd-prefix) and one
// kube-apiserver per cluster.
type Harness struct {
	clusters []*ControlPlane
	etcd     *process
	logf     func(format string, args ...any)
}

// ControlPlane is one running cluster.
type ControlPlane struct {
	// Name of the cluster.
	Name string
	// Host is the API server's URL.
	Host string
	// Admin authenticates as a member of system:masters.
	Admin *rest.Config
	// Unprivileged authenticates as UnprivilegedUser, whom RBAC denies.
	Unprivileged *rest.Config
	// AdminKubeconfig and UnprivilegedKubeconfig are kubeconfig files for
	// the same identities, with certificates embedded.
	AdminKubeconfig, UnprivilegedKubeconfig string

	apiserver *process
}

// Start runs etcd and one API server per cluster, waits until every
// /readyz answers, and returns the running harness. The caller must call
// Stop, also when tests fail. On error, everything started is stopped.
func Start(ctx context.Context, opts Options) (_ *Harness, err error) {
	if opts.Binaries.APIServer == "" || opts.Binaries.Etcd == "" {
		return nil, errors.New("kubeharness: Options.Binaries is required")
	}
	if opts.Dir == "" {
		return nil, errors.New("kubeharness: Options.Dir is required")
	}
	names := opts.Clusters
	if len(names) == 0 {
		names = DefaultClusters
	}
	h := &Harness{logf: opts.Logf}
	if h.logf == nil {
		h.logf = func(string, ...any) {}
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, h.Stop())
		}
	}()
	ports, err := freePorts(2 + len(names))
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if h.etcd, err = startEtcd(opts.Binaries.Etcd, filepath.Join(opts.Dir, "etcd"), ports[0], ports[1]); err != nil {
		return nil, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	if err := waitFor(ctx, 30*time.Second, h.etcd, http.DefaultClient, etcdURL+"/health"); err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	h.logf("kubeharness: etcd ready after %v (pid %d)", time.Since(start).Round(time.Millisecond), h.etcd.pid())

	now := time.Now()
	for i, name := range names {
		cp, err := startAPIServer(opts.Binaries.APIServer, filepath.Join(opts.Dir, name), name, etcdURL, ports[2+i], now)
		if err != nil {
			return nil, err
		}
		h.clusters = append(h.clusters, cp)
	}
	timeout := opts.ReadyTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	for _, cp := range h.clusters {
		client, err := httpClient(cp.Admin)
		if err != nil {
			return nil, err
		}
		if err := waitFor(ctx, timeout, cp.apiserver, client, cp.Host+"/readyz"); err != nil {
			return nil, fmt.Errorf("%s: %w", cp.Name, err)
		}
		h.logf("kubeharness: %s ready at %s after %v (pid %d)", cp.Name, cp.Host, time.Since(start).Round(time.Millisecond), cp.apiserver.pid())
	}
	return h, nil
}

// Clusters returns the control planes in the order of Options.Clusters.
func (h *Harness) Clusters() []*ControlPlane { return h.clusters }

// Cluster returns the control plane called name, or nil.
func (h *Harness) Cluster(name string) *ControlPlane {
	for _, cp := range h.clusters {
		if cp.Name == name {
			return cp
		}
	}
	return nil
}

// Stop stops every API server, then etcd (an API server whose etcd is gone
// takes minutes to shut down), each by its process group. It may be called
// more than once.
func (h *Harness) Stop() error {
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, cp := range h.clusters {
		wg.Go(func() {
			if err := cp.StopAPIServer(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if h.etcd != nil {
		errs = append(errs, h.etcd.stop())
	}
	return errors.Join(errs...)
}

// StopAPIServer stops this cluster's API server (SIGTERM to its process
// group, SIGKILL after 15 s), leaving the rest of the harness running:
// calls to the cluster fail from then on.
func (cp *ControlPlane) StopAPIServer() error {
	if cp.apiserver == nil {
		return nil
	}
	if err := cp.apiserver.stop(); err != nil {
		return fmt.Errorf("%s: %w", cp.Name, err)
	}
	return nil
}

// ProcessMemory is the resident memory of one harness process.
type ProcessMemory struct {
	// Name is "etcd" or "kube-apiserver <cluster>".
	Name string
	PID  int
	// RSSKiB is VmRSS from /proc/<pid>/status.
	RSSKiB int64
}

// Memory reads the resident memory of every running process.
func (h *Harness) Memory() ([]ProcessMemory, error) {
	var out []ProcessMemory
	procs := []*process{h.etcd}
	for _, cp := range h.clusters {
		procs = append(procs, cp.apiserver)
	}
	for _, p := range procs {
		if p == nil || p.exited() {
			continue
		}
		rss, err := vmRSS(p.pid())
		if err != nil {
			return nil, err
		}
		out = append(out, ProcessMemory{Name: p.name, PID: p.pid(), RSSKiB: rss})
	}
	return out, nil
}

// LogMemory writes each process's RSS and the total through logf (for
// example t.Logf).
func (h *Harness) LogMemory(logf func(format string, args ...any)) error {
	mem, err := h.Memory()
	if err != nil {
		return err
	}
	var total int64
	for _, m := range mem {
		logf("kubeharness: %-24s pid %-7d VmRSS %5d MiB", m.Name, m.PID, m.RSSKiB/1024)
		total += m.RSSKiB
	}
	logf("kubeharness: %-24s             VmRSS %5d MiB", "total", total/1024)
	return nil
}

func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

func startEtcd(bin, dir string, clientPort, peerPort int) (*process, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	return startProcess("etcd", bin, filepath.Join(dir, "etcd.log"),
		"--name=helmfleet",
		"--data-dir="+filepath.Join(dir, "data"),
		"--listen-client-urls="+client,
		"--advertise-client-urls="+client,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=helmfleet="+peer,
		// Test data need not survive a crash; fsync dominates etcd's
		// latency on a shared disk.
		"--unsafe-no-fsync",
	)
}

func startAPIServer(bin, dir, name, etcdURL string, port int, now time.Time) (*ControlPlane, error) {
	p, err := newPKI(name, now)
	if err != nil {
		return nil, err
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	nobodyToken := hex.EncodeToString(token)
	files := map[string][]byte{
		"ca.crt":        p.ca.certPEM,
		"apiserver.crt": p.serving.certPEM,
		"apiserver.key": p.serving.keyPEM,
		"sa.key":        p.saKeyPEM,
		"sa.pub":        p.saPubPEM,
		"tokens.csv":    fmt.Appendf(nil, "%s,%s,uid-nobody\n", nobodyToken, UnprivilegedUser),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for f, data := range files {
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			return nil, err
		}
	}
	host := fmt.Sprintf("https://127.0.0.1:%d", port)
	cp := &ControlPlane{
		Name: name,
		Host: host,
		Admin: &rest.Config{Host: host, QPS: 100, Burst: 200, TLSClientConfig: rest.TLSClientConfig{
			CAData: p.ca.certPEM, CertData: p.admin.certPEM, KeyData: p.admin.keyPEM}},
		Unprivileged: &rest.Config{Host: host, QPS: 100, Burst: 200, BearerToken: nobodyToken,
			TLSClientConfig: rest.TLSClientConfig{CAData: p.ca.certPEM}},
		AdminKubeconfig:        filepath.Join(dir, "admin.kubeconfig"),
		UnprivilegedKubeconfig: filepath.Join(dir, "nobody.kubeconfig"),
	}
	if err := writeKubeconfig(cp.AdminKubeconfig, name, cp.Admin); err != nil {
		return nil, err
	}
	if err := writeKubeconfig(cp.UnprivilegedKubeconfig, name, cp.Unprivileged); err != nil {
		return nil, err
	}
	f := func(n string) string { return filepath.Join(dir, n) }
	cp.apiserver, err = startProcess("kube-apiserver "+name, bin, f("apiserver.log"),
		"--etcd-servers="+etcdURL,
		"--etcd-prefix=/registry-"+name,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		// The default reconciler refuses a loopback advertise address.
		"--endpoint-reconciler-type=none",
		"--tls-cert-file="+f("apiserver.crt"),
		"--tls-private-key-file="+f("apiserver.key"),
		"--client-ca-file="+f("ca.crt"),
		"--token-auth-file="+f("tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer="+host,
		"--service-account-key-file="+f("sa.pub"),
		"--service-account-signing-key-file="+f("sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--cert-dir="+f("certs"),
	)
	if err != nil {
		return nil, err
	}
	return cp, nil
}

func writeKubeconfig(path, name string, cfg *rest.Config) error {
	api := clientcmdapi.NewConfig()
	api.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	api.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	api.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	api.CurrentContext = name
	return clientcmd.WriteToFile(*api, path)
}

func httpClient(cfg *rest.Config) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CAData) {
		return nil, errors.New("kubeharness: bad CA")
	}
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}},
	}, nil
}

// waitFor polls url until it answers 200, p exits, ctx ends or timeout
// passes.
func waitFor(ctx context.Context, timeout time.Duration, p *process, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if p.exited() {
			return fmt.Errorf("%s exited before %s answered: %v\n%s", p.name, url, p.waitErr, p.logTail(20))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", url, resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)\n%s", url, ctx.Err(), last, p.logTail(20))
		case <-tick.C:
		}
	}
}

// freePorts returns n distinct free TCP ports of 127.0.0.1. They are free
// when returned; another process could still take one before use.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// process is one child in its own process group.
type process struct {
	name    string
	cmd     *exec.Cmd
	log     string
	done    chan struct{}
	waitErr error
	once    sync.Once
	stopErr error
}

func startProcess(name, bin, logPath string, args ...string) (*process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, SIGKILL after 15 s, and waits
// for the process to be reaped.
func (p *process) stop() error {
	p.once.Do(func() {
		pgid := -p.pid()
		if err := syscall.Kill(pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			p.stopErr = fmt.Errorf("stop %s: %w", p.name, err)
		}
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			<-p.done
		}
		// Whatever else is left in the group goes too.
		_ = syscall.Kill(pgid, syscall.SIGKILL)
	})
	return p.stopErr
}

func (p *process) logTail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
