package release

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The deep copies of the types in types.go are generated
// (zz_generated.deepcopy.go, hack/generate.sh). Written here by hand are
// those of Spec, whose free-form Values controller-gen cannot copy, and of
// the status types in status.go.

// DeepCopyInto copies in into out, sharing no memory with in. Values are
// copied recursively (see DeepCopyValues).
func (in *Spec) DeepCopyInto(out *Spec) {
	*out = *in
	if in.Chart != nil {
		in, out := &in.Chart, &out.Chart
		*out = new(HelmChartTemplate)
		(*in).DeepCopyInto(*out)
	}
	if in.ChartRef != nil {
		in, out := &in.ChartRef, &out.ChartRef
		*out = new(CrossNamespaceSourceReference)
		(*in).DeepCopyInto(*out)
	}
	if in.KubeConfig != nil {
		in, out := &in.KubeConfig, &out.KubeConfig
		*out = new(KubeConfigReference)
		(*in).DeepCopyInto(*out)
	}
	if in.DependsOn != nil {
		in, out := &in.DependsOn, &out.DependsOn
		*out = make([]DependencyReference, len(*in))
		for i := range *in {
			(*in)[i].DeepCopyInto(&(*out)[i])
		}
	}
	if in.Timeout != nil {
		in, out := &in.Timeout, &out.Timeout
		*out = new(metav1.Duration)
		**out = **in
	}
	if in.MaxHistory != nil {
		in, out := &in.MaxHistory, &out.MaxHistory
		*out = new(int)
		**out = **in
	}
	if in.PersistentClient != nil {
		in, out := &in.PersistentClient, &out.PersistentClient
		*out = new(bool)
		**out = **in
	}
	if in.DriftDetection != nil {
		in, out := &in.DriftDetection, &out.DriftDetection
		*out = new(DriftDetection)
		(*in).DeepCopyInto(*out)
	}
	if in.Install != nil {
		in, out := &in.Install, &out.Install
		*out = new(Install)
		(*in).DeepCopyInto(*out)
	}
	if in.Upgrade != nil {
		in, out := &in.Upgrade, &out.Upgrade
		*out = new(Upgrade)
		(*in).DeepCopyInto(*out)
	}
	if in.Test != nil {
		in, out := &in.Test, &out.Test
		*out = new(Test)
		(*in).DeepCopyInto(*out)
	}
	if in.Rollback != nil {
		in, out := &in.Rollback, &out.Rollback
		*out = new(Rollback)
		(*in).DeepCopyInto(*out)
	}
	if in.Uninstall != nil {
		in, out := &in.Uninstall, &out.Uninstall
		*out = new(Uninstall)
		(*in).DeepCopyInto(*out)
	}
	if in.ValuesFrom != nil {
		in, out := &in.ValuesFrom, &out.ValuesFrom
		*out = make([]ValuesReference, len(*in))
		for i := range *in {
			(*in)[i].DeepCopyInto(&(*out)[i])
		}
	}
	out.Values = DeepCopyValues(in.Values)
	if in.PostRenderers != nil {
		in, out := &in.PostRenderers, &out.PostRenderers
		*out = make([]PostRenderer, len(*in))
		for i := range *in {
			(*in)[i].DeepCopyInto(&(*out)[i])
		}
	}
	if in.CommonMetadata != nil {
		in, out := &in.CommonMetadata, &out.CommonMetadata
		*out = new(CommonMetadata)
		(*in).DeepCopyInto(*out)
	}
	if in.WaitStrategy != nil {
		in, out := &in.WaitStrategy, &out.WaitStrategy
		*out = new(WaitStrategy)
		(*in).DeepCopyInto(*out)
	}
	if in.HealthCheckExprs != nil {
		in, out := &in.HealthCheckExprs, &out.HealthCheckExprs
		*out = make([]CustomHealthCheck, len(*in))
		for i := range *in {
			(*in)[i].DeepCopyInto(&(*out)[i])
		}
	}
}

// DeepCopy returns a copy of in that shares no memory with it, or nil.
func (in *Spec) DeepCopy() *Spec {
	if in == nil {
		return nil
	}
	out := new(Spec)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyValues returns a copy of v, a spec.values map, that shares no
// memory with it: maps and slices of JSON values (map[string]any, []any)
// are copied recursively, and scalars (strings, booleans, numbers,
// json.Number, nil) kept as they are, with their types, so an int stays
// an int. A value of any other type, which Decode never produces, is
// copied through JSON, as before; DeepCopyValues panics, naming its path,
// if JSON cannot encode it (a channel or a func). A nil map stays nil.
func DeepCopyValues(v map[string]any) map[string]any {
	if v == nil {
		return nil
	}
	return deepCopyMap(v, "spec.values")
}

func deepCopyMap(in map[string]any, path string) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = deepCopyValue(v, path+"."+k)
	}
	return out
}

