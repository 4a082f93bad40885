package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// FleetFile is the fleet a command runs the repository on (--fleet):
// the bootstrap objects every member starts from and the members.
//
//	bootstrap: bootstrap.yaml   # relative to the fleet file
//	sources:                    # other sources' trees: directories of the repository
//	  ExternalArtifact/flux-system/apps: apps
//	members:
//	  - name: dev-1
//	    labels: {env: dev}
//	    kubeVersion: "1.30"
//	    apiVersions: [monitoring.coreos.com/v1]
//	    objects:                 # present on the member before Flux runs
//	      - {apiVersion: v1, kind: ConfigMap, metadata: {...}, data: {...}}
type FleetFile struct {
	// Bootstrap is the file of the objects the fleet starts from (the
	// flux-system Kustomization, its policies), relative to the fleet
	// file.
	Bootstrap string `json:"bootstrap"`
	// Members are the fleet's members.
	Members []MemberSpec `json:"members"`
	// Sources are the trees of the sources other than the repository
	// itself that its Kustomizations name, by kustomize.SourceKey
	// ("Kind/namespace/name"), each a directory of the repository: the
	// ExternalArtifacts of a Flux 2.7 ArtifactGenerator, which the fleet
	// does not run (fleet.Repository.Sources).
	Sources map[string]string `json:"sources,omitempty"`
	// Kubeconfig is the kubeconfig file the members' contexts are read
	// from, relative to the fleet file; empty is kubectl's rules
	// ($KUBECONFIG, then ~/.kube/config). --kubeconfig overrides it.
	Kubeconfig string `json:"kubeconfig,omitempty"`

	// dir is the fleet file's directory.
	dir string
}

// MemberSpec is one member of a FleetFile, planned as an in-memory
// cluster (release/memory), or, with Context, against a live cluster.
type MemberSpec struct {
	// Name is unique in the fleet.
	Name string `json:"name"`
	// Context names a kubeconfig context. plan then plans against that
	// live cluster, its objects and its Helm releases, and writes
	// nothing to it; build, diff and test run an in-memory stand-in that
	// renders for the Kubernetes version and API versions read from it
	// (unless kubeVersion and apiVersions are set).
	Context string `json:"context,omitempty"`
	// Labels are matched by placement.
	Labels map[string]string `json:"labels,omitempty"`
	// KubeVersion is the Kubernetes version charts render for.
	KubeVersion string `json:"kubeVersion,omitempty"`
	// APIVersions are the API versions the member serves besides its own
	// kinds, as Helm's --api-versions spells them.
	APIVersions []string `json:"apiVersions,omitempty"`
	// Objects are on the member before anything runs (what Cluster API's
	// ClusterResourceSets put there: cluster-vars ConfigMaps, …). With
	// Context they are on the in-memory stand-in (build, diff, test); plan
	// reads the live cluster as it is, and says so.
	Objects []map[string]any `json:"objects,omitempty"`
}

// LoadFleetFile reads and checks a fleet file.
func LoadFleetFile(path string) (*FleetFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fleet file: %w", err)
	}
	var f FleetFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("fleet file %s: %w", path, err)
	}
	f.dir = filepath.Dir(path)
	if f.Bootstrap == "" {
		return nil, fmt.Errorf("fleet file %s: bootstrap: required (the file of the flux-system Kustomization and its policies)", path)
	}
	if len(f.Members) == 0 {
		return nil, fmt.Errorf("fleet file %s: members: at least one member is required", path)
	}
	seen := map[string]bool{}
	for i, m := range f.Members {
		if m.Name == "" {
			return nil, fmt.Errorf("fleet file %s: members[%d].name: required", path, i)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("fleet file %s: members[%d].name: %q appears twice", path, i, m.Name)
		}
		seen[m.Name] = true
		for j, o := range m.Objects {
			u := unstructured.Unstructured{Object: o}
			if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
				return nil, fmt.Errorf("fleet file %s: members[%d].objects[%d]: apiVersion, kind and metadata.name are required", path, i, j)
			}
		}
	}
	return &f, nil
}

// bootstrapPath is the bootstrap file's path.
func (f *FleetFile) bootstrapPath() string {
	if filepath.IsAbs(f.Bootstrap) {
		return f.Bootstrap
	}
	return filepath.Join(f.dir, f.Bootstrap)
}

// member returns the member named name.
func (f *FleetFile) member(name string) (MemberSpec, bool) {
	for _, m := range f.Members {
		if m.Name == name {
			return m, true
		}
	}
	return MemberSpec{}, false
}
