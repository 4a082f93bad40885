package postrender

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMaskSecrets(t *testing.T) {
	manifests := []byte(`---
# Source: c/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: db
data:
  password: aHVudGVyMg==
stringData:
  token: s3cr3t-token
  short: ab
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  visible: not-a-secret
`)
	tests := []struct {
		name, msg, want string
		same            bool
	}{
		{name: "base64 data value", msg: "node contents: aHVudGVyMg==", want: "node contents: ***"},
		{name: "decoded data value", msg: "value hunter2 is wrong", want: "value *** is wrong"},
		{name: "stringData value", msg: "got s3cr3t-token here", want: "got *** here"},
		{name: "short values are left alone", msg: "ab", same: true},
		{name: "ConfigMap values are left alone", msg: "not-a-secret", same: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cause := errors.New(tt.msg)
			got := maskSecrets(manifests, cause)
			if tt.same {
				assert.Same(t, cause, got)
				return
			}
			assert.EqualError(t, got, tt.want)
			assert.NotErrorIs(t, got, cause, "the masked error must not unwrap to the value")
		})
	}
}
