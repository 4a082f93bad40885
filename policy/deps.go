package policy

import (
	"iter"
	"slices"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// depRef is a dependency named by a workload, in the workload's namespace.
type depRef struct {
	kind, name string
	via        string // the field that names it, for explanations
}

// podTemplate returns the pod spec and pod labels of a workload.
func podTemplate(obj *unstructured.Unstructured, kind string) (spec map[string]any, labels map[string]any, ok bool) {
	var tmpl map[string]any
	switch kind {
	case "Pod":
		spec, _ = obj.Object["spec"].(map[string]any)
		md, _ := obj.Object["metadata"].(map[string]any)
		labels, _ = md["labels"].(map[string]any)
		return spec, labels, spec != nil
	case "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job":
		tmpl = nested(obj.Object, "spec", "template")
	case "CronJob":
		tmpl = nested(obj.Object, "spec", "jobTemplate", "spec", "template")
	default:
		return nil, nil, false
	}
	if tmpl == nil {
		return nil, nil, false
	}
	spec, _ = tmpl["spec"].(map[string]any)
	labels = nested(tmpl, "metadata", "labels")
	return spec, labels, spec != nil
}

func nested(m map[string]any, path ...string) map[string]any {
	cur := m
	for _, p := range path {
		next, _ := cur[p].(map[string]any)
		if next == nil {
			return nil
		}
		cur = next
	}
	return cur
}

func str(m map[string]any, path ...string) string {
	if len(path) > 1 {
		m = nested(m, path[:len(path)-1]...)
	}
	if m == nil {
		return ""
	}
	s, _ := m[path[len(path)-1]].(string)
	return s
}

// items yields what list returns, without collecting it.
func items(m map[string]any, key string) iter.Seq[map[string]any] {
	return func(yield func(map[string]any) bool) {
		raw, _ := m[key].([]any) // a nil map reads as nil
		for _, e := range raw {
			if em, ok := e.(map[string]any); ok && !yield(em) {
				return
			}
		}
	}
}

func list(m map[string]any, key string) []map[string]any {
	if m == nil {
		return nil
	}
	raw, _ := m[key].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, e := range raw {
		if em, ok := e.(map[string]any); ok {
			out = append(out, em)
		}
	}
	return out
}

// podDependencies lists what Karmada's dependency interpreter finds in a pod
// spec: Secrets, ConfigMaps, the ServiceAccount and PVCs, across containers,
// initContainers and ephemeralContainers. A StatefulSet's own claim
// templates are removed by withoutClaimTemplates.
func podDependencies(spec map[string]any) []depRef {
	var out []depRef
	add := func(kind, name, via string) {
		if name != "" {
			out = append(out, depRef{kind: kind, name: name, via: via})
		}
	}
	// addIn names the field only when there is a name: the concatenation
	// costs an allocation.
	addIn := func(kind, name, field, via string) {
		if name != "" {
			out = append(out, depRef{kind: kind, name: name, via: field + via})
		}
	}
	for s := range items(spec, "imagePullSecrets") {
		add("Secret", str(s, "name"), "imagePullSecrets")
	}
	for _, field := range []string{"containers", "initContainers", "ephemeralContainers"} {
		for c := range items(spec, field) {
			for ef := range items(c, "envFrom") {
				addIn("Secret", str(ef, "secretRef", "name"), field, ".envFrom.secretRef")
				addIn("ConfigMap", str(ef, "configMapRef", "name"), field, ".envFrom.configMapRef")
			}
			for env := range items(c, "env") {
				addIn("Secret", str(env, "valueFrom", "secretKeyRef", "name"), field, ".env.valueFrom.secretKeyRef")
				addIn("ConfigMap", str(env, "valueFrom", "configMapKeyRef", "name"), field, ".env.valueFrom.configMapKeyRef")
			}
		}
	}
	for v := range items(spec, "volumes") {
		add("Secret", str(v, "secret", "secretName"), "volumes.secret")
		add("ConfigMap", str(v, "configMap", "name"), "volumes.configMap")
		add("PersistentVolumeClaim", str(v, "persistentVolumeClaim", "claimName"), "volumes.persistentVolumeClaim")
		for src := range items(nested(v, "projected"), "sources") {
			add("Secret", str(src, "secret", "name"), "volumes.projected.secret")
			add("ConfigMap", str(src, "configMap", "name"), "volumes.projected.configMap")
		}
		add("Secret", str(v, "csi", "nodePublishSecretRef", "name"), "volumes.csi.nodePublishSecretRef")
		add("Secret", str(v, "azureFile", "secretName"), "volumes.azureFile.secretName")
		for _, plugin := range []string{"cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos"} {
			addIn("Secret", str(v, plugin, "secretRef", "name"), "volumes."+plugin, ".secretRef")
		}
	}
	if sa := str(spec, "serviceAccountName"); sa != "default" {
		add("ServiceAccount", sa, "serviceAccountName")
	}
	return out
}

// withoutClaimTemplates drops the PVCs a StatefulSet's volumeClaimTemplates
// create: the StatefulSet makes them in each member cluster, so, as in
// Karmada, a pod volume that names one is not a dependency.
func withoutClaimTemplates(deps []depRef, sts *unstructured.Unstructured) []depRef {
	templates := list(nested(sts.Object, "spec"), "volumeClaimTemplates")
	if len(templates) == 0 {
		return deps
	}
	names := make(map[string]bool, len(templates))
	for _, t := range templates {
		names[str(t, "metadata", "name")] = true
	}
	out := deps[:0:0]
	for _, d := range deps {
		if d.kind == "PersistentVolumeClaim" && names[d.name] {
			continue
		}
		out = append(out, d)
	}
	return out
}

// ingressTLSSecrets lists an Ingress's spec.tls[].secretName.
func ingressTLSSecrets(obj *unstructured.Unstructured) []depRef {
	var out []depRef
	for t := range items(nested(obj.Object, "spec"), "tls") {
		if n := str(t, "secretName"); n != "" {
			out = append(out, depRef{kind: "Secret", name: n, via: "spec.tls.secretName"})
		}
	}
	return out
}

// ingressBackends lists the Services an Ingress's backends name (networking/v1
// service.name and the older serviceName).
func ingressBackends(obj *unstructured.Unstructured) []string {
	spec := nested(obj.Object, "spec")
	if spec == nil {
		return nil
	}
	var out []string
	backend := func(b map[string]any) {
		if b == nil {
			return
		}
		if n := str(b, "service", "name"); n != "" {
			out = append(out, n)
		}
		if n := str(b, "serviceName"); n != "" {
			out = append(out, n)
		}
	}
	backend(nested(spec, "defaultBackend"))
	backend(nested(spec, "backend"))
	for rule := range items(spec, "rules") {
		for p := range items(nested(rule, "http"), "paths") {
			backend(nested(p, "backend"))
		}
	}
	return out
}

// selectorMatches reports whether a non-empty Service selector matches pod labels.
func selectorMatches(selector map[string]any, podLabels map[string]any) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		pv, ok := podLabels[k]
		if !ok || pv != v {
			return false
		}
	}
	return true
}

