package release

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoadRedactsURLValues: a repository URL with credentials that is of
// the wrong type, misspelt or otherwise refused is named in the error
// without its user, password or query values.
func TestLoadRedactsURLValues(t *testing.T) {
	const secretURL = "https://fleetuser:s3cret@charts.example.com/repo?token=SECRET1&sig=SECRET2"
	repo := func(spec string) string {
		return "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: r, namespace: ns}\nspec:\n" + spec
	}
	tests := []struct {
		name, stream, path string
	}{
		{name: "url of the wrong type", stream: repo("  url: [\"" + secretURL + "\"]\n"), path: "spec.url"},
		{name: "url an object", stream: repo("  url: {u: \"" + secretURL + "\"}\n"), path: "spec.url"},
		{name: "misspelt url", stream: repo("  ulr: \"" + secretURL + "\"\n"), path: "spec.ulr"},
		{name: "url with a bad scheme", stream: repo("  url: \"ftp://fleetuser:s3cret@charts.example.com/?token=SECRET1\"\n"), path: "spec.url"},
		{name: "url in an invalid interval's neighbour", stream: repo("  url: \"" + secretURL + "\"\n  interval: 10x\n"), path: "spec.interval"},
		{name: "JSON with trailing data", stream: `{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository", "metadata": {"name": "r"}, "spec": {"url": "https://h/"}} "` + secretURL + `"`, path: ""},
		{name: "not an object", stream: `["` + secretURL + `"]`, path: ""},
		{name: "List item not an object", stream: "apiVersion: v1\nkind: List\nitems: [\"" + secretURL + "\"]\n", path: "items[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tt.stream))
			require.Error(t, err)
			t.Log(err)
			msg := fmt.Sprintf("%v %+v %q", err, err, err)
			for _, s := range []string{"s3cret", "SECRET1", "SECRET2", "fleetuser"} {
				assert.NotContains(t, msg, s)
			}
			assert.Contains(t, msg, tt.path)
		})
	}
}
