package memory

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/helmfleet/helmfleet/release"
)

// statusMode says how a write treats an object's status, as an API
// server's strategy for the resource or subresource written does.
type statusMode int

const (
	// statusPlain: the kind has no status subresource (or the write is an
	// Update, which the in-memory cluster keeps as it always was): status
	// is a field like any other.
	statusPlain statusMode = iota
	// statusMain: a write to an object whose kind has a status
	// subresource. Status is not the writer's: the live status stays (none
	// on create), and the writer never owns status fields.
	statusMain
	// statusOnly: a write to the status subresource. Only status is the
	// writer's; everything else stays as it is live.
	statusOnly
)

// subresource is the subresource the mode's field manager records in
// managedFields entries.
func (m statusMode) subresource() string {
	if m == statusOnly {
		return release.SubresourceStatus
	}
	return ""
}

// resetFields are the fields the mode's strategy resets, which Kubernetes'
// field manager leaves out of the writer's ownership and of conflicts. They
// follow the custom resource strategies of apiextensions-apiserver: the
// main resource resets status when the status subresource is on; the
// status subresource resets metadata and spec. (The status strategies of
// built-in kinds reset spec and a few metadata fields, differing by kind;
// the in-memory cluster keeps all of metadata from a status write, so it
// resets all of metadata for them too.)
func (m statusMode) resetFields(gvk schema.GroupVersionKind) map[fieldpath.APIVersion]fieldpath.Filter {
	var set *fieldpath.Set
	switch m {
	case statusMain:
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	case statusOnly:
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("spec"))
	default:
		return nil
	}
	return map[fieldpath.APIVersion]fieldpath.Filter{
		fieldpath.APIVersion(gvk.GroupVersion().String()): fieldpath.NewExcludeSetFilter(set),
	}
}

// hasStatusSubresource reports whether gvk has a status subresource: a
// kind a stored CRD serves if that CRD version declares
// subresources.status; CustomResourceDefinition and APIService; a
// built-in kind if client-go's schema gives it a status field.
func (s *store) hasStatusSubresource(gvk schema.GroupVersionKind) bool {
	if status, crd := s.mapper.crdStatus(gvk); crd {
		return status
	}
	if gvk.GroupKind() == crdGVK.GroupKind() || gvk.GroupKind() == apiServiceGVK.GroupKind() {
		return true
	}
	return s.schemas.typedStatus(gvk)
}

// applyMode returns the status mode of a server-side apply of gvk to
// subresource ("" or "status").
func (s *store) applyMode(gvk schema.GroupVersionKind, subresource string) (statusMode, error) {
	has := s.hasStatusSubresource(gvk)
	switch subresource {
	case "":
		if has {
			return statusMain, nil
		}
		return statusPlain, nil
	case release.SubresourceStatus:
		if has {
			return statusOnly, nil
		}
		return 0, fmt.Errorf("%s %s has no status subresource", gvk.Kind, gvk.GroupVersion())
	}
	return 0, fmt.Errorf("subresource %q: not one of \"\" and %q", subresource, release.SubresourceStatus)
}

// prepareIn fixes what the writer sent before the field manager sees it:
// for statusMain its status goes, as the strategy's PrepareForCreate and
// PrepareForUpdate drop it. in is the store's own copy.
func (m statusMode) prepareIn(in *unstructured.Unstructured) {
	if m == statusMain {
		delete(in.Object, "status")
	}
}

// prepareOut fixes the field manager's result out against the live object
// (nil on create), as the strategy's PrepareForUpdate does after the field
// manager ran: for statusMain out keeps the live status, for statusOnly
// the result is live with out's status and managedFields.
func (m statusMode) prepareOut(live, out *unstructured.Unstructured) *unstructured.Unstructured {
	switch {
	case m == statusMain:
		delete(out.Object, "status")
		if live != nil {
			if status, ok := live.Object["status"]; ok {
				out.Object["status"] = runtime.DeepCopyJSONValue(status)
			}
		}
		return out
	case m != statusOnly || live == nil:
		return out
	}
	res := live.DeepCopy()
	meta, ok := res.Object["metadata"].(map[string]any)
	if !ok {
		meta = map[string]any{}
		res.Object["metadata"] = meta
	}
	if mf, ok, _ := unstructured.NestedFieldNoCopy(out.Object, "metadata", "managedFields"); ok {
		meta["managedFields"] = mf
	} else {
		delete(meta, "managedFields")
	}
	if status, ok := out.Object["status"]; ok {
		res.Object["status"] = status
	} else {
		delete(res.Object, "status")
	}
	return res
}
