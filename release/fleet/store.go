package fleet

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/helmfleet/helmfleet/release"
)

// Entry is one unit the fleet applied on one member: the member's copy
// of a release or a Kustomization after overrides, with the status of
// its last reconcile.
type Entry struct {
	// Key names the member and the unit.
	Key Key
	// Release is the member's copy of a release (Key.Kind empty).
	Release *release.Release
	// Kustomization is the member's copy of a Kustomization (Key.Kind
	// KindKustomization).
	Kustomization *release.Kustomization
}

// meta is the name of the entry's unit.
func (e Entry) meta() (namespace, name string, ok bool) {
	switch {
	case e.Key.IsKustomization() && e.Kustomization != nil && e.Release == nil:
		return e.Kustomization.Namespace, e.Kustomization.Name, true
	case !e.Key.IsKustomization() && e.Release != nil && e.Kustomization == nil:
		return e.Release.Namespace, e.Release.Name, true
	}
	return "", "", false
}

// Store keeps a fleet's inventory (Entry per member and release) where a
// restarted process finds it, so that garbage collection still knows
// what an earlier process installed. Apply saves an entry before a
// release is first installed on a member and after every reconcile,
// rollback and uninstall of it, so a process that dies mid-apply leaves
// every release it may have installed in the store. One process writes a
// store at a time (a controller elects a leader); Fleet.Load reads it
// again after a change of writer.
type Store interface {
	// Load returns every entry, sorted by key.
	Load(ctx context.Context) ([]Entry, error)
	// Save writes one entry, replacing the entry of the same key.
	Save(ctx context.Context, e Entry) error
	// Delete removes the entry of k; an absent entry is not an error.
	Delete(ctx context.Context, k Key) error
}

// StoreError reports a store that failed a fleet: the operation, the
// entry's key (zero for a load) and the store's error.
type StoreError struct {
	// Op is "load", "save" or "delete".
	Op string
	// Key is the entry's key.
	Key Key
	// Err is the store's error.
	Err error
}

// Error implements error.
func (e *StoreError) Error() string {
	if e.Op == "load" {
		return "inventory store: load: " + e.Err.Error()
	}
	return fmt.Sprintf("inventory store: %s %s: %v", e.Op, e.Key, e.Err)
}

// Unwrap returns the store's error.
func (e *StoreError) Unwrap() error { return e.Err }

// ObjectStore is a Store in Secrets of one namespace of a cluster (the
// hub), written by server-side apply through any release.ObjectClient
// (release/memory, release/kube): one Secret per entry, so a save writes
// one small object whatever the size of the fleet, as Helm keeps one
// Secret per release revision. A Secret rather than a ConfigMap because
// an entry holds the member's copy of the Release, inline values
// included. Each Secret is named after its store and a hash of its key,
// labelled InventoryLabel=<store name>, of type InventorySecretType, and
// holds the entry as gzipped JSON; a Secret is at most 1 MiB, so an entry
// larger than MaxEntryBytes compressed is refused with *EntryTooLargeError
// before anything is written.
type ObjectStore struct {
	client    release.ObjectClient
	namespace string
	name      string
	// zips reuses gzip writers: each holds about 800 KB of compressor
	// state, more than an entry.
	zips sync.Pool
}

var _ Store = (*ObjectStore)(nil)

// ObjectStoreConfig names where an ObjectStore keeps its Secrets.
type ObjectStoreConfig struct {
	// Namespace on the cluster; required.
	Namespace string
	// Name of the inventory, a DNS label (the fleet's name): the prefix of
	// its Secrets and the value of their InventoryLabel. Fleets that share
	// a namespace need different names.
	Name string
}

// The marks of an ObjectStore's Secrets.
const (
	// InventoryLabel holds the store's name on each of its Secrets.
	InventoryLabel = "fleet.helmfleet.io/inventory"
	// InventorySecretType is the type of its Secrets.
	InventorySecretType = "fleet.helmfleet.io/inventory.v1"
	// InventoryFieldManager owns the fields it writes.
	InventoryFieldManager = "helmfleet-inventory"
	// MaxEntryBytes bounds one entry's compressed data, leaving room
	// under the API server's 1 MiB for a Secret's metadata and base64.
	MaxEntryBytes = 700 * 1024
)

// EntryTooLargeError reports an entry too large for one Secret.
type EntryTooLargeError struct {
	// Key names the entry.
	Key Key
	// Size is its compressed size in bytes, Limit is MaxEntryBytes.
	Size, Limit int
}

// Error implements error.
func (e *EntryTooLargeError) Error() string {
	return fmt.Sprintf("inventory entry %s is %d bytes compressed, more than the %d one Secret holds: its Release (spec.values) is too large", e.Key, e.Size, e.Limit)
}

