package release

import (
	"encoding/json"
	"fmt"
)

// DeepCopy returns a copy of in that shares no memory with it: what a
// fleet layer gives each cluster before overriding fields per cluster.
// Values are copied as JSON, so integers in spec.values come back as
// float64, exactly as they do after decoding YAML.
//
// It panics only if spec.values holds something JSON cannot encode (a
// channel or a func), which Decode never produces.
func (in *Release) DeepCopy() *Release {
	if in == nil {
		return nil
	}
	data, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("release %s/%s: deep copy: %v", in.Namespace, in.Name, err))
	}
	out := &Release{}
	if err := json.Unmarshal(data, out); err != nil {
		panic(fmt.Sprintf("release %s/%s: deep copy: %v", in.Namespace, in.Name, err))
	}
	return out
}

// DeepCopy returns a copy of in that shares no memory with it.
func (in *Status) DeepCopy() *Status {
	if in == nil {
		return nil
	}
	data, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("release status: deep copy: %v", err))
	}
	out := &Status{}
	if err := json.Unmarshal(data, out); err != nil {
		panic(fmt.Sprintf("release status: deep copy: %v", err))
	}
	return out
}
