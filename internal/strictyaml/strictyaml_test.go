package strictyaml

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSplit(t *testing.T) {
	stream := "# header\n---\na: 1\n--- # second\n\n# only comments\n\n---\nb: 2\n---\n---\n  # indented comment\n---\n\nc: 3\n----\nd: 4"
	docs := Split([]byte(stream))
	require.Len(t, docs, 3)
	assert.Equal(t, Document{Index: 1, Line: 3, Data: []byte("a: 1\n"), start: 3}, docs[0])
	assert.Equal(t, 2, docs[1].Index)
	assert.Equal(t, 9, docs[1].Line)
	assert.Equal(t, 3, docs[2].Index)
	assert.Equal(t, 15, docs[2].Line, "blank lines before the content are skipped")
	assert.Equal(t, "\nc: 3\n----\nd: 4", string(docs[2].Data), "---- is not a separator")

	assert.Empty(t, Split(nil))
	assert.Empty(t, Split([]byte("---\n# nothing\n---\n")))
}

func TestToJSON(t *testing.T) {
	docs := Split([]byte("a: 1\n---\nb: 2\nb: 3\n---\n\nc:\n  d: e\n f: g\n"))
	require.Len(t, docs, 3)

	out, err := ToJSON(docs[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"a": 1}`, string(out))

	_, err = ToJSON(docs[1])
	var se *SyntaxError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 4, se.Line, "the duplicate is on line 4 of the stream")
	assert.Contains(t, se.Error(), `line 4: key "b" already set in map`)

	_, err = ToJSON(docs[2])
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 8, se.Line, "go-yaml's line 2 of the document, offset by 6")
}

type inner struct {
	Name  string            `json:"name"`
	Count int32             `json:"count,omitempty"`
	Ratio float64           `json:"ratio,omitempty"`
	Size  uint8             `json:"size,omitempty"`
	On    *bool             `json:"on,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
	Blob  []byte            `json:"blob,omitempty"`
	Pair  [2]int            `json:"pair,omitempty"`
	Any   any               `json:"any,omitempty"`
}

type embedded struct {
	Kind string `json:"kind"`
	// Shadowed by outer.Name: the shallower field wins.
	Name int `json:"name"`
}

type outer struct {
	embedded
	Name     string            `json:"name"`
	Timeout  *metav1.Duration  `json:"timeout,omitempty"`
	When     metav1.Time       `json:"when,omitempty"`
	Items    []inner           `json:"items,omitempty"`
	ByName   map[string]*inner `json:"byName,omitempty"`
	Skipped  string            `json:"-"`
	Untagged string
	hidden   string //nolint:unused // checks that unexported fields are unknown
}

func TestUnmarshal(t *testing.T) {
	t.Run("valid", func(t *testing.T) {
		var o outer
		errs := Unmarshal([]byte(`{"kind":"K","name":"n","timeout":"1m","when":"2026-01-02T03:04:05Z",
			"items":[{"name":"a","count":3,"ratio":0.5,"size":7,"on":false,"tags":{"x":"y"},"blob":"aGk=","pair":[1,2],"any":{"z":[1]}}],
			"byName":{"a.b/c":{"name":"q"},"n":null},"Untagged":"u","timeout":null}`), &o)
		require.Empty(t, errs)
		assert.Equal(t, "K", o.Kind)
		assert.Equal(t, "n", o.Name)
		assert.Nil(t, o.Timeout, "the later null wins, as in encoding/json")
		assert.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), o.When.UTC())
		assert.Equal(t, []byte("hi"), o.Items[0].Blob)
		assert.Equal(t, "q", o.ByName["a.b/c"].Name)
		assert.Equal(t, "u", o.Untagged)
	})
	t.Run("every problem with its path", func(t *testing.T) {
		o := outer{Name: "untouched"}
		errs := Unmarshal([]byte(`{"kind":1,"name":"n","Name":"dup","timeout":"5x","when":"yesterday",
			"items":[{"name":"a"},{"nmae":"b","count":"3","ratio":"x","size":300,"on":"yes","tags":{"k":1},"blob":5,"pair":[1,2,3],"any":null}],
			"byName":{"a.b/c":{"extra":true}},"hidden":"h","Skipped":"s","items2":[]}`), &o)
		got := map[string]string{}
		for _, e := range errs {
			got[e.Path] = e.Message
		}
		assert.Equal(t, map[string]string{
			"Name":                    `unknown field, did you mean "name"?`,
			"Skipped":                 "unknown field",
			"byName[\"a.b/c\"].extra": "unknown field",
			"hidden":                  "unknown field",
			"items[1].blob":           "expected base64 string, got number",
			"items[1].count":          "expected integer, got string",
			"items[1].nmae":           `unknown field, did you mean "name"?`,
			"items[1].on":             "expected boolean, got string",
			"items[1].pair":           "expected at most 2 items, got 3",
			"items[1].ratio":          "expected number, got string",
			"items[1].size":           "expected non-negative integer of 8 bits",
			"items[1].tags.k":         "expected string, got number (quote it to make it a string)",
			"items2":                  `unknown field, did you mean "items"?`,
			"kind":                    "expected string, got number (quote it to make it a string)",
			"timeout":                 `invalid value: time: unknown unit "x" in duration "5x"`,
			"when":                    `invalid value: parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`,
		}, got)
		for i := 1; i < len(errs); i++ {
			assert.LessOrEqual(t, errs[i-1].Path, errs[i].Path, "sorted by path")
		}
		assert.Equal(t, "untouched", o.Name, "v is not written when there are problems")
	})
	t.Run("values in errors", func(t *testing.T) {
		var o outer
		errs := Unmarshal([]byte(`{"items":[{"count":"three"}],"extra":{"long":"`+strings.Repeat("x", 100)+`"}}`), &o)
		require.Len(t, errs, 2)
		assert.Equal(t, "extra: unknown field (value: "+errs[0].Value+")", errs[0].Error())
		assert.Len(t, errs[0].Value, maxValueLen, "long values are shortened")
		assert.Equal(t, `items[0].count: expected integer, got string (value: three)`, errs[1].Error())
	})
	t.Run("wrong shapes", func(t *testing.T) {
		var o outer
		for doc, want := range map[string]string{
			`[1]`:                     "expected object, got list",
			`{"items":{"a":1}}`:       "expected list, got object",
			`{"byName":[1]}`:          "expected object, got list",
			`{"items":[{"name":{}}]}`: "expected string, got object",
		} {
			errs := Unmarshal([]byte(doc), &o)
			require.Len(t, errs, 1, doc)
			assert.Equal(t, want, errs[0].Message, doc)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		var o outer
		assert.Equal(t, "strictyaml: Unmarshal needs a non-nil pointer, got strictyaml.outer", Unmarshal([]byte(`{}`), o)[0].Message)
		assert.Contains(t, Unmarshal([]byte(`{`), &o)[0].Message, "invalid JSON")
	})
}

