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

// MemoryStats is what a context's allocator holds (dt_memory_stats): sizes
// as the allocator reserved them, rounded up; CachedBytes is 0 on the CPU.
type MemoryStats struct {
	InUseBytes  uint64 // in arrays and scratch space now
	PeakBytes   uint64 // the most InUseBytes has been since creation or ResetPeakMemory
	CachedBytes uint64 // freed blocks kept for reuse (GPU)
	Allocations uint64 // allocations served since the context was made
}

// MemoryStats reads the allocator's counts for this context's device object
// (shared by every Context that refers to it, such as NDArray.Context's).
func (c *Context) MemoryStats() (MemoryStats, error) {
	p, err := c.handle().acquire("Context.MemoryStats", "Context")
	if err != nil {
		return MemoryStats{}, err
	}
	defer c.h.release()
	s := capi.NewDt_memory_stats()
	defer capi.DeleteDt_memory_stats(s)
	if err := check(capi.Dt_memory_stats_init(s)); err != nil {
		return MemoryStats{}, err
	}
	if err := check(capi.Dt_context_memory_stats(s, p)); err != nil {
		return MemoryStats{}, err
	}
	return MemoryStats{
		InUseBytes: uint64(s.GetIn_use_bytes()), PeakBytes: uint64(s.GetPeak_bytes()),
		CachedBytes: uint64(s.GetCached_bytes()), Allocations: uint64(s.GetAllocations()),
	}, nil
}

// ResetPeakMemory lowers PeakBytes to what is in use now, so that the next
// reading is the peak of the work in between.
func (c *Context) ResetPeakMemory() error {
	p, err := c.handle().acquire("Context.ResetPeakMemory", "Context")
	if err != nil {
		return err
	}
	defer c.h.release()
	return check(capi.Dt_context_reset_peak_memory(p))
}
