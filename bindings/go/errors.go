package disttrain

import (
	"fmt"

	"github.com/disttrain/disttrain/bindings/go/internal/capi"
)

// Status names the cause of a failure; the values are dt_status's and never
// change (the C enum is append-only).
type Status int32

// The causes, as in dt_c_api.h.
const (
	StatusOK              Status = 0
	StatusInvalidArgument Status = 1
	StatusOutOfMemory     Status = 2
	StatusNotSupported    Status = 3
	StatusBadState        Status = 4
	StatusTimedOut        Status = 5
	StatusClosed          Status = 6
	StatusNetwork         Status = 7
	StatusRemote          Status = 8
	StatusProtocol        Status = 9
	StatusCUDA            Status = 10
	StatusNCCL            Status = 11
	StatusIO              Status = 12
	StatusInternal        Status = 13
	StatusInvalidHandle   Status = 14
	StatusShapeMismatch   Status = 15
	StatusDTypeMismatch   Status = 16
	StatusNoDevice        Status = 17
	StatusNotFound        Status = 18
	StatusPeerLost        Status = 19
	StatusUnauthenticated Status = 20
)

// String is the library's static text for the status ("invalid argument").
func (s Status) String() string {
	return capi.Dt_status_string(int32(s))
}

// Error is a non-OK status with its message. Retrieve it with errors.As:
//
//	var e *disttrain.Error
//	if errors.As(err, &e) && e.Status == disttrain.StatusTimedOut { ... }
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "disttrain: " + e.Status.String()
	}
	return fmt.Sprintf("disttrain: %s: %s", e.Status, e.Message)
}

// Is makes errors.Is(err, &Error{Status: s}) match any error of status s.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Status == e.Status
}

// check turns the generated layer's failure (nil on success) into an error.
func check(f *capi.Failure) error {
	if f == nil {
		return nil
	}
	return &Error{Status: Status(f.Status), Message: f.Message}
}

// errorf builds an error raised by this package itself (a closed handle, a
// slice of the wrong length) in the same form as the library's.
func errorf(status Status, format string, args ...interface{}) error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}
