package memory

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"reflect"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The ranges Services get addresses and node ports from: kubeadm's
// default service CIDR, 10.96.0.0/12, and the default node port range.
// As on an API server, the lowest part of each (the first 256 addresses,
// the first 86 ports) is left to values a Service asks for, and the rest
// is where addresses and ports are allocated.
const (
	ipBase       uint32 = 10<<24 | 96<<16
	ipSize       uint32 = 1 << 20
	ipStatic     uint32 = 256
	nodePortMin  int64  = 30000
	nodePortMax  int64  = 32767
	portStatic   int64  = 86
	serviceRange        = "10.96.0.0/12"
)

var serviceGK = schema.GroupKind{Kind: "Service"}

// allocations are the cluster IPs and node ports that stored Services
// hold, so that no two Services get the same one.
type allocations struct {
	ips   map[uint32]key
	ports map[int64]key
	held  map[key]holding
}

// holding is what one Service holds.
type holding struct {
	ips   []uint32
	ports []int64
}

func newAllocations() *allocations {
	return &allocations{ips: map[uint32]key{}, ports: map[int64]key{}, held: map[key]holding{}}
}

// release frees what k holds.
func (a *allocations) release(k key) {
	for _, ip := range a.held[k].ips {
		delete(a.ips, ip)
	}
	for _, p := range a.held[k].ports {
		delete(a.ports, p)
	}
	delete(a.held, k)
}

// hold records h as what k holds, in place of what it held.
func (a *allocations) hold(k key, h holding) {
	a.release(k)
	for _, ip := range h.ips {
		a.ips[ip] = k
	}
	for _, p := range h.ports {
		a.ports[p] = k
	}
	if len(h.ips)+len(h.ports) > 0 {
		a.held[k] = h
	}
}

// service fixes the allocated fields of out, the Service k about to be
// stored over live (nil on create), as an API server's Service storage
// does, and with commit records what it holds (a dry run does not):
//
//   - a type change drops the clusterIP, node ports and health check
//     node port the new type has no use for, if the writer left them as
//     they were;
//   - fields a write left out keep their live values (clusterIP,
//     clusterIPs, node ports by port name, healthCheckNodePort), so an
//     apply that never sent them does not clear them;
//   - every type but ExternalName gets a clusterIP, "None" (headless)
//     stays, clusterIPs, ipFamilies and ipFamilyPolicy follow it;
//   - NodePort and LoadBalancer ports get node ports (unless
//     allocateLoadBalancerNodePorts is false), and a LoadBalancer with
//     externalTrafficPolicy Local a healthCheckNodePort.
//
// Allocated values are deterministic: a hash of the Service's namespace
// and name picks where the search for a free one starts. Values a writer
// asks for are kept; one outside the range or held by another Service is
// an Invalid error naming the field, as on an API server.
func (a *allocations) service(k key, live, out *unstructured.Unstructured, commit bool) error {
	spec, _ := out.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		out.Object["spec"] = spec
	}
	if live != nil {
		if old, _ := live.Object["spec"].(map[string]any); old != nil {
			dropTypeDependent(old, spec)
			patchAllocated(old, spec)
		}
	}
	invalid := func(path *field.Path, value any, msg string) error {
		return apierrors.NewInvalid(serviceGK, k.Name, field.ErrorList{field.Invalid(path, value, msg)})
	}
	var h holding
	if needsClusterIP(spec) {
		ip, err := a.clusterIP(k, spec, invalid)
		if err != nil {
			return err
		}
		if ip != 0 {
			h.ips = append(h.ips, ip)
		}
	}
	if needsNodePorts(spec) {
		ports, _ := spec["ports"].([]any)
		for i, p := range ports {
			pm, ok := p.(map[string]any)
			if !ok {
				continue
			}
			path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
			np, err := a.nodePort(k, pm["nodePort"], strconv.Itoa(i), h.ports, path, invalid)
			if err != nil {
				return err
			}
			pm["nodePort"] = np
			h.ports = append(h.ports, np)
		}
	}
	if needsHealthCheckNodePort(spec) {
		np, err := a.nodePort(k, spec["healthCheckNodePort"], "health", h.ports, field.NewPath("spec", "healthCheckNodePort"), invalid)
		if err != nil {
			return err
		}
		spec["healthCheckNodePort"] = np
		h.ports = append(h.ports, np)
	}
	if commit {
		a.hold(k, h)
	}
	return nil
}