// NewObjectStore returns a store in client's cfg.Namespace.
func NewObjectStore(client release.ObjectClient, cfg ObjectStoreConfig) (*ObjectStore, error) {
	if client == nil {
		return nil, errors.New("fleet: object store: client is nil")
	}
	if cfg.Namespace == "" {
		return nil, errors.New("fleet: object store: Namespace is required")
	}
	for _, msg := range validation.IsDNS1123Label(cfg.Name) {
		return nil, fmt.Errorf("fleet: object store: Name %q: %s", cfg.Name, msg)
	}
	if len(cfg.Name) > 40 {
		return nil, fmt.Errorf("fleet: object store: Name %q: longer than 40 characters (its Secrets add a hash)", cfg.Name)
	}
	return &ObjectStore{client: client, namespace: cfg.Namespace, name: cfg.Name}, nil
}

var secretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// entryJSON is an entry as stored.
type entryJSON struct {
	Member        string                 `json:"member"`
	Release       *release.Release       `json:"release,omitempty"`
	Kustomization *release.Kustomization `json:"kustomization,omitempty"`
}

// objectName is the Secret of k: the store's name and 20 hex digits of
// SHA-256 of the key (member, namespace and name may together exceed
// what a name holds).
func (s *ObjectStore) objectName(k Key) string {
	id := k.Cluster + "\x00" + k.Namespace + "\x00" + k.Name
	if k.Kind != "" {
		// Releases keep the names they had before Kustomizations.
		id += "\x00" + k.Kind
	}
	sum := sha256.Sum256([]byte(id))
	return s.name + "-" + hex.EncodeToString(sum[:10])
}

func (s *ObjectStore) ref(k Key) release.ObjectRef {
	return release.ObjectRef{GroupVersionKind: secretGVK, Namespace: s.namespace, Name: s.objectName(k)}
}

// Save implements Store.
func (s *ObjectStore) Save(ctx context.Context, e Entry) error {
	ns, name, ok := e.meta()
	if !ok {
		return fmt.Errorf("inventory entry %s: needs exactly the unit its key names (a release or a Kustomization)", e.Key)
	}
	if ns != e.Key.Namespace || name != e.Key.Name {
		return fmt.Errorf("inventory entry %s: unit is %s/%s", e.Key, ns, name)
	}
	raw, err := json.Marshal(entryJSON{Member: e.Key.Cluster, Release: e.Release, Kustomization: e.Kustomization})
	if err != nil {
		return fmt.Errorf("inventory entry %s: %w", e.Key, err)
	}
	var buf bytes.Buffer
	zw, _ := s.zips.Get().(*gzip.Writer)
	if zw == nil {
		zw = gzip.NewWriter(&buf)
	} else {
		zw.Reset(&buf)
	}
	_, _ = zw.Write(raw)
	_ = zw.Close()
	s.zips.Put(zw)
	if buf.Len() > MaxEntryBytes {
		return &EntryTooLargeError{Key: e.Key, Size: buf.Len(), Limit: MaxEntryBytes}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata": map[string]any{
			"namespace": s.namespace,
			"name":      s.objectName(e.Key),
			"labels":    map[string]any{InventoryLabel: s.name},
			"annotations": map[string]any{
				"fleet.helmfleet.io/member":  e.Key.Cluster,
				"fleet.helmfleet.io/release": e.Key.unit(),
			},
		},
		"type": InventorySecretType,
		"data": map[string]any{"entry": base64.StdEncoding.EncodeToString(buf.Bytes())},
	}}
	if _, err := s.client.Apply(ctx, obj, release.ApplyOptions{FieldManager: InventoryFieldManager, Force: true}); err != nil {
		return fmt.Errorf("inventory entry %s: %w", e.Key, err)
	}
	return nil
}

// Delete implements Store.
func (s *ObjectStore) Delete(ctx context.Context, k Key) error {
	err := s.client.Delete(ctx, s.ref(k), release.DeleteOptions{})
	if err != nil && !errors.Is(err, release.ErrNotFound) {
		return fmt.Errorf("inventory entry %s: %w", k, err)
	}
	return nil
}

