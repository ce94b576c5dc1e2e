package disttrain

import (
	"fmt"
	"os"
	"sync/atomic"
)

// closedBit marks a handle as closed in handle.state; the rest of the state
// counts the calls in flight, in steps of 2.
const closedBit = 1

// handle owns one C handle. Calls acquire it for their duration, so Close
// while another goroutine is inside a call defers the C free until that call
// returns: the pointer is never freed under a running call, and no lock is
// held across calls (so several handles can be used in one call without a
// lock order).
type handle struct {
	ptr uintptr
	// cell holds ptr again in an allocation of its own, which holds no Go
	// pointer: its address may be passed to C as a one-element array of
	// handles (cgo checks the whole allocation an argument points into).
	cell  *uintptr
	state atomic.Int64
	kind  string
	free  func(uintptr)
}

func (h *handle) init(kind string, ptr uintptr, free func(uintptr)) {
	h.kind = kind
	h.ptr = ptr
	h.cell = new(uintptr)
	*h.cell = ptr
	h.free = free
}

// acquire returns the C pointer for one call, or an error naming op when the
// handle is nil or closed. Every successful acquire is paired with release.
func (h *handle) acquire(op, kind string) (uintptr, error) {
	if h == nil {
		return 0, errorf(StatusInvalidHandle, "%s: nil %s", op, kind)
	}
	for {
		s := h.state.Load()
		if s&closedBit != 0 {
			return 0, errorf(StatusInvalidHandle, "%s: the %s is closed", op, h.kind)
		}
		if h.state.CompareAndSwap(s, s+2) {
			return h.ptr, nil
		}
	}
}

func (h *handle) release() {
	if h.state.Add(-2) == closedBit {
		h.free(h.ptr)
	}
}

// close marks the handle closed; the C handle is freed now, or by the last
// call still in flight. A second close does nothing.
func (h *handle) close() {
	if h == nil {
		return
	}
	for {
		s := h.state.Load()
		if s&closedBit != 0 {
			return
		}
		if h.state.CompareAndSwap(s, s|closedBit) {
			if s == 0 {
				h.free(h.ptr)
			}
			return
		}
	}
}

// leaks counts handles freed by a finalizer instead of Close.
var leaks atomic.Int64

// finalize is the safety net for a handle that became unreachable without
// Close: it says so on stderr and frees it. No call can be in flight here,
// since a call keeps its handle reachable until it returns.
func (h *handle) finalize() {
	if h.state.Load()&closedBit != 0 {
		return
	}
	leaks.Add(1)
	fmt.Fprintf(os.Stderr, "disttrain: leak: %s garbage collected without Close; the finalizer frees it\n", h.kind)
	h.close()
}

// LeakedHandles is the number of handles that the garbage collector found
// unclosed and freed so far; a correct program keeps it at 0.
func LeakedHandles() int64 { return leaks.Load() }

// first is the address of a slice's first element, or nil for an empty
// slice: how arrays reach the generated layer (C gets pointer + count).
func first[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}