// clusterIP fixes spec's clusterIP, clusterIPs, ipFamilies and
// ipFamilyPolicy, and returns the address the Service holds (0 for a
// headless one).
func (a *allocations) clusterIP(k key, spec map[string]any, invalid func(*field.Path, any, string) error) (uint32, error) {
	ip, _ := spec["clusterIP"].(string)
	ips, _ := spec["clusterIPs"].([]any)
	if ip == "" && len(ips) > 0 {
		ip, _ = ips[0].(string)
	}
	var held uint32
	families := []any{"IPv4"}
	policy := "SingleStack"
	switch {
	case ip == "None":
		if sel, _ := spec["selector"].(map[string]any); len(sel) == 0 {
			families, policy = []any{"IPv4", "IPv6"}, "RequireDualStack"
		}
	case ip == "":
		start := hashOf(k.Namespace, k.Name) % uint64(ipSize-ipStatic-1)
		for i := range uint64(ipSize - ipStatic - 1) {
			cand := ipBase + ipStatic + uint32((start+i)%uint64(ipSize-ipStatic-1))
			if owner, taken := a.ips[cand]; !taken || owner == k {
				held = cand
				break
			}
		}
		if held == 0 {
			return 0, apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: range is full"))
		}
		ip = addrString(held)
	default:
		path := field.NewPath("spec", "clusterIPs")
		addr, err := netip.ParseAddr(ip)
		if err != nil || !addr.Is4() {
			return 0, invalid(path.Index(0), ip, "must be a valid IPv4 address")
		}
		b := addr.As4()
		v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		if v <= ipBase || v >= ipBase+ipSize-1 {
			return 0, invalid(path, []string{ip}, fmt.Sprintf("failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s", ip, ip, serviceRange))
		}
		if owner, taken := a.ips[v]; taken && owner != k {
			return 0, invalid(path, []string{ip}, fmt.Sprintf("failed to allocate IP %s: provided IP is already allocated", ip))
		}
		held = v
	}
	spec["clusterIP"] = ip
	if len(ips) == 0 {
		spec["clusterIPs"] = []any{ip}
	}
	if _, ok := spec["ipFamilies"]; !ok {
		spec["ipFamilies"] = families
	}
	if _, ok := spec["ipFamilyPolicy"]; !ok {
		spec["ipFamilyPolicy"] = policy
	}
	return held, nil
}

