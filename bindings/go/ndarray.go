package disttrain

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/disttrain/disttrain/bindings/go/internal/capi"
)

// DType is an element type; the names are safetensors' ("F32", ...).
type DType int32

// Element types, as dt_dtype.
const (
	Float32  DType = 0
	Float16  DType = 1
	BFloat16 DType = 2
	Float64  DType = 3
	Int32    DType = 4
	Int64    DType = 5
	Uint8    DType = 6
)

// String is the safetensors name, or "?" for an unknown value.
func (d DType) String() string { return capi.Dt_dtype_name(capi.Enum_SS_dt_dtype(d)) }

// Size is the number of bytes of one element.
func (d DType) Size() (int, error) {
	var n uint64
	if err := check(capi.Dt_dtype_size(&n, capi.Enum_SS_dt_dtype(d))); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Element is a Go type that matches one DType exactly.
type Element interface {
	float32 | float64 | int32 | int64 | uint8
}

func dtypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int32:
		return Int32
	case int64:
		return Int64
	}
	return Uint8
}

// NDArray is a dense, row-major tensor on a Context.
type NDArray struct {
	h handle
	// parent keeps what the array came from (its Context, Net, NamedArrays
	// or the array it views) reachable while the array is.
	parent interface{}
	// dtype caches the element type (it never changes); -1 until read.
	dtype atomic.Int32
}

func newNDArray(ptr uintptr, parent interface{}, dtype DType) *NDArray {
	a := &NDArray{parent: parent}
	a.dtype.Store(int32(dtype))
	a.h.init("NDArray", ptr, capi.Dt_ndarray_free)
	runtime.SetFinalizer(a, (*NDArray).finalize)
	return a
}

func (a *NDArray) finalize() { a.h.finalize() }

func (a *NDArray) handle() *handle {
	if a == nil {
		return nil
	}
	return &a.h
}

const unknownDType = -1

// NewNDArray creates a zero-filled array of the given shape (empty: a
// scalar) on ctx. The array keeps ctx alive.
func NewNDArray(ctx *Context, dtype DType, shape []int64) (*NDArray, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	cp, err := ctx.handle().acquire("NewNDArray", "Context")
	if err != nil {
		return nil, err
	}
	defer ctx.h.release()
	var out uintptr
	if err := check(capi.Dt_ndarray_create(&out, cp, capi.Enum_SS_dt_dtype(dtype), first(shape), int64(len(shape)))); err != nil {
		return nil, err
	}
	return newNDArray(out, ctx, dtype), nil
}

// FromFloat32 creates a float32 array of the given shape holding data.
func FromFloat32(ctx *Context, shape []int64, data []float32) (*NDArray, error) {
	return fromSlice(ctx, shape, data)
}

// FromInt64 creates an int64 array of the given shape holding data.
func FromInt64(ctx *Context, shape []int64, data []int64) (*NDArray, error) {
	return fromSlice(ctx, shape, data)
}

// FromInt32 creates an int32 array (e.g. labels) holding data.
func FromInt32(ctx *Context, shape []int64, data []int32) (*NDArray, error) {
	return fromSlice(ctx, shape, data)
}

