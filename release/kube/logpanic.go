package kube

import (
	"sync"

	"github.com/helmfleet/helmfleet/release"
)

// containedLog calls Config.Log, which Helm calls on goroutines of its
// own where a panic would end the process. The first panic turns the log
// off for the Cluster's life and is kept for the next HelmConfig to
// report.
type containedLog struct {
	log func(format string, args ...any)

	mu       sync.Mutex
	off      bool
	reported bool
	err      error
}

func (l *containedLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.off {
		return
	}
	if err := release.Contain("kube.Config.Log", func() error {
		l.log(format, args...)
		return nil
	}); err != nil {
		l.off, l.err = true, err
	}
}

// take returns the panic of Log once.
func (l *containedLog) take() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil || l.reported {
		return nil
	}
	l.reported = true
	return l.err
}
