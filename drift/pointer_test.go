package drift_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/drift"
)

func TestParsePointer(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    drift.Pointer
		wantErr string
	}{
		{name: "whole document", in: "", want: drift.Pointer{}},
		{name: "root key", in: "/", want: drift.Pointer{""}},
		{name: "nested", in: "/spec/replicas", want: drift.Pointer{"spec", "replicas"}},
		{name: "escaped slash", in: "/metadata/labels/app.kubernetes.io~1name", want: drift.Pointer{"metadata", "labels", "app.kubernetes.io/name"}},
		{name: "escaped tilde first", in: "/a~01", want: drift.Pointer{"a~1"}},
		{name: "index", in: "/spec/template/spec/containers/0/image", want: drift.Pointer{"spec", "template", "spec", "containers", "0", "image"}},
		{name: "empty tokens", in: "//x/", want: drift.Pointer{"", "x", ""}},
		{name: "no leading slash", in: "spec/replicas", wantErr: `invalid JSON pointer "spec/replicas" at offset 0: must be empty or start with "/"`},
		{name: "bad escape", in: "/a~2", wantErr: `invalid JSON pointer "/a~2" at offset 2: "~" must be followed by "0" or "1"`},
		{name: "trailing tilde", in: "/a/b~", wantErr: `invalid JSON pointer "/a/b~" at offset 4: "~" must be followed by "0" or "1"`},
		{name: "invalid utf-8", in: "/a\xff", wantErr: `invalid JSON pointer "/a\xff" at offset 2: not valid UTF-8`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := drift.ParsePointer(tt.in)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				assert.True(t, errors.Is(err, drift.ErrInvalidPointer))
				var pe *drift.PointerError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, tt.in, pe.Pointer)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.in, got.String())
		})
	}
}

func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{"", "/", "/spec/replicas", "/a~0b~1c", "/a~", "x", "/~2", "//", "/data/\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := drift.ParsePointer(s)
		if err != nil {
			var pe *drift.PointerError
			require.ErrorAs(t, err, &pe)
			require.GreaterOrEqual(t, pe.Offset, 0)
			require.LessOrEqual(t, pe.Offset, len(s))
			return
		}
		// A valid pointer prints back exactly: escaping is unique.
		require.Equal(t, s, p.String())
		again, err := drift.ParsePointer(p.String())
		require.NoError(t, err)
		require.Equal(t, p, again)
	})
}
