package postrender_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/helmfleet/helmfleet/internal/postrender"
)

// What Helm renders for a chart: each object under its "# Source:" line.
const helmOutput = `---
# Source: web/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  type: ClusterIP
---
# Source: web/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: web
          image: ghcr.io/example/web:1.4.0
`

// Build turns a release's post-renderers and common metadata into one Helm
// post-renderer; set it as action.Install.PostRenderer or
// action.Upgrade.PostRenderer. Here it is run by hand.
func ExampleBuild() {
	pr, err := postrender.Build([]postrender.Kustomize{{
		Patches: []postrender.Patch{
			// A strategic merge patch names its object.
			{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n"},
			// A JSON 6902 patch needs a target.
			{Patch: "- op: replace\n  path: /spec/type\n  value: NodePort\n", Target: &postrender.Selector{Kind: "Service"}},
		},
		Images: []postrender.Image{{Name: "ghcr.io/example/web", NewTag: "1.5.0"}},
	}}, &postrender.CommonMetadata{Labels: map[string]string{"env": "prod"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := pr.Run(bytes.NewBufferString(helmOutput))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(out)
	// Output:
	// ---
	// # Source: web/templates/service.yaml
	// apiVersion: v1
	// kind: Service
	// metadata:
	//   labels:
	//     env: prod
	//   name: web
	// spec:
	//   type: NodePort
	// ---
	// # Source: web/templates/deployment.yaml
	// apiVersion: apps/v1
	// kind: Deployment
	// metadata:
	//   labels:
	//     env: prod
	//   name: web
	// spec:
	//   replicas: 3
	//   template:
	//     spec:
	//       containers:
	//       - image: ghcr.io/example/web:1.5.0
	//         name: web
}

// Errors name the post-renderer, the patch and its target.
func ExampleError() {
	pr, err := postrender.Build([]postrender.Kustomize{{
		Patches: []postrender.Patch{{
			Patch:  "- op: remove\n  path: /spec/strategy\n",
			Target: &postrender.Selector{Kind: "Deployment", Name: "web"},
		}},
	}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = pr.Run(bytes.NewBufferString(helmOutput))
	var e *postrender.Error
	if errors.As(err, &e) {
		fmt.Println(e.Path)
		fmt.Println(e.Target)
	}
	// Output:
	// postRenderers[0].kustomize.patches[0]
	// kind=Deployment,name=web
}

// Digest and DigestCommonMetadata are what a reconciler records after a
// release (Flux's status.observedPostRenderersDigest and
// observedCommonMetadataDigest) and compares with the spec's to decide
// that post-renderers changed and the release must be upgraded.
func ExampleDigest() {
	before := []postrender.Kustomize{{Images: []postrender.Image{{Name: "nginx", NewTag: "1.25"}}}}
	after := []postrender.Kustomize{{Images: []postrender.Image{{Name: "nginx", NewTag: "1.27"}}}}
	fmt.Println(postrender.Digest(before) == postrender.Digest(after))
	fmt.Println(postrender.Digest(nil) == "")
	fmt.Println(len(postrender.DigestCommonMetadata(&postrender.CommonMetadata{Labels: map[string]string{"env": "prod"}})))
	// Output:
	// false
	// true
	// 71
}
