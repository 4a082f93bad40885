package release

import (
	"errors"
	"fmt"
	"runtime/debug"
	"unicode/utf8"
)

// ErrCallbackPanic is matched (errors.Is) by every *CallbackPanicError.
var ErrCallbackPanic = errors.New("callback panicked")

// CallbackPanicError reports a panic (or a runtime.Goexit) of code the
// caller gave the library — a callback of a Config, a kube client of a
// Cluster — that the library recovered instead of letting it end the
// process or reach the caller as a panic.
type CallbackPanicError struct {
	// Callback names the code that panicked, such as
	// "distribute.Config.OnWarning".
	Callback string
	// Value is the value passed to panic; for a callback that called
	// runtime.Goexit (t.FailNow does), an error saying so.
	Value any
	// Stack is the stack of the panicking goroutine, for debugging; Error
	// leaves it out.
	Stack []byte
}

// maxPanicText bounds the text of a panic's value in Error: the value is
// the caller's own, but a panic can carry a whole object.
const maxPanicText = 200

// Error names the callback and the panic's value, shortened to a few
// hundred bytes.
func (e *CallbackPanicError) Error() string {
	v := fmt.Sprint(e.Value)
	if len(v) > maxPanicText {
		cut := maxPanicText
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut] + "…"
	}
	return fmt.Sprintf("%s panicked: %s", e.Callback, v)
}

// Is reports whether target is ErrCallbackPanic.
func (e *CallbackPanicError) Is(target error) bool { return target == ErrCallbackPanic }

// Unwrap returns the panic's value if it is an error, such as a
// runtime.Error.
func (e *CallbackPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// errGoexit is the Value of a *CallbackPanicError for a callback that
// called runtime.Goexit.
var errGoexit = errors.New("runtime.Goexit called (by t.FailNow, for one)")

// Contain runs f, code the caller gave the library, on a goroutine of its
// own and waits for it: f's error is returned, and a panic or
// runtime.Goexit of f becomes a *CallbackPanicError naming callback. The
// packages built on this one call their users' callbacks through it, so
// that a callback running where the library cannot recover it (inside
// Helm's own goroutines) cannot end the process or leave a call waiting
// forever.
func Contain(callback string, f func() error) error {
	var (
		err      error
		returned bool
		value    any
		stack    []byte
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if returned {
				return
			}
			// recover is nil only under runtime.Goexit: since Go 1.21,
			// panic(nil) panics with a *runtime.PanicNilError.
			if value = recover(); value == nil {
				value = errGoexit
			}
			stack = debug.Stack()
		}()
		err = f()
		returned = true
	}()
	<-done
	if !returned {
		return &CallbackPanicError{Callback: callback, Value: value, Stack: stack}
	}
	return err
}
