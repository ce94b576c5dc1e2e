package disttrain

import (
	"runtime"

	"github.com/disttrain/disttrain/bindings/go/internal/capi"
)

// Optimizer is a declarative optimizer description: a name ("sgd", "nag",
// "adam", "adamw") and typed hyper-parameters. It holds no state; trainers
// and kvstores copy it.
type Optimizer struct {
	h handle
}

func (o *Optimizer) finalize() { o.h.finalize() }

func (o *Optimizer) handle() *handle {
	if o == nil {
		return nil
	}
	return &o.h
}

func newOptimizer(ptr uintptr) *Optimizer {
	o := &Optimizer{}
	o.h.init("Optimizer", ptr, capi.Dt_optimizer_free)
	runtime.SetFinalizer(o, (*Optimizer).finalize)
	return o
}

// NewOptimizer creates a description with the optimizer's defaults. An
// unknown name is StatusInvalidArgument listing the known ones.
func NewOptimizer(name string) (*Optimizer, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	var out uintptr
	if err := check(capi.Dt_optimizer_create(&out, name)); err != nil {
		return nil, err
	}
	return newOptimizer(out), nil
}

// NewOptimizerFromJSON parses the JSON that Optimizer.JSON writes.
func NewOptimizerFromJSON(json string) (*Optimizer, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	var out uintptr
	if err := check(capi.Dt_optimizer_create_from_json(&out, json)); err != nil {
		return nil, err
	}
	return newOptimizer(out), nil
}

// Close frees the description. Idempotent.
func (o *Optimizer) Close() error {
	if o == nil {
		return nil
	}
	o.h.close()
	runtime.SetFinalizer(o, nil)
	return nil
}

// SetFloat sets a real-valued key such as "learning_rate" or "momentum".
// Unknown keys and bad values are StatusInvalidArgument.
func (o *Optimizer) SetFloat(key string, v float64) error {
	p, err := o.handle().acquire("Optimizer.SetFloat", "Optimizer")
	if err != nil {
		return err
	}
	defer o.h.release()
	return check(capi.Dt_optimizer_set_double(p, key, v))
}

// SetInt sets an integer key such as "warmup_steps".
func (o *Optimizer) SetInt(key string, v int64) error {
	p, err := o.handle().acquire("Optimizer.SetInt", "Optimizer")
	if err != nil {
		return err
	}
	defer o.h.release()
	return check(capi.Dt_optimizer_set_int(p, key, v))
}

// SetBool sets a boolean key such as "nesterov".
func (o *Optimizer) SetBool(key string, v bool) error {
	p, err := o.handle().acquire("Optimizer.SetBool", "Optimizer")
	if err != nil {
		return err
	}
	defer o.h.release()
	b := 0
	if v {
		b = 1
	}
	return check(capi.Dt_optimizer_set_bool(p, key, b))
}

// SetString sets a text key such as "lr_scheduler".
func (o *Optimizer) SetString(key, v string) error {
	p, err := o.handle().acquire("Optimizer.SetString", "Optimizer")
	if err != nil {
		return err
	}
	defer o.h.release()
	return check(capi.Dt_optimizer_set_string(p, key, v))
}

// SetIntList sets an integer-list key such as "step" of "multifactor".
func (o *Optimizer) SetIntList(key string, v []int64) error {
	p, err := o.handle().acquire("Optimizer.SetIntList", "Optimizer")
	if err != nil {
		return err
	}
	defer o.h.release()
	return check(capi.Dt_optimizer_set_int_list(p, key, first(v), int64(len(v))))
}

// JSON is the description as JSON, e.g.
// {"optimizer": "sgd", "learning_rate": 0.05, "momentum": 0.9}.
func (o *Optimizer) JSON() (string, error) {
	p, err := o.handle().acquire("Optimizer.JSON", "Optimizer")
	if err != nil {
		return "", err
	}
	defer o.h.release()
	return readJSON(func(buf []byte, n *uint64) *capi.Failure {
		return capi.Dt_optimizer_to_json(buf, int64(len(buf)), n, p)
	})
}

// readJSON runs C's two-step buffer protocol: ask for the length, then
// fill a Go buffer of that length.
func readJSON(call func(buf []byte, n *uint64) *capi.Failure) (string, error) {
	var n uint64
	if err := check(call(nil, &n)); err != nil {
		return "", err
	}
	buf := make([]byte, n)
	if err := check(call(buf, &n)); err != nil {
		return "", err
	}
	if n > 0 && int(n) <= len(buf) {
		buf = buf[:n-1] // drop the NUL
	}
	return string(buf), nil
}
