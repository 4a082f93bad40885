package valuestest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/values"
	"github.com/helmfleet/helmfleet/values/valuestest"
)

func TestReader(t *testing.T) {
	boom := errors.New("boom")
	r := valuestest.NewReader().
		ConfigMap("ns", "cm", map[string]string{"values.yaml": "a: 1"}).
		Secret("ns", "s", map[string][]byte{"k": []byte("v")}).
		FailOn(values.KindSecret, "ns", "broken", boom)
	ctx := context.Background()
	tests := []struct {
		name      string
		kind      values.Kind
		namespace string
		obj       string
		want      map[string][]byte
		wantErr   error
	}{
		{name: "config map", kind: values.KindConfigMap, namespace: "ns", obj: "cm", want: map[string][]byte{"values.yaml": []byte("a: 1")}},
		{name: "secret", kind: values.KindSecret, namespace: "ns", obj: "s", want: map[string][]byte{"k": []byte("v")}},
		{name: "kind matters", kind: values.KindSecret, namespace: "ns", obj: "cm", wantErr: values.ErrNotFound},
		{name: "namespace matters", kind: values.KindConfigMap, namespace: "other", obj: "cm", wantErr: values.ErrNotFound},
		{name: "injected error", kind: values.KindSecret, namespace: "ns", obj: "broken", wantErr: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Read(ctx, tt.kind, tt.namespace, tt.obj)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	assert.Equal(t, 5, r.Reads())

	got, err := r.Read(ctx, values.KindSecret, "ns", "s")
	require.NoError(t, err)
	got["k"][0] = 'X'
	again, err := r.Read(ctx, values.KindSecret, "ns", "s")
	require.NoError(t, err)
	assert.Equal(t, []byte("v"), again["k"], "callers cannot change stored data")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = r.Read(cancelled, values.KindConfigMap, "ns", "cm")
	require.ErrorIs(t, err, context.Canceled)
}