func fromSlice[T Element](ctx *Context, shape []int64, data []T) (*NDArray, error) {
	a, err := NewNDArray(ctx, dtypeOf[T](), shape)
	if err != nil {
		return nil, err
	}
	if err := CopyFrom(a, data); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// Close releases this handle; views share the storage, which lives until
// the last one is closed. Close is idempotent.
func (a *NDArray) Close() error {
	if a == nil {
		return nil
	}
	a.h.close()
	runtime.SetFinalizer(a, nil)
	return nil
}

// DType is the element type.
func (a *NDArray) DType() (DType, error) {
	if a != nil {
		if d := a.dtype.Load(); d != unknownDType {
			if _, err := a.h.acquire("NDArray.DType", "NDArray"); err != nil {
				return 0, err
			}
			a.h.release()
			return DType(d), nil
		}
	}
	p, err := a.handle().acquire("NDArray.DType", "NDArray")
	if err != nil {
		return 0, err
	}
	defer a.h.release()
	var d int32
	if err := check(capi.Dt_ndarray_dtype(&d, p)); err != nil {
		return 0, err
	}
	a.dtype.Store(d)
	return DType(d), nil
}

// Shape is the array's dims (empty for a scalar).
func (a *NDArray) Shape() ([]int64, error) {
	p, err := a.handle().acquire("NDArray.Shape", "NDArray")
	if err != nil {
		return nil, err
	}
	defer a.h.release()
	var ndim uint64
	if err := check(capi.Dt_ndarray_ndim(&ndim, p)); err != nil {
		return nil, err
	}
	dims := make([]int64, ndim)
	if ndim > 0 {
		if err := check(capi.Dt_ndarray_shape(first(dims), int64(ndim), p)); err != nil {
			return nil, err
		}
	}
	return dims, nil
}

// Size is the number of elements (1 for a scalar).
func (a *NDArray) Size() (int, error) {
	p, err := a.handle().acquire("NDArray.Size", "NDArray")
	if err != nil {
		return 0, err
	}
	defer a.h.release()
	var n uint64
	if err := check(capi.Dt_ndarray_size(&n, p)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// NBytes is Size times the element size.
func (a *NDArray) NBytes() (int, error) {
	p, err := a.handle().acquire("NDArray.NBytes", "NDArray")
	if err != nil {
		return 0, err
	}
	defer a.h.release()
	var n uint64
	if err := check(capi.Dt_ndarray_nbytes(&n, p)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Context returns a new handle to the array's context; close it when done.
func (a *NDArray) Context() (*Context, error) {
	p, err := a.handle().acquire("NDArray.Context", "NDArray")
	if err != nil {
		return nil, err
	}
	defer a.h.release()
	var out uintptr
	if err := check(capi.Dt_ndarray_context(&out, p)); err != nil {
		return nil, err
	}
	return newContext(out), nil
}

// CopyFrom copies data into a; T must match a's dtype and len(data) its
// size. The copy is complete when it returns.
func CopyFrom[T Element](a *NDArray, data []T) error {
	return copyHost(a, "NDArray.CopyFrom", data, true)
}

// CopyTo copies a into dst; T must match a's dtype and len(dst) its size.
func CopyTo[T Element](a *NDArray, dst []T) error {
	return copyHost(a, "NDArray.CopyTo", dst, false)
}

// ToSlice returns a copy of a's elements in a new slice.
func ToSlice[T Element](a *NDArray) ([]T, error) {
	n, err := a.Size()
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	if err := CopyTo(a, out); err != nil {
		return nil, err
	}
	return out, nil
}

func copyHost[T Element](a *NDArray, op string, data []T, in bool) error {
	want := dtypeOf[T]()
	got, err := a.DType()
	if err != nil {
		return err
	}
	if got != want {
		return errorf(StatusDTypeMismatch, "%s: the array holds %s, the slice %s", op, got, want)
	}
	p, err := a.handle().acquire(op, "NDArray")
	if err != nil {
		return err
	}
	defer a.h.release()
	var ptr unsafe.Pointer
	if len(data) > 0 {
		ptr = unsafe.Pointer(&data[0])
	}
	var z T
	nbytes := int64(len(data)) * int64(unsafe.Sizeof(z))
	// The slice is pinned for the call by cgo's argument rules; C copies and
	// keeps no pointer to it.
	if in {
		return check(capi.Dt_ndarray_copy_from_host(p, ptr, nbytes))
	}
	return check(capi.Dt_ndarray_copy_to_host(ptr, nbytes, p))
}

// CopyFromFloat32 copies data into a float32 array.
func (a *NDArray) CopyFromFloat32(data []float32) error { return CopyFrom(a, data) }

// CopyToFloat32 copies a float32 array into dst.
func (a *NDArray) CopyToFloat32(dst []float32) error { return CopyTo(a, dst) }

// Float32s returns a float32 array's elements.
func (a *NDArray) Float32s() ([]float32, error) { return ToSlice[float32](a) }

// CopyFromInt64 copies data into an int64 array.
func (a *NDArray) CopyFromInt64(data []int64) error { return CopyFrom(a, data) }

// CopyToInt64 copies an int64 array into dst.
func (a *NDArray) CopyToInt64(dst []int64) error { return CopyTo(a, dst) }

// Int64s returns an int64 array's elements.
func (a *NDArray) Int64s() ([]int64, error) { return ToSlice[int64](a) }

// Int32s returns an int32 array's elements (e.g. a batch's labels).
func (a *NDArray) Int32s() ([]int32, error) { return ToSlice[int32](a) }

// acquire2 acquires two arrays for one call; on failure neither is held.
func acquire2(op string, x, y *NDArray) (uintptr, uintptr, error) {
	px, err := x.handle().acquire(op, "NDArray")
	if err != nil {
		return 0, 0, err
	}
	py, err := y.handle().acquire(op, "NDArray")
	if err != nil {
		x.h.release()
		return 0, 0, err
	}
	return px, py, nil
}

// CopyFromArray sets a = src (same dtype and shape; devices may differ).
func (a *NDArray) CopyFromArray(src *NDArray) error {
	pd, ps, err := acquire2("NDArray.CopyFromArray", a, src)
	if err != nil {
		return err
	}
	defer a.h.release()
	defer src.h.release()
	return check(capi.Dt_ndarray_copy(pd, ps))
}

// CastFrom sets a = src converted to a's dtype (same shape and context).
func (a *NDArray) CastFrom(src *NDArray) error {
	pd, ps, err := acquire2("NDArray.CastFrom", a, src)
	if err != nil {
		return err
	}
	defer a.h.release()
	defer src.h.release()
	return check(capi.Dt_ndarray_cast(pd, ps))
}

// Fill sets every element to v (converted to the dtype).
func (a *NDArray) Fill(v float64) error {
	p, err := a.handle().acquire("NDArray.Fill", "NDArray")
	if err != nil {
		return err
	}
	defer a.h.release()
	return check(capi.Dt_ndarray_fill(p, v))
}

// Reshape returns a view with a new shape over the same storage; one dim
// may be -1.
func (a *NDArray) Reshape(shape []int64) (*NDArray, error) {
	p, err := a.handle().acquire("NDArray.Reshape", "NDArray")
	if err != nil {
		return nil, err
	}
	defer a.h.release()
	var out uintptr
	if err := check(capi.Dt_ndarray_reshape(&out, p, first(shape), int64(len(shape)))); err != nil {
		return nil, err
	}
	return newNDArray(out, a, DType(a.dtype.Load())), nil
}

// Slice returns a view of rows [begin, end) along the first axis.
func (a *NDArray) Slice(begin, end int64) (*NDArray, error) {
	p, err := a.handle().acquire("NDArray.Slice", "NDArray")
	if err != nil {
		return nil, err
	}
	defer a.h.release()
	var out uintptr
	if err := check(capi.Dt_ndarray_slice(&out, p, begin, end)); err != nil {
		return nil, err
	}
	return newNDArray(out, a, DType(a.dtype.Load())), nil
}

// Add sets out = x + y (floating-point arrays of one dtype and shape).
func Add(out, x, y *NDArray) error {
	po, err := out.handle().acquire("disttrain.Add", "NDArray")
	if err != nil {
		return err
	}
	defer out.h.release()
	px, py, err := acquire2("disttrain.Add", x, y)
	if err != nil {
		return err
	}
	defer x.h.release()
	defer y.h.release()
	return check(capi.Dt_ndarray_add(po, px, py))
}

// Scale sets a = alpha * a.
func (a *NDArray) Scale(alpha float64) error {
	p, err := a.handle().acquire("NDArray.Scale", "NDArray")
	if err != nil {
		return err
	}
	defer a.h.release()
	return check(capi.Dt_ndarray_scale(p, alpha))
}

// Axpy sets a = a + alpha * x.
func (a *NDArray) Axpy(alpha float64, x *NDArray) error {
	py, px, err := acquire2("NDArray.Axpy", a, x)
	if err != nil {
		return err
	}
	defer a.h.release()
	defer x.h.release()
	return check(capi.Dt_ndarray_axpy(py, alpha, px))
}

// acquireArrays acquires a list of arrays for one call and returns their C
// pointers as C wants them (pointer to the first of count; nil for none).
// On success the caller releases them all with releaseArrays; on failure
// none is held. A single array passes its handle's cell, so the common
// one-key call allocates nothing.
func acquireArrays(op string, arrays []*NDArray) (*uintptr, error) {
	for i, a := range arrays {
		if _, err := a.handle().acquire(op, "NDArray"); err != nil {
			releaseArrays(arrays[:i])
			return nil, err
		}
	}
	switch len(arrays) {
	case 0:
		return nil, nil
	case 1:
		return arrays[0].h.cell, nil
	}
	ptrs := make([]uintptr, len(arrays))
	for i, a := range arrays {
		ptrs[i] = a.h.ptr
	}
	return &ptrs[0], nil
}

func releaseArrays(arrays []*NDArray) {
	for _, a := range arrays {
		a.h.release()
	}
}
