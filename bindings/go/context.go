package disttrain

import (
	"runtime"

	"github.com/disttrain/disttrain/bindings/go/internal/capi"
)

// DeviceType is where a Context computes.
type DeviceType int32

// Device types, as dt_device_type.
const (
	DeviceCPU DeviceType = 1
	DeviceGPU DeviceType = 2
)

func (d DeviceType) String() string {
	switch d {
	case DeviceCPU:
		return "cpu"
	case DeviceGPU:
		return "gpu"
	}
	return "unknown device type"
}

// Context is a device: the CPU, or GPU n.
type Context struct {
	h handle
}

func newContext(ptr uintptr) *Context {
	c := &Context{}
	c.h.init("Context", ptr, capi.Dt_context_free)
	runtime.SetFinalizer(c, (*Context).finalize)
	return c
}

func (c *Context) finalize() { c.h.finalize() }

func (c *Context) handle() *handle {
	if c == nil {
		return nil
	}
	return &c.h
}

// NewContext creates a context for (DeviceCPU, 0) or (DeviceGPU, n).
// An absent GPU is StatusNoDevice; a GPU in a build without CUDA
// StatusNotSupported.
func NewContext(device DeviceType, id int) (*Context, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	var out uintptr
	if err := check(capi.Dt_context_create(&out, capi.Enum_SS_dt_device_type(device), id)); err != nil {
		return nil, err
	}
	return newContext(out), nil
}

// CPU is NewContext(DeviceCPU, 0).
func CPU() (*Context, error) { return NewContext(DeviceCPU, 0) }

// GPU is NewContext(DeviceGPU, id).
func GPU(id int) (*Context, error) { return NewContext(DeviceGPU, id) }

// GPUCount is the number of GPUs visible to this process (0 without CUDA).
func GPUCount() (int, error) {
	if err := CheckVersion(); err != nil {
		return 0, err
	}
	var n int32
	if err := check(capi.Dt_gpu_count(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Close releases this reference; arrays and nets on the context keep the
// device state alive until they are closed. Close is idempotent.
func (c *Context) Close() error {
	if c == nil {
		return nil
	}
	c.h.close()
	runtime.SetFinalizer(c, nil)
	return nil
}

// DeviceType is the context's device type.
func (c *Context) DeviceType() (DeviceType, error) {
	p, err := c.handle().acquire("Context.DeviceType", "Context")
	if err != nil {
		return 0, err
	}
	defer c.h.release()
	var t int32
	if err := check(capi.Dt_context_device_type(&t, p)); err != nil {
		return 0, err
	}
	return DeviceType(t), nil
}

// DeviceID is the device number (0 for the CPU).
func (c *Context) DeviceID() (int, error) {
	p, err := c.handle().acquire("Context.DeviceID", "Context")
	if err != nil {
		return 0, err
	}
	defer c.h.release()
	var id int32
	if err := check(capi.Dt_context_device_id(&id, p)); err != nil {
		return 0, err
	}
	return int(id), nil
}

// SetNumThreads sets the CPU threads of kernels on this context for nets
// created afterwards (0: OMP_NUM_THREADS if set, else all usable CPUs).
func (c *Context) SetNumThreads(n int) error {
	p, err := c.handle().acquire("Context.SetNumThreads", "Context")
	if err != nil {
		return err
	}
	defer c.h.release()
	return check(capi.Dt_context_set_num_threads(p, n))
}

// NumThreads is the CPU thread count set for this context.
func (c *Context) NumThreads() (int, error) {
	p, err := c.handle().acquire("Context.NumThreads", "Context")
	if err != nil {
		return 0, err
	}
	defer c.h.release()
	var n int32
	if err := check(capi.Dt_context_num_threads(&n, p)); err != nil {
		return 0, err
	}
	return int(n), nil
}