func isCore(k ObjectKey, kind string) bool {
	return k.Kind == kind && k.APIVersion == "v1"
}

// nsName names an object by namespace and name ("" namespace: cluster
// scoped).
type nsName struct{ namespace, name string }

// boundServiceAccounts lists the ServiceAccounts a RoleBinding or
// ClusterRoleBinding binds (subjects of kind ServiceAccount; a subject
// without a namespace is in the binding's namespace).
func boundServiceAccounts(obj *unstructured.Unstructured, namespace string) []nsName {
	var out []nsName
	for s := range items(obj.Object, "subjects") {
		if str(s, "kind") != "ServiceAccount" || str(s, "name") == "" {
			continue
		}
		ns := str(s, "namespace")
		if ns == "" {
			ns = namespace
		}
		out = append(out, nsName{ns, str(s, "name")})
	}
	return out
}

// roleRef returns the Role or ClusterRole a binding grants, with the
// namespace it lives in ("" for a ClusterRole).
func roleRef(obj *unstructured.Unstructured, namespace string) (kind string, ref nsName, ok bool) {
	r := nested(obj.Object, "roleRef")
	kind, name := str(r, "kind"), str(r, "name")
	switch kind {
	case "Role":
		return kind, nsName{namespace, name}, name != ""
	case "ClusterRole":
		return kind, nsName{"", name}, name != ""
	}
	return "", nsName{}, false
}

// calledServices lists the Services a webhook configuration
// (webhooks[].clientConfig.service) or an APIService (spec.service) sends
// requests to.
func calledServices(obj *unstructured.Unstructured, kind string) []nsName {
	var out []nsName
	add := func(svc map[string]any) {
		if n := str(svc, "name"); n != "" {
			out = append(out, nsName{str(svc, "namespace"), n})
		}
	}
	switch kind {
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
		for w := range items(obj.Object, "webhooks") {
			add(nested(w, "clientConfig", "service"))
		}
	case "APIService":
		add(nested(obj.Object, "spec", "service"))
	}
	return out
}