func deepCopyValue(v any, path string) any {
	switch v := v.(type) {
	case nil, string, bool, json.Number,
		float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64:
		return v
	case map[string]any:
		if v == nil {
			return v
		}
		return deepCopyMap(v, path)
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopyValue(e, fmt.Sprintf("%s[%d]", path, i))
		}
		return out
	default:
		data, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("deep copy of %s: %T: %v", path, v, err))
		}
		var out any
		if err := json.Unmarshal(data, &out); err != nil {
			panic(fmt.Sprintf("deep copy of %s: %T: %v", path, v, err))
		}
		return out
	}
}

// DeepCopyInto copies in into out, sharing no memory with in.
func (in *Status) DeepCopyInto(out *Status) {
	*out = *in
	if in.LastAttemptedReleaseActionDuration != nil {
		in, out := &in.LastAttemptedReleaseActionDuration, &out.LastAttemptedReleaseActionDuration
		*out = new(metav1.Duration)
		**out = **in
	}
	if in.Conditions != nil {
		in, out := &in.Conditions, &out.Conditions
		*out = make([]metav1.Condition, len(*in))
		for i := range *in {
			(*in)[i].DeepCopyInto(&(*out)[i])
		}
	}
	if in.History != nil {
		in, out := &in.History, &out.History
		*out = make(Snapshots, len(*in))
		for i := range *in {
			if (*in)[i] != nil {
				(*out)[i] = (*in)[i].DeepCopy()
			}
		}
	}
	if in.Inventory != nil {
		in, out := &in.Inventory, &out.Inventory
		*out = new(ResourceInventory)
		(*in).DeepCopyInto(*out)
	}
}

// DeepCopy returns a copy of in that shares no memory with it, or nil.
func (in *Status) DeepCopy() *Status {
	if in == nil {
		return nil
	}
	out := new(Status)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out, sharing no memory with in: each
// snapshot is copied too.
func (in Snapshots) DeepCopyInto(out *Snapshots) {
	{
		in := &in
		*out = make(Snapshots, len(*in))
		for i := range *in {
			if (*in)[i] != nil {
				(*out)[i] = (*in)[i].DeepCopy()
			}
		}
	}
}

// DeepCopy returns a copy of in that shares no memory with it, or nil.
func (in Snapshots) DeepCopy() Snapshots {
	if in == nil {
		return nil
	}
	out := new(Snapshots)
	in.DeepCopyInto(out)
	return *out
}

// DeepCopyInto copies in into out, sharing no memory with in.
func (in *Snapshot) DeepCopyInto(out *Snapshot) {
	*out = *in
	in.FirstDeployed.DeepCopyInto(&out.FirstDeployed)
	in.LastDeployed.DeepCopyInto(&out.LastDeployed)
	in.Deleted.DeepCopyInto(&out.Deleted)
	if in.TestHooks != nil {
		in, out := &in.TestHooks, &out.TestHooks
		*out = new(map[string]*TestHookStatus)
		if **in != nil {
			in, out := *in, *out
			*out = make(map[string]*TestHookStatus, len(*in))
			for key, val := range *in {
				var outVal *TestHookStatus
				if val != nil {
					outVal = val.DeepCopy()
				}
				(*out)[key] = outVal
			}
		}
	}
}

// DeepCopy returns a copy of in that shares no memory with it, or nil.
func (in *Snapshot) DeepCopy() *Snapshot {
	if in == nil {
		return nil
	}
	out := new(Snapshot)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out, sharing no memory with in.
func (in *TestHookStatus) DeepCopyInto(out *TestHookStatus) {
	*out = *in
	in.LastStarted.DeepCopyInto(&out.LastStarted)
	in.LastCompleted.DeepCopyInto(&out.LastCompleted)
}

// DeepCopy returns a copy of in that shares no memory with it, or nil.
func (in *TestHookStatus) DeepCopy() *TestHookStatus {
	if in == nil {
		return nil
	}
	out := new(TestHookStatus)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out, sharing no memory with in.
func (in *ResourceInventory) DeepCopyInto(out *ResourceInventory) {
	*out = *in
	if in.Entries != nil {
		in, out := &in.Entries, &out.Entries
		*out = make([]ResourceRef, len(*in))
		for i := range *in {
			(*in)[i].DeepCopyInto(&(*out)[i])
		}
	}
}

// DeepCopy returns a copy of in that shares no memory with it, or nil.
func (in *ResourceInventory) DeepCopy() *ResourceInventory {
	if in == nil {
		return nil
	}
	out := new(ResourceInventory)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out; a ResourceRef holds no references.
func (in *ResourceRef) DeepCopyInto(out *ResourceRef) { *out = *in }

// DeepCopy returns a copy of in, or nil.
func (in *ResourceRef) DeepCopy() *ResourceRef {
	if in == nil {
		return nil
	}
	out := new(ResourceRef)
	in.DeepCopyInto(out)
	return out
}
