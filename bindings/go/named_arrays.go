package disttrain

import (
	"runtime"
	"strings"

	"github.com/disttrain/disttrain/bindings/go/internal/capi"
)

// joinNames packs names as one string of NUL-terminated names, the form the
// generated layer takes for C's const char *const * lists (a []string may
// not be passed to C: it holds Go pointers).
func joinNames(op string, names []string) (string, error) {
	var b strings.Builder
	for _, n := range names {
		if strings.IndexByte(n, 0) >= 0 {
			return "", errorf(StatusInvalidArgument, "%s: name %q contains a NUL byte", op, n)
		}
		b.WriteString(n)
		b.WriteByte(0)
	}
	return b.String(), nil
}

// SaveArrays writes arrays under unique, non-empty names to path as a
// safetensors file (written to a temporary name and renamed).
func SaveArrays(path string, names []string, arrays []*NDArray) error {
	if err := CheckVersion(); err != nil {
		return err
	}
	if len(names) != len(arrays) {
		return errorf(StatusInvalidArgument, "SaveArrays: %d names for %d arrays", len(names), len(arrays))
	}
	joined, err := joinNames("SaveArrays", names)
	if err != nil {
		return err
	}
	ptrs, err := acquireArrays("SaveArrays", arrays)
	if err != nil {
		return err
	}
	defer releaseArrays(arrays)
	return check(capi.Dt_ndarray_save(path, joined, ptrs, int64(len(arrays))))
}

// NamedArrays is the content of one safetensors file, in header order.
type NamedArrays struct {
	h   handle
	ctx *Context
}

func (l *NamedArrays) finalize() { l.h.finalize() }

func (l *NamedArrays) handle() *handle {
	if l == nil {
		return nil
	}
	return &l.h
}

// LoadArrays reads and validates a safetensors file onto ctx. A missing
// file is StatusNotFound, a malformed one StatusIO.
func LoadArrays(ctx *Context, path string) (*NamedArrays, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	cp, err := ctx.handle().acquire("LoadArrays", "Context")
	if err != nil {
		return nil, err
	}
	defer ctx.h.release()
	var out uintptr
	if err := check(capi.Dt_named_arrays_load(&out, cp, path)); err != nil {
		return nil, err
	}
	l := &NamedArrays{ctx: ctx}
	l.h.init("NamedArrays", out, capi.Dt_named_arrays_free)
	runtime.SetFinalizer(l, (*NamedArrays).finalize)
	return l, nil
}

// Close frees the list; arrays taken from it stay valid. Idempotent.
func (l *NamedArrays) Close() error {
	if l == nil {
		return nil
	}
	l.h.close()
	runtime.SetFinalizer(l, nil)
	return nil
}

// Len is the number of entries.
func (l *NamedArrays) Len() (int, error) {
	p, err := l.handle().acquire("NamedArrays.Len", "NamedArrays")
	if err != nil {
		return 0, err
	}
	defer l.h.release()
	var n uint64
	if err := check(capi.Dt_named_arrays_count(&n, p)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Name is the name of entry i.
func (l *NamedArrays) Name(i int) (string, error) {
	p, err := l.handle().acquire("NamedArrays.Name", "NamedArrays")
	if err != nil {
		return "", err
	}
	defer l.h.release()
	var name string
	if err := check(capi.Dt_named_arrays_name(&name, p, int64(i))); err != nil {
		return "", err
	}
	return name, nil
}

// Get returns a new handle to entry i (sharing its storage).
func (l *NamedArrays) Get(i int) (*NDArray, error) {
	p, err := l.handle().acquire("NamedArrays.Get", "NamedArrays")
	if err != nil {
		return nil, err
	}
	defer l.h.release()
	var out uintptr
	if err := check(capi.Dt_named_arrays_get(&out, p, int64(i))); err != nil {
		return nil, err
	}
	return newNDArray(out, l, unknownDType), nil
}

// Find returns a new handle to the entry called name; StatusNotFound if
// there is none.
func (l *NamedArrays) Find(name string) (*NDArray, error) {
	if name == "" {
		return nil, errorf(StatusInvalidArgument, "NamedArrays.Find: empty name")
	}
	p, err := l.handle().acquire("NamedArrays.Find", "NamedArrays")
	if err != nil {
		return nil, err
	}
	defer l.h.release()
	var out uintptr
	if err := check(capi.Dt_named_arrays_find(&out, p, name)); err != nil {
		return nil, err
	}
	return newNDArray(out, l, unknownDType), nil
}