// nodePort returns the node port for a field whose value is given (kept,
// if in range and free) or absent (allocated, from a start hashed from
// the Service and which), never one of taken.
func (a *allocations) nodePort(k key, given any, which string, taken []int64, path *field.Path, invalid func(*field.Path, any, string) error) (int64, error) {
	free := func(p int64) bool {
		for _, t := range taken {
			if t == p {
				return false
			}
		}
		owner, held := a.ports[p]
		return !held || owner == k
	}
	if p, ok := toInt64(given); ok && p != 0 {
		if p < nodePortMin || p > nodePortMax {
			return 0, invalid(path, p, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", nodePortMin, nodePortMax))
		}
		if !free(p) {
			return 0, invalid(path, p, "provided port is already allocated")
		}
		return p, nil
	}
	n := uint64(nodePortMax - nodePortMin + 1 - portStatic)
	start := hashOf(k.Namespace, k.Name, which) % n
	for i := range n {
		p := nodePortMin + portStatic + int64((start+i)%n)
		if free(p) {
			return p, nil
		}
	}
	return 0, apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: range is full"))
}

func needsClusterIP(spec map[string]any) bool { return spec["type"] != "ExternalName" }

func needsNodePorts(spec map[string]any) bool {
	switch spec["type"] {
	case "NodePort":
		return true
	case "LoadBalancer":
		return spec["allocateLoadBalancerNodePorts"] != false
	}
	return false
}

func needsHealthCheckNodePort(spec map[string]any) bool {
	return spec["type"] == "LoadBalancer" && spec["externalTrafficPolicy"] == "Local"
}

// dropTypeDependent clears, when the type changes, the allocated fields
// the new type does not use, if the writer left them as they were: both
// cluster IP fields, each IP family field, the node ports if the write
// brings no node port the Service did not have, the health check node
// port.
func dropTypeDependent(old, spec map[string]any) {
	if needsClusterIP(old) && !needsClusterIP(spec) {
		if reflect.DeepEqual(spec["clusterIP"], old["clusterIP"]) && reflect.DeepEqual(spec["clusterIPs"], old["clusterIPs"]) {
			delete(spec, "clusterIP")
			delete(spec, "clusterIPs")
		}
		for _, f := range []string{"ipFamilies", "ipFamilyPolicy"} {
			if reflect.DeepEqual(spec[f], old[f]) {
				delete(spec, f)
			}
		}
	}
	if needsNodePorts(old) && !needsNodePorts(spec) {
		had := map[int64]bool{}
		for _, p := range slice(old["ports"]) {
			if np, ok := toInt64(fieldOf(p, "nodePort")); ok {
				had[np] = true
			}
		}
		ports := slice(spec["ports"])
		same := true
		for _, p := range ports {
			if np, ok := toInt64(fieldOf(p, "nodePort")); ok && np != 0 && !had[np] {
				same = false
			}
		}
		if same {
			for _, p := range ports {
				if pm, ok := p.(map[string]any); ok {
					delete(pm, "nodePort")
				}
			}
		}
	}
	if needsHealthCheckNodePort(old) && !needsHealthCheckNodePort(spec) && reflect.DeepEqual(spec["healthCheckNodePort"], old["healthCheckNodePort"]) {
		delete(spec, "healthCheckNodePort")
	}
}

// patchAllocated gives fields a write left out their live values: the
// clusterIP and clusterIPs, node ports by port name (unless another port
// uses them now), the health check node port.
func patchAllocated(old, spec map[string]any) {
	if needsClusterIP(old) && needsClusterIP(spec) {
		if ip, _ := spec["clusterIP"].(string); ip == "" && old["clusterIP"] != nil {
			spec["clusterIP"] = runtime.DeepCopyJSONValue(old["clusterIP"])
		}
		if ips, _ := spec["clusterIPs"].([]any); len(ips) == 0 && old["clusterIPs"] != nil {
			spec["clusterIPs"] = runtime.DeepCopyJSONValue(old["clusterIPs"])
		}
	}
	if needsNodePorts(old) && needsNodePorts(spec) {
		ports := slice(spec["ports"])
		used := map[int64]bool{}
		byName := map[string]int64{}
		for _, p := range slice(old["ports"]) {
			np, _ := toInt64(fieldOf(p, "nodePort"))
			name, _ := fieldOf(p, "name").(string)
			byName[name] = np
		}
		for _, p := range ports {
			if np, ok := toInt64(fieldOf(p, "nodePort")); ok && np != 0 {
				used[np] = true
			}
		}
		for _, p := range ports {
			pm, ok := p.(map[string]any)
			if !ok {
				continue
			}
			if np, ok := toInt64(pm["nodePort"]); ok && np != 0 {
				continue
			}
			name, _ := pm["name"].(string)
			if np := byName[name]; np != 0 && !used[np] {
				pm["nodePort"] = np
				used[np] = true
			}
		}
	}
	if needsHealthCheckNodePort(old) && needsHealthCheckNodePort(spec) {
		if np, ok := toInt64(spec["healthCheckNodePort"]); (!ok || np == 0) && old["healthCheckNodePort"] != nil {
			spec["healthCheckNodePort"] = runtime.DeepCopyJSONValue(old["healthCheckNodePort"])
		}
	}
}

// slice returns v when it is a list.
func slice(v any) []any {
	l, _ := v.([]any)
	return l
}

// fieldOf returns field f of v when v is an object.
func fieldOf(v any, f string) any {
	m, _ := v.(map[string]any)
	return m[f]
}

func toInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), true
	case int:
		return int64(n), true
	}
	return 0, false
}

// hashOf is FNV-1a of parts, separated: the same Service always starts
// its search at the same place, whatever else the cluster holds.
func hashOf(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

func addrString(v uint32) string {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String()
}
