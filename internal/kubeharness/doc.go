// Package kubeharness runs real Kubernetes control planes for tests: one
// etcd and, per cluster (hub, member1 and member2 by default), a
// kube-apiserver on 127.0.0.1 with RBAC on.
//
// Each cluster gets its own CA, serving certificate for 127.0.0.1, admin
// client certificate in system:masters and service-account key pair, all
// generated in Go, plus a token for an unprivileged user (UnprivilegedUser)
// for RBAC-denial tests. The API servers share the etcd, each under its own
// --etcd-prefix: one etcd instead of three saves about 100 MiB and a second
// of start-up, and the clusters still see nothing of each other.
//
// Start waits for every /readyz and returns *rest.Config values and
// kubeconfig files per cluster. Stop stops the API servers, then etcd, each
// through its process group; children also die with the test binary
// (Pdeathsig) if it is killed before Stop runs. ControlPlane.StopAPIServer
// takes one cluster away mid-test.
//
// The binaries come from .ci/kube-binaries.sh, which builds kube-apiserver
// and etcd from the Go module proxy into BinDir. FindBinaries says whether
// they are there; Integration whether their absence is a failure.
package kubeharness
