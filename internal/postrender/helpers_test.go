package postrender

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// goldenName turns a test name into a file name.
var goldenName = regexp.MustCompile(`[^A-Za-z0-9/]+`)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// rendered returns testdata/rendered.yaml: a ConfigMap, Service and
// Deployment as Helm renders them, with "# Source:" lines.
func rendered(t testing.TB) *bytes.Buffer {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "rendered.yaml"))
	require.NoError(t, err)
	return bytes.NewBuffer(data)
}

// golden compares got with testdata/golden/<name>.yaml, rewriting it under
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", goldenName.ReplaceAllString(name, "_")+".yaml")
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	require.Equal(t, string(want), got, "golden file %s (go test -update rewrites it)", path)
}
