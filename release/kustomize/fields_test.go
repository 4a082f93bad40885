package kustomize_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	kustypes "sigs.k8s.io/kustomize/api/types"
)

// TestEveryKustomizationFieldClassified fails when kustomize grows a
// kustomization field this package has not classified: a new field may
// name a file, a URL or a program, which the walk must check before
// kustomize runs.
func TestEveryKustomizationFieldClassified(t *testing.T) {
	classified := []string{
		// Checked by the walk: paths, directories, programs.
		"resources", "bases", "components", "crds", "configurations",
		"patchesStrategicMerge", "patches", "patchesJson6902", "replacements",
		"configMapGenerator", "secretGenerator", "generators", "transformers", "validators",
		"helmCharts", "helmChartInflationGenerator", "helmGlobals", "openapi",
		// Data only.
		"apiVersion", "kind", "metadata", "namePrefix", "nameSuffix", "namespace",
		"commonLabels", "labels", "commonAnnotations", "images", "imageTags",
		"replicas", "vars", "sortOptions", "generatorOptions", "buildMetadata",
	}
	var fields []string
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for f := range ty.Fields() {
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" && strings.Contains(opts, "inline") {
				walk(f.Type)
				continue
			}
			fields = append(fields, name)
		}
	}
	walk(reflect.TypeFor[kustypes.Kustomization]())
	slices.Sort(fields)
	slices.Sort(classified)
	assert.Equal(t, classified, fields)
}
