package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	s := out.String()
	assert.Equal(t, 3, strings.Count(s, "Absent  install  podinfo@6.5.0"), s)
	assert.Contains(t, s, "dev   dev-1      apps/podinfo  succeeded  install  1")
	assert.Contains(t, s, "wave prod [prod-eu-1 prod-us-1]: 2 succeeded, 0 failed")
	assert.Equal(t, 3, strings.Count(s, "OutOfSync  upgrade  podinfo@6.5.1  1 "), s)
	assert.Equal(t, 3, strings.Count(s, "  chart version changed from 6.5.0 to 6.5.1\n"), s)
	assert.Contains(t, s, "+    helm.sh/chart: podinfo-6.5.1")
	assert.Contains(t, s, "prod-eu-1:apps/podinfo: corrected: 1 modified, 0 missing")
	assert.Contains(t, s, "dev-1: Deployment apps/podinfo replicas=2 labels[helm.sh/chart]=podinfo-6.5.1")
	assert.Contains(t, s, "prod-eu-1: Deployment apps/podinfo replicas=4")
	assert.Contains(t, s, "prod-us-1: Deployment apps/podinfo replicas=6")
}
