package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"path"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
)

// FuzzLoadArchive feeds arbitrary bytes to the archive checks and Helm's
// loader: no panic, and a chart that loads has no file outside its
// directory and is within the caps.
func FuzzLoadArchive(f *testing.F) {
	f.Add(packageChart(f, "app", "1.0.0", map[string]string{"values-prod.yaml": "a: 1\n"}))
	f.Add(tarball(f, "evil/Chart.yaml", "apiVersion: v2\nname: evil\nversion: 1.0.0\n", "evil/../../escape.txt", "x"))
	f.Add(tarball(f, "/etc/passwd", "x"))
	f.Add(manyEntries(f, 3))
	f.Add(nestedBomb(f, 2, 100))
	f.Add(subchartBomb(f, 2, 1000, 0))
	f.Add([]byte("not gzip"))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte("not a tar stream"))
	_ = zw.Close()
	f.Add(gz.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		la, err := loadArchive(data, 1<<20)
		if err != nil {
			return
		}
		n := 0
		for _, fl := range append(append(la.chart.Raw, la.chart.Templates...), la.chart.Files...) {
			n++
			if path.IsAbs(fl.Name) || fl.Name == ".." || strings.HasPrefix(fl.Name, "../") {
				t.Fatalf("loaded %q, outside the chart", fl.Name)
			}
		}
		if n > MaxChartEntries {
			t.Fatalf("loaded %d files, over the cap", n)
		}
		// Subcharts count against the same caps as their parent.
		var size int64
		var count func(c *chart.Chart)
		count = func(c *chart.Chart) {
			for _, fl := range append(append(c.Raw, c.Templates...), c.Files...) {
				size += int64(len(fl.Data))
			}
			for _, d := range c.Dependencies() {
				count(d)
			}
		}
		count(la.chart)
		if size > 1<<20 {
			t.Fatalf("loaded %d bytes with the subcharts, over the cap", size)
		}
		_ = checkChart(la.chart, "app", "1.0.0")
	})
}

// FuzzArchiveEntry builds a chart archive around one fuzzed entry (name,
// type, link target, content), which reaches the checks that random bytes
// rarely do: a link or an entry leaving the chart directory never loads.
func FuzzArchiveEntry(f *testing.F) {
	f.Add("app/templates/x.yaml", byte(tar.TypeReg), "", []byte("kind: ConfigMap\n"))
	f.Add("app/templates/x.yaml", byte(tar.TypeSymlink), "/etc/hostname", []byte(nil))
	f.Add("app/templates/x.yaml", byte(tar.TypeLink), "app/Chart.yaml", []byte(nil))
	f.Add("app/../../x", byte(tar.TypeReg), "", []byte("x"))
	f.Add("/abs", byte(tar.TypeReg), "", []byte("x"))
	f.Add("app\\..\\..\\x", byte(tar.TypeReg), "", []byte("x"))
	f.Add("app/dev", byte(tar.TypeChar), "", []byte(nil))
	f.Add("app/charts/sub/Chart.yaml", byte(tar.TypeReg), "", []byte("apiVersion: v2\nname: sub\nversion: 0.1.0\n"))
	f.Fuzz(func(t *testing.T, name string, typeflag byte, linkname string, body []byte) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		chartYAML := "apiVersion: v2\nname: app\nversion: 1.0.0\n"
		if err := tw.WriteHeader(&tar.Header{Name: "app/Chart.yaml", Mode: 0o644, Size: int64(len(chartYAML)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(chartYAML))
		h := &tar.Header{Name: name, Mode: 0o644, Typeflag: typeflag, Linkname: linkname}
		if typeflag == tar.TypeReg {
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return // not a header tar can write
		}
		if h.Size > 0 {
			_, _ = tw.Write(body)
		}
		if tw.Close() != nil || zw.Close() != nil {
			return
		}
		la, err := loadArchive(buf.Bytes(), 1<<20)
		if err != nil {
			return
		}
		if typeflag == tar.TypeSymlink || typeflag == tar.TypeLink {
			t.Fatalf("a %c entry %q -> %q loaded", typeflag, name, linkname)
		}
		clean := strings.ReplaceAll(name, "\\", "/")
		for _, seg := range strings.Split(clean, "/") {
			if seg == ".." {
				t.Fatalf("entry %q leaves the chart directory but loaded", name)
			}
		}
		if err := checkChart(la.chart, "app", "1.0.0"); err != nil && la.chart.Name() == "app" && la.chart.Metadata.Version == "1.0.0" {
			t.Fatalf("checkChart refused the chart it names: %v", err)
		}
	})
}

// FuzzFindChartVersionJSONEdits inserts fuzzed bytes into a valid JSON
// index at a fuzzed offset, so that the inputs reach the JSON scanner's
// structural checks (strings, escapes, nesting, other charts' arrays
// skipped by the block classifier); the answer must match Helm's full
// parse, and streaming it must agree with the in-memory scan.
func FuzzFindChartVersionJSONEdits(f *testing.F) {
	base := marshalIndex(f, genIndex(3, 3), true)
	f.Add(uint16(0), []byte(" "), "nginx", "*")
	f.Add(uint16(40), []byte(`"nginx":[],`), "nginx", "*")
	f.Add(uint16(120), []byte(`\"`), "chart001", "1.x")
	f.Add(uint16(300), []byte(`]}`), "chart002", "")
	f.Add(uint16(200), []byte(`{"version":"9.9.9"},`), "chart000", ">=0.0.0-0")
	f.Add(uint16(77), []byte("\\u006e"), "nginx", "*")
	f.Fuzz(func(t *testing.T, at uint16, insert []byte, chartName, constraint string) {
		i := int(at) % (len(base) + 1)
		doc := append(append(append([]byte(nil), base[:i]...), insert...), base[i:]...)
		agreesWithFullParse(t, doc, chartName, constraint)
		if chartName != "" {
			streamAgrees(t, doc, bytes.NewReader(doc), 64, chartName)
		}
	})
}
