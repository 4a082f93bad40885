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
	assert.Equal(t, 3, strings.Count(s, "install  1         podinfo-6.5.0  deployed"), s)
	assert.Equal(t, 3, strings.Count(s, "none    1         podinfo-6.5.0  deployed"), s)
	assert.Equal(t, 3, strings.Count(s, "upgrade  2         podinfo-6.5.1  deployed"), s)
	assert.Contains(t, s, "prod-us-1  apps/podinfo  upgrade  2         podinfo-6.5.1  deployed  6")
	assert.Equal(t, 3, strings.Count(s, "Deployment apps/podinfo"), s)
}
