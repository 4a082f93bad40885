package memory

import (
	"fmt"
	"sync/atomic"

	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/helmrecord"
	"github.com/helmfleet/helmfleet/release"
)

// Operation names one kind of call into a Cluster that a Fault can fail.
type Operation string

// The calls through release.Cluster (and Patch and Update).
const (
	// OpGet is Cluster.Get.
	OpGet Operation = "get"
	// OpList is Cluster.List; its ref has no name.
	OpList Operation = "list"
	// OpApply is Cluster.Apply, dry runs included.
	OpApply Operation = "apply"
	// OpPatch is Cluster.Patch.
	OpPatch Operation = "patch"
	// OpUpdate is Cluster.Update.
	OpUpdate Operation = "update"
	// OpDelete is Cluster.Delete.
	OpDelete Operation = "delete"
)

// The calls Helm's actions make through the kube client of HelmConfig.
// Helm makes one API request per object, and so does each of these: a
// fault fails the request for that object while the objects before it
// stay written, as on a real API server.
const (
	// OpHelmBuild is the decoding of one object of a manifest.
	OpHelmBuild Operation = "helm build"
	// OpHelmGet is a read of one object by Helm: its ownership check
	// before an install or upgrade, and the read before each object an
	// upgrade or rollback writes.
	OpHelmGet Operation = "helm get"
	// OpHelmCreate is the create of one object, by an install or by an
	// upgrade or rollback that adds it.
	OpHelmCreate Operation = "helm create"
	// OpHelmUpdate is the patch of one existing object by an upgrade or
	// rollback.
	OpHelmUpdate Operation = "helm update"
	// OpHelmDelete is the delete of one object, by an uninstall or by an
	// upgrade or rollback that drops it.
	OpHelmDelete Operation = "helm delete"
)

// The writes of Helm's release records through the storage of
// HelmConfig (Storage is not affected: tests tamper through it). The ref
// is the Secret Helm's default driver would write: v1 Secret
// sh.helm.release.v1.<release>.v<revision> in the storage namespace.
const (
	// OpStorageCreate is the write of a new release record.
	OpStorageCreate Operation = "storage create"
	// OpStorageUpdate is the rewrite of a release record (its status).
	OpStorageUpdate Operation = "storage update"
	// OpStorageDelete is the removal of a release record.
	OpStorageDelete Operation = "storage delete"
)

// Fault decides whether one call fails: it returns the error to inject,
// or nil to let the call through. It is asked before the call touches
// the cluster, so a failed call changes nothing, and it may be called
// from many goroutines at once. A panic of the Fault fails the call: its
// *FaultError wraps a *release.CallbackPanicError.
type Fault func(op Operation, ref release.ObjectRef) error

// FaultError is the error of a call that a Fault failed. It wraps the
// injected error.
type FaultError struct {
	// Cluster is the name of the cluster.
	Cluster string
	// Op is the failed operation.
	Op Operation
	// Object is the object of the call (no name for a List).
	Object release.ObjectRef
	// Err is the error the Fault returned.
	Err error
}

func (e *FaultError) Error() string {
	obj := e.Object.String()
	if e.Object.Name == "" {
		obj = e.Object.GroupVersion().String() + " " + e.Object.Kind
		if e.Object.Namespace != "" {
			obj += " in " + e.Object.Namespace
		}
	}
	return fmt.Sprintf("cluster %s: %s %s: injected: %v", e.Cluster, e.Op, obj, e.Err)
}

// Unwrap returns the injected error.
func (e *FaultError) Unwrap() error { return e.Err }

// SetFaults makes every later call ask f whether it fails (nil removes
// the faults). Faults come after SetUnreachable: an unreachable cluster
// fails every call without asking f.
func (c *Cluster) SetFaults(f Fault) {
	c.mu.Lock()
	c.faults = f
	c.mu.Unlock()
}

// fault asks the cluster's Fault about one call; f runs without the
// cluster's lock, so it may call into the cluster.
func (c *Cluster) fault(op Operation, ref release.ObjectRef) error {
	c.mu.Lock()
	f := c.faults
	c.mu.Unlock()
	if f == nil {
		return nil
	}
	if err := release.Contain("memory.Fault", func() error { return f(op, ref) }); err != nil {
		return &FaultError{Cluster: c.name, Op: op, Object: ref, Err: err}
	}
	return nil
}

// FailNth returns a Fault that fails the n-th call (counting from 1) of
// op whose object matches (nil matches every object) with err, once;
// every other call goes through. It is safe for concurrent use.
func FailNth(op Operation, match func(release.ObjectRef) bool, n int, err error) Fault {
	var seen atomic.Int64
	return func(o Operation, ref release.ObjectRef) error {
		if o != op || (match != nil && !match(ref)) {
			return nil
		}
		if seen.Add(1) == int64(n) {
			return err
		}
		return nil
	}
}

// faultDriver is a Helm storage driver that asks the cluster's Fault
// before each write. It keeps copies of the records, as Helm's Secret
// driver does by encoding them: Helm changes a release it read or wrote
// in place (its status) before it writes it again, and over the bare
// memory driver that change would reach storage even when the write that
// should carry it fails.
type faultDriver struct {
	driver.Driver
	c         *Cluster
	namespace string
}

var recordGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

func (d *faultDriver) ref(key string) release.ObjectRef {
	return release.ObjectRef{GroupVersionKind: recordGVK, Namespace: d.namespace, Name: key}
}

// Create stores a copy of a new record unless a fault says otherwise.
func (d *faultDriver) Create(key string, rls *helmrelease.Release) error {
	if err := d.c.fault(OpStorageCreate, d.ref(key)); err != nil {
		return err
	}
	return d.Driver.Create(key, helmrecord.Copy(rls))
}

// Update stores a copy of a record unless a fault says otherwise.
func (d *faultDriver) Update(key string, rls *helmrelease.Release) error {
	if err := d.c.fault(OpStorageUpdate, d.ref(key)); err != nil {
		return err
	}
	return d.Driver.Update(key, helmrecord.Copy(rls))
}

// Delete removes a record unless a fault says otherwise.
func (d *faultDriver) Delete(key string) (*helmrelease.Release, error) {
	if err := d.c.fault(OpStorageDelete, d.ref(key)); err != nil {
		return nil, err
	}
	return d.Driver.Delete(key)
}

// Get returns a copy of one record.
func (d *faultDriver) Get(key string) (*helmrelease.Release, error) {
	r, err := d.Driver.Get(key)
	return helmrecord.Copy(r), err
}

// List returns copies of the records filter keeps.
func (d *faultDriver) List(filter func(*helmrelease.Release) bool) ([]*helmrelease.Release, error) {
	rs, err := d.Driver.List(filter)
	return helmrecord.CopyAll(rs), err
}

// Query returns copies of the records with labels.
func (d *faultDriver) Query(labels map[string]string) ([]*helmrelease.Release, error) {
	rs, err := d.Driver.Query(labels)
	return helmrecord.CopyAll(rs), err
}