func TestLines(t *testing.T) {
	stream := "a: 0\n---\n# c\nspec:\n  items:\n    - name: x\n      tags: {app.kubernetes.io/name: y}\n    - &b {name: z}\n  copy: *b\n"
	docs := Split([]byte(stream))
	require.Len(t, docs, 2)
	lines := Lines(docs[1])
	assert.Equal(t, map[string]int{
		"spec": 4, "spec.items": 5, "spec.items[0]": 6, "spec.items[0].name": 6, "spec.items[0].tags": 7,
		`spec.items[0].tags["app.kubernetes.io/name"]`: 7, "spec.items[1]": 8, "spec.items[1].name": 8,
		"spec.copy": 9, "spec.copy.name": 8,
	}, lines)
	assert.Equal(t, 7, LineOf(lines, `spec.items[0].tags["app.kubernetes.io/name"].deeper`))
	assert.Equal(t, 6, LineOf(lines, "spec.items[0].unknown"))
	assert.Equal(t, 4, LineOf(lines, "spec.other"))
	assert.Zero(t, LineOf(lines, "status"))
	assert.Nil(t, Lines(Document{Data: []byte("a: [")}))
}

func TestShorten(t *testing.T) {
	assert.Equal(t, "abc", Shorten("abc", 4))
	assert.Equal(t, "a...", Shorten("abcdef", 4))
	assert.Equal(t, "ab...", Shorten("abé"+"xyz", 6), "é is not split")
}

func TestSuggest(t *testing.T) {
	known := map[string]reflect.Type{"remediation": nil, "retries": nil, "strategy": nil, "crds": nil}
	assert.Equal(t, "remediation", suggest("remediaton", known))
	assert.Equal(t, "crds", suggest("CRDs", known), "case differences are always suggested")
	assert.Equal(t, "crds", suggest("crd", known))
	assert.Empty(t, suggest("timeout", known))
	assert.Equal(t, 3, distance("kitten", "sitting"))
	assert.Equal(t, 0, distance("", ""))
	assert.Equal(t, 4, distance("", "abcd"))
}

