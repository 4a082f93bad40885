package kube

import (
	"cmp"
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helmfleet/helmfleet/release"
)

var _ release.Patcher = (*Cluster)(nil)

// Patch applies an RFC 6902 JSON patch to one object, as kubectl patch
// --type=json does: what drift correction uses to put back exactly the
// fields that drifted, leaving every other field and its owner alone.
func (c *Cluster) Patch(ctx context.Context, ref release.ObjectRef, jsonPatch []byte, opts release.PatchOptions) (*unstructured.Unstructured, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cluster %s: patch %s: %w", c.name, ref, err)
	}
	t, err := c.resolveObject(verbPatch, ref)
	if err != nil {
		return nil, ctxError(ctx, err)
	}
	out, err := t.client.Patch(ctx, ref.Name, types.JSONPatchType, jsonPatch, metav1.PatchOptions{FieldManager: cmp.Or(opts.FieldManager, c.fieldManager)})
	if err != nil {
		return nil, c.callError(ctx, err, verbPatch, ref.String(), ref, t)
	}
	c.wrote(ref)
	return out, nil
}