// isRBACKind reports whether k is one of the four RBAC kinds.
func isRBACKind(k ObjectKey, kinds ...string) bool {
	if !strings.HasPrefix(k.APIVersion, "rbac.authorization.k8s.io/") {
		return false
	}
	return slices.Contains(kinds, k.Kind)
}

// podTexts lists the words a pod spec's containers are started with: each
// args and command entry, and the value of each literal env entry; a
// "--flag=value" entry gives both itself and its value.
func podTexts(spec map[string]any) []string {
	var out []string
	for _, field := range []string{"containers", "initContainers"} {
		for c := range items(spec, field) {
			var words []any
			a, _ := c["args"].([]any)
			cmd, _ := c["command"].([]any)
			words = append(append(words, cmd...), a...)
			for env := range items(c, "env") {
				if v, ok := env["value"].(string); ok {
					words = append(words, v)
				}
			}
			for _, w := range words {
				s, ok := w.(string)
				if !ok || s == "" {
					continue
				}
				out = append(out, s)
				if i := strings.IndexByte(s, '='); i >= 0 {
					out = append(out, s[i+1:])
				}
			}
		}
	}
	return out
}

// flagName returns the flag of a "--flag=value" word, lower case and
// without dashes, dots and underscores, so that --ingress-class,
// --ingressClass and --providers.kubernetesingress.ingressclass compare
// alike by suffix.
func flagName(word string) string {
	i := strings.IndexByte(word, '=')
	if i < 0 || !strings.HasPrefix(word, "-") {
		return ""
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '.', '_':
			return -1
		}
		return unicode.ToLower(r)
	}, word[:i])
}

// namedInPodTexts returns the names among words that a workload in
// namespace passes as a flag value naming an object: "name",
// "namespace/name" or "$(VAR)/name" (the Downward API namespace, as
// ingress-nginx's --configmap=$(POD_NAMESPACE)/name does).
func namedInPodTexts(words []string, namespace string) map[string]bool {
	out := map[string]bool{}
	for _, w := range words {
		i := strings.IndexByte(w, '=')
		if i < 0 || !strings.HasPrefix(w, "-") {
			continue
		}
		v := w[i+1:]
		if j := strings.IndexByte(v, '/'); j >= 0 {
			prefix := v[:j]
			if prefix != namespace && !(strings.HasPrefix(prefix, "$(") && strings.HasSuffix(prefix, ")")) {
				continue
			}
			v = v[j+1:]
		}
		if v != "" && !strings.ContainsAny(v, "/:,= ") {
			out[v] = true
		}
	}
	return out
}

// runsIngressClass reports whether a workload started with words is the
// controller of an IngressClass: one word is the class's spec.controller
// (ingress-nginx's --controller-class, a controller name in an env value),
// or a flag whose name ends in "ingressclass" gives the class's name.
func runsIngressClass(words []string, class *unstructured.Unstructured) bool {
	controller := str(class.Object, "spec", "controller")
	for _, w := range words {
		if controller != "" && w == controller {
			return true
		}
		if f := flagName(w); strings.HasSuffix(f, "ingressclass") && w[strings.IndexByte(w, '=')+1:] == class.GetName() {
			return true
		}
	}
	return false
}

// ingressClassOf returns the IngressClass an Ingress names
// (spec.ingressClassName, else the kubernetes.io/ingress.class
// annotation).
func ingressClassOf(obj *unstructured.Unstructured) string {
	if n := str(obj.Object, "spec", "ingressClassName"); n != "" {
		return n
	}
	return obj.GetAnnotations()["kubernetes.io/ingress.class"]
}

// budgetSelects reports whether a PodDisruptionBudget's selector selects
// pods with podLabels; a selector with matchExpressions, or an empty one,
// is not read (it follows nothing and takes the default placement).
func budgetSelects(pdb *unstructured.Unstructured, podLabels map[string]any) bool {
	sel := nested(pdb.Object, "spec", "selector")
	if sel == nil || len(list(sel, "matchExpressions")) > 0 {
		return false
	}
	return selectorMatches(nested(sel, "matchLabels"), podLabels)
}

// crdKind returns the group and kind of the custom resources a
// CustomResourceDefinition defines.
func crdKind(obj *unstructured.Unstructured) (group, kind string) {
	return str(obj.Object, "spec", "group"), str(obj.Object, "spec", "names", "kind")
}

// groupOf returns the API group of an apiVersion ("" for the core group).
func groupOf(apiVersion string) string {
	if i := strings.IndexByte(apiVersion, '/'); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

func isCRD(k ObjectKey) bool {
	return k.Kind == "CustomResourceDefinition" && groupOf(k.APIVersion) == "apiextensions.k8s.io"
}