func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(`{"kind":"K","items":[{"name":"a","pair":[1,2]}],"byName":{"x":{"tags":{"a":"b"}}}}`))
	f.Add([]byte(`{"timeout":"1h","when":null,"items":[null,{"any":[[[]]]}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var o outer
		errs := Unmarshal(data, &o)
		if len(errs) == 0 {
			// Whatever passes the check must decode with encoding/json.
			var again outer
			require.NoError(t, json.Unmarshal(data, &again))
		}
	})
}

func FuzzSplitToJSON(f *testing.F) {
	f.Add([]byte("a: 1\n---\nb: [1, 2\n---\n# c\n"))
	f.Add([]byte("--- \n\t- x\n...\n---#x\nkey: &a {b: *a}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for i, doc := range Split(data) {
			require.Equal(t, i+1, doc.Index)
			require.Positive(t, doc.Line)
			if _, err := ToJSON(doc); err != nil {
				var se *SyntaxError
				require.ErrorAs(t, err, &se)
			}
		}
	})
}

func TestCheckJSON(t *testing.T) {
	doc := func(s string) Document { return Split([]byte("---\n" + s))[0] }
	tests := []struct {
		name     string
		in       string
		isJSON   bool
		obj      string
		problems []JSONProblem
	}{
		{name: "YAML", in: "a: 1\n"},
		{name: "YAML flow mapping", in: "{a: 1}\n"},
		{name: "not an object", in: "[1]\n"},
		{name: "clean", in: "# c\n{\"a\": 1}\n", isJSON: true, obj: "{\"a\": 1}"},
		{name: "duplicates", in: "{\"a\": {\"b\": 1,\n \"b\": 2}, \"a\": 3}", isJSON: true, obj: "{\"a\": {\"b\": 1,\n \"b\": 2}, \"a\": 3}",
			problems: []JSONProblem{
				{Line: 3, FieldError: FieldError{Path: "a.b", Message: "invalid JSON: duplicate key"}},
				{Line: 3, FieldError: FieldError{Path: "a", Message: "invalid JSON: duplicate key"}},
			}},
		{name: "trailing", in: "{}\n\n x", isJSON: true, obj: "{}",
			problems: []JSONProblem{{Line: 4, FieldError: FieldError{Value: "x", Message: "invalid JSON: data after the object"}}}},
		{name: "trailing comments", in: "{} # c\n\n# d\n", isJSON: true, obj: "{}"},
		{name: "trailing data after a comment", in: "{} # c\n\t[1] # d\n", isJSON: true, obj: "{}",
			problems: []JSONProblem{{Line: 3, FieldError: FieldError{Value: "[1] # d", Message: "invalid JSON: a second JSON value after the object; separate documents with --- lines or put them in a v1 List"}}}},
		{name: "too deep", in: strings.Repeat("{\"a\":", maxJSONDepth+1) + "1" + strings.Repeat("}", maxJSONDepth+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, problems, isJSON := CheckJSON(doc(tt.in))
			assert.Equal(t, tt.isJSON, isJSON)
			assert.Equal(t, tt.obj, string(obj))
			assert.Equal(t, tt.problems, problems)
		})
	}
}

func TestUnmarshalLenient(t *testing.T) {
	data := []byte(`{"timeout":"10x","name":1}`)
	tree, err := ParseJSON(data)
	require.NoError(t, err)
	var o outer
	errs, decoded := UnmarshalLenient(data, tree, &o)
	assert.False(t, decoded, "a value of the wrong type stops the object")
	assert.Len(t, errs, 2)

	data = []byte(`{"kind":"K","timeout":"10x"}`)
	tree, err = ParseJSON(data)
	require.NoError(t, err)
	errs, decoded = UnmarshalLenient(data, tree, &o)
	assert.True(t, decoded)
	require.Len(t, errs, 1)
	assert.Equal(t, "timeout", errs[0].Path)
	assert.Equal(t, "K", o.Kind)
	assert.Nil(t, o.Timeout)
	tree, err = ParseJSON(data)
	require.NoError(t, err)
	assert.Len(t, UnmarshalParsed(data, tree, &outer{}), 1, "UnmarshalParsed stays strict")
}

func FuzzCheckJSON(f *testing.F) {
	f.Add([]byte(`{"a": {"b": 1, "b": [2, {"c": null}]}, "a": 3} {"x": 1} tail`))
	f.Add([]byte("# c\n\t{\"a\":\n\t1}\n"))
	f.Add([]byte(`{a: 1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, doc := range Split(data) {
			obj, problems, isJSON := CheckJSON(doc)
			if !isJSON {
				require.Nil(t, obj)
				require.Empty(t, problems)
				continue
			}
			require.True(t, json.Valid(obj), "%q", obj)
			for _, p := range problems {
				require.GreaterOrEqual(t, p.Line, doc.Line)
			}
			if len(problems) == 0 {
				_, err := ParseJSON(obj)
				require.NoError(t, err)
			}
		}
	})
}

// FuzzStrictJSON: StrictJSON accepts exactly what encoding/json decodes
// as one value with no key twice in one object, and CheckJSON agrees with
// it on objects.
func FuzzStrictJSON(f *testing.F) {
	f.Add([]byte(`{"a": {"b": 1, "b": [2, {"c": null}]}, "a": 3}`))
	f.Add([]byte(`{"a": 1} {"b": 2}`))
	f.Add([]byte(`[1, {"x": {"x": {"x": 1}}}]` + "\n\t "))
	f.Add([]byte(`{"k": "https://u:p@h/?token=t"} https://u:p@h/?token=t`))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := StrictJSON(data)
		var v any
		if json.Unmarshal(data, &v) != nil {
			require.Error(t, err, "%q is not JSON", data)
			return
		}
		if err != nil {
			require.Contains(t, err.Error(), "duplicate key")
			require.NotContains(t, err.Error(), "token=t")
		}
		if len(data) > 0 && data[0] == '{' {
			_, problems, isJSON := CheckJSON(Document{Data: data})
			require.True(t, isJSON)
			assert.Equal(t, err == nil, len(problems) == 0, "%q: %v, %v", data, err, problems)
		}
	})
}