// Load implements Store. A Secret of the store that does not hold an
// entry (edited by hand, say) is an error naming it, not skipped: an
// entry skipped would be a release garbage collection forgets.
func (s *ObjectStore) Load(ctx context.Context) ([]Entry, error) {
	sel := labels.SelectorFromSet(labels.Set{InventoryLabel: s.name})
	objs, err := s.client.List(ctx, secretGVK, s.namespace, sel)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(objs))
	for _, obj := range objs {
		e, err := s.decode(obj)
		if err != nil {
			return nil, fmt.Errorf("Secret %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return keyLess(out[i].Key, out[j].Key) })
	return out, nil
}

func (s *ObjectStore) decode(obj *unstructured.Unstructured) (Entry, error) {
	data, _, _ := unstructured.NestedString(obj.Object, "data", "entry")
	if data == "" {
		return Entry{}, errors.New("data.entry is missing or empty")
	}
	zipped, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return Entry{}, fmt.Errorf("data.entry: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		return Entry{}, fmt.Errorf("data.entry: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return Entry{}, fmt.Errorf("data.entry: %w", err)
	}
	var ej entryJSON
	if err := json.Unmarshal(raw, &ej); err != nil {
		return Entry{}, fmt.Errorf("data.entry: %w", err)
	}
	if ej.Member == "" || (ej.Release == nil) == (ej.Kustomization == nil) {
		return Entry{}, errors.New("data.entry: no member, or not exactly one of release and kustomization")
	}
	var k Key
	if ej.Release != nil {
		k = Key{Cluster: ej.Member, Namespace: ej.Release.Namespace, Name: ej.Release.Name}
	} else {
		k = Key{Cluster: ej.Member, Namespace: ej.Kustomization.Namespace, Name: ej.Kustomization.Name, Kind: KindKustomization}
	}
	if want := s.objectName(k); obj.GetName() != want {
		return Entry{}, fmt.Errorf("holds the entry of %s, whose Secret is %s", k, want)
	}
	return Entry{Key: k, Release: ej.Release, Kustomization: ej.Kustomization}, nil
}

// ensureLoaded loads the store once, before the first plan or drift
// check of this Fleet.
func (f *Fleet) ensureLoaded(ctx context.Context) error {
	if f.cfg.Store == nil {
		return nil
	}
	f.loadMu.Lock()
	done := f.loaded
	f.loadMu.Unlock()
	if done {
		return nil
	}
	return f.Load(ctx)
}

// Load replaces the fleet's inventory with Config.Store's: what a new
// process (or a new leader) starts from. Plan and Drift call it once by
// themselves; call it again when another process may have written the
// store since. An entry for a member the fleet does not have is an error
// naming both: its release could not be garbage-collected. Without a
// store, Load does nothing. It waits for a running Apply to end. Status
// and Inventory show what is loaded: nothing before the first Plan,
// Drift or Load.
func (f *Fleet) Load(ctx context.Context) error {
	if f.cfg.Store == nil {
		return nil
	}
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	f.loadMu.Lock()
	defer f.loadMu.Unlock()
	entries, err := f.cfg.Store.Load(ctx)
	if err != nil {
		return &StoreError{Op: "load", Err: err}
	}
	applied := make(map[Key]*release.Release, len(entries))
	appliedK := map[Key]*release.Kustomization{}
	for _, e := range entries {
		if _, ok := f.byName[e.Key.Cluster]; !ok {
			return &StoreError{Op: "load", Err: fmt.Errorf("entry %s: member %q is not one of the fleet's: add it back so its releases can be uninstalled, or delete the entry", e.Key, e.Key.Cluster)}
		}
		if _, _, ok := e.meta(); !ok {
			return &StoreError{Op: "load", Err: fmt.Errorf("entry %s: needs exactly the unit its key names (a release or a Kustomization)", e.Key)}
		}
		if e.Key.IsKustomization() {
			appliedK[e.Key] = e.Kustomization.DeepCopy()
		} else {
			applied[e.Key] = e.Release.DeepCopy()
		}
	}
	f.inv.replace(applied, appliedK)
	f.loaded = true
	return nil
}

// save writes k's entry to the store, if there is one.
func (f *Fleet) save(ctx context.Context, k Key, rel *release.Release) error {
	if f.cfg.Store == nil {
		return nil
	}
	if err := f.cfg.Store.Save(ctx, Entry{Key: k, Release: rel.DeepCopy()}); err != nil {
		return &StoreError{Op: "save", Key: k, Err: err}
	}
	return nil
}

// saveKustomization writes k's entry to the store, if there is one.
func (f *Fleet) saveKustomization(ctx context.Context, k Key, ks *release.Kustomization) error {
	if f.cfg.Store == nil {
		return nil
	}
	if err := f.cfg.Store.Save(ctx, Entry{Key: k, Kustomization: ks.DeepCopy()}); err != nil {
		return &StoreError{Op: "save", Key: k, Err: err}
	}
	return nil
}

// forget removes k's entry from the store, if there is one.
func (f *Fleet) forget(ctx context.Context, k Key) error {
	if f.cfg.Store == nil {
		return nil
	}
	if err := f.cfg.Store.Delete(ctx, k); err != nil {
		return &StoreError{Op: "delete", Key: k, Err: err}
	}
	return nil
}
