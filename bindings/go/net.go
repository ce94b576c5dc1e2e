package disttrain

import (
	"runtime"

	"github.com/disttrain/disttrain/bindings/go/internal/capi"
)

// GradReq says what Backward does with a parameter's gradient.
type GradReq int32

// Gradient requests, as dt_grad_req.
const (
	GradNull  GradReq = 0 // no gradient
	GradWrite GradReq = 1 // overwrite (the default)
	GradAdd   GradReq = 2 // accumulate
)

// Net is a network of layers with parameters, forward and backward.
type Net struct {
	h   handle
	ctx *Context
}

func (n *Net) finalize() { n.h.finalize() }

func (n *Net) handle() *handle {
	if n == nil {
		return nil
	}
	return &n.h
}

func newNet(ptr uintptr, ctx *Context) *Net {
	n := &Net{ctx: ctx}
	n.h.init("Net", ptr, capi.Dt_net_free)
	runtime.SetFinalizer(n, (*Net).finalize)
	return n
}

// NewNet builds a model by name ("mlp", "lenet", "resnet18") on ctx;
// optionsJSON is "" or a JSON object such as
// {"input_shape": [1, 28, 28], "classes": 10}. Parameters are zeros until
// Initialize or LoadParams. The net keeps ctx alive.
func NewNet(ctx *Context, builder, optionsJSON string) (*Net, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	cp, err := ctx.handle().acquire("NewNet", "Context")
	if err != nil {
		return nil, err
	}
	defer ctx.h.release()
	var out uintptr
	if err := check(capi.Dt_net_create(&out, cp, builder, optionsJSON)); err != nil {
		return nil, err
	}
	return newNet(out, ctx), nil
}

// NewNetFromJSON builds a net from the description Net.JSON writes.
func NewNetFromJSON(ctx *Context, description string) (*Net, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	cp, err := ctx.handle().acquire("NewNetFromJSON", "Context")
	if err != nil {
		return nil, err
	}
	defer ctx.h.release()
	var out uintptr
	if err := check(capi.Dt_net_create_from_json(&out, cp, description)); err != nil {
		return nil, err
	}
	return newNet(out, ctx), nil
}

// Close frees the net; parameter arrays taken from it stay valid.
// Idempotent.
func (n *Net) Close() error {
	if n == nil {
		return nil
	}
	n.h.close()
	runtime.SetFinalizer(n, nil)
	return nil
}

// JSON is the net's description.
func (n *Net) JSON() (string, error) {
	p, err := n.handle().acquire("Net.JSON", "Net")
	if err != nil {
		return "", err
	}
	defer n.h.release()
	return readJSON(func(buf []byte, l *uint64) *capi.Failure {
		return capi.Dt_net_to_json(buf, int64(len(buf)), l, p)
	})
}

// Initialize fills every parameter by its layer's initialiser,
// reproducibly from seed.
func (n *Net) Initialize(seed uint64) error {
	p, err := n.handle().acquire("Net.Initialize", "Net")
	if err != nil {
		return err
	}
	defer n.h.release()
	return check(capi.Dt_net_initialize(p, seed))
}

// NumParams is the number of parameters (weights and auxiliary states).
func (n *Net) NumParams() (int, error) {
	p, err := n.handle().acquire("Net.NumParams", "Net")
	if err != nil {
		return 0, err
	}
	defer n.h.release()
	var c uint64
	if err := check(capi.Dt_net_num_params(&c, p)); err != nil {
		return 0, err
	}
	return int(c), nil
}

// ParamName is the name of parameter i, such as "conv1.weight".
func (n *Net) ParamName(i int) (string, error) {
	p, err := n.handle().acquire("Net.ParamName", "Net")
	if err != nil {
		return "", err
	}
	defer n.h.release()
	var name string
	if err := check(capi.Dt_net_param_name(&name, p, int64(i))); err != nil {
		return "", err
	}
	return name, nil
}

// ParamIsAuxiliary says whether parameter i is an auxiliary state (no
// gradient, not synchronised).
func (n *Net) ParamIsAuxiliary(i int) (bool, error) {
	p, err := n.handle().acquire("Net.ParamIsAuxiliary", "Net")
	if err != nil {
		return false, err
	}
	defer n.h.release()
	var aux int32
	if err := check(capi.Dt_net_param_is_auxiliary(&aux, p, int64(i))); err != nil {
		return false, err
	}
	return aux != 0, nil
}

// FindParam is the index of the parameter called name (StatusNotFound if
// none).
func (n *Net) FindParam(name string) (int, error) {
	if name == "" {
		return 0, errorf(StatusInvalidArgument, "Net.FindParam: empty name")
	}
	p, err := n.handle().acquire("Net.FindParam", "Net")
	if err != nil {
		return 0, err
	}
	defer n.h.release()
	var i uint64
	if err := check(capi.Dt_net_find_param(&i, p, name)); err != nil {
		return 0, err
	}
	return int(i), nil
}

// Param returns a new handle sharing parameter i's storage.
func (n *Net) Param(i int) (*NDArray, error) {
	p, err := n.handle().acquire("Net.Param", "Net")
	if err != nil {
		return nil, err
	}
	defer n.h.release()
	var out uintptr
	if err := check(capi.Dt_net_param(&out, p, int64(i))); err != nil {
		return nil, err
	}
	return newNDArray(out, n, unknownDType), nil
}

// Grad returns a new handle sharing parameter i's gradient (StatusNotFound
// for an auxiliary state).
func (n *Net) Grad(i int) (*NDArray, error) {
	p, err := n.handle().acquire("Net.Grad", "Net")
	if err != nil {
		return nil, err
	}
	defer n.h.release()
	var out uintptr
	if err := check(capi.Dt_net_grad(&out, p, int64(i))); err != nil {
		return nil, err
	}
	return newNDArray(out, n, unknownDType), nil
}

// SetGradReq sets the gradient request of the parameter called name, or of
// every learnable parameter when name is "".
func (n *Net) SetGradReq(name string, req GradReq) error {
	p, err := n.handle().acquire("Net.SetGradReq", "Net")
	if err != nil {
		return err
	}
	defer n.h.release()
	return check(capi.Dt_net_set_grad_req(p, name, capi.Enum_SS_dt_grad_req(req)))
}

// Forward runs the net on a batch (float32 inputs with a leading batch dim
// on the net's context); train selects batch statistics and dropout.
func (n *Net) Forward(inputs []*NDArray, train bool) error {
	p, err := n.handle().acquire("Net.Forward", "Net")
	if err != nil {
		return err
	}
	defer n.h.release()
	ptrs, err := acquireArrays("Net.Forward", inputs)
	if err != nil {
		return err
	}
	defer releaseArrays(inputs)
	mode := 0
	if train {
		mode = 1
	}
	return check(capi.Dt_net_forward(p, ptrs, int64(len(inputs)), mode))
}

// Backward computes the loss of the last Forward against integer labels
// (int32 or int64, shape (batch,)) and the gradients; it returns the loss
// (the batch mean unless the net's loss sums).
func (n *Net) Backward(labels *NDArray) (float64, error) {
	p, err := n.handle().acquire("Net.Backward", "Net")
	if err != nil {
		return 0, err
	}
	defer n.h.release()
	lp, err := labels.handle().acquire("Net.Backward", "NDArray")
	if err != nil {
		return 0, err
	}
	defer labels.h.release()
	var loss float64
	if err := check(capi.Dt_net_backward(&loss, p, lp)); err != nil {
		return 0, err
	}
	return loss, nil
}

// NumOutputs is the number of outputs of the net.
func (n *Net) NumOutputs() (int, error) {
	p, err := n.handle().acquire("Net.NumOutputs", "Net")
	if err != nil {
		return 0, err
	}
	defer n.h.release()
	var c uint64
	if err := check(capi.Dt_net_num_outputs(&c, p)); err != nil {
		return 0, err
	}
	return int(c), nil
}

// Output returns a new handle to output i of the last Forward (e.g. the
// logits); the next Forward overwrites its storage.
func (n *Net) Output(i int) (*NDArray, error) {
	p, err := n.handle().acquire("Net.Output", "Net")
	if err != nil {
		return nil, err
	}
	defer n.h.release()
	var out uintptr
	if err := check(capi.Dt_net_output(&out, p, int64(i))); err != nil {
		return nil, err
	}
	return newNDArray(out, n, unknownDType), nil
}

// SaveParams writes the parameters as a safetensors file.
func (n *Net) SaveParams(path string) error {
	p, err := n.handle().acquire("Net.SaveParams", "Net")
	if err != nil {
		return err
	}
	defer n.h.release()
	return check(capi.Dt_net_save_params(p, path))
}

// LoadParams reads every parameter from a safetensors file
// (StatusNotFound / StatusShapeMismatch naming a missing or wrong one).
func (n *Net) LoadParams(path string) error {
	p, err := n.handle().acquire("Net.LoadParams", "Net")
	if err != nil {
		return err
	}
	defer n.h.release()
	return check(capi.Dt_net_load_params(p, path))
}

// SetComputeDType selects mixed precision on a GPU context: Float16 (with
// dynamic loss scaling) or BFloat16 compute over float32 master weights;
// Float32 is the default. Before the first Forward only (StatusBadState
// after); 16 bits on a CPU context is StatusNotSupported, any other dtype
// StatusInvalidArgument.
func (n *Net) SetComputeDType(dtype DType) error {
	p, err := n.handle().acquire("Net.SetComputeDType", "Net")
	if err != nil {
		return err
	}
	defer n.h.release()
	return check(capi.Dt_net_set_compute_dtype(p, capi.Enum_SS_dt_dtype(dtype)))
}

// ComputeDType is the dtype the net computes in.
func (n *Net) ComputeDType() (DType, error) {
	p, err := n.handle().acquire("Net.ComputeDType", "Net")
	if err != nil {
		return 0, err
	}
	defer n.h.release()
	var d int32
	if err := check(capi.Dt_net_compute_dtype(&d, p)); err != nil {
		return 0, err
	}
	return DType(d), nil
}

// LossScale is the factor the next Backward multiplies the loss gradient
// by (1 without loss scaling).
func (n *Net) LossScale() (float64, error) {
	p, err := n.handle().acquire("Net.LossScale", "Net")
	if err != nil {
		return 0, err
	}
	defer n.h.release()
	var s float64
	if err := check(capi.Dt_net_loss_scale(&s, p)); err != nil {
		return 0, err
	}
	return s, nil
}

// LossScalingOptions mirrors dt_loss_scaling_options: dynamic loss scaling
// as PyTorch's GradScaler. Start from DefaultLossScalingOptions: every
// field is passed as set.
type LossScalingOptions struct {
	Enabled        bool    // false: no scaling (scale 1); the fields below are then ignored
	InitScale      float64 // the starting scale, finite and in [2^-24, 2^100]
	GrowthFactor   float64 // > 1, applied after GrowthInterval steps without an overflow
	BackoffFactor  float64 // in (0, 1), applied on a step whose gradients overflow
	GrowthInterval int64   // >= 1 steps
}

// DefaultLossScalingOptions returns the library's defaults: enabled, scale
// 65536, growth factor 2, backoff factor 0.5, growth interval 2000.
func DefaultLossScalingOptions() (LossScalingOptions, error) {
	if err := CheckVersion(); err != nil {
		return LossScalingOptions{}, err
	}
	c := capi.NewDt_loss_scaling_options()
	defer capi.DeleteDt_loss_scaling_options(c)
	if err := check(capi.Dt_loss_scaling_options_init(c)); err != nil {
		return LossScalingOptions{}, err
	}
	return lossScalingFrom(c), nil
}

func lossScalingFrom(c capi.Dt_loss_scaling_options) LossScalingOptions {
	return LossScalingOptions{
		Enabled:        c.GetEnabled() != 0,
		InitScale:      c.GetInit_scale(),
		GrowthFactor:   c.GetGrowth_factor(),
		BackoffFactor:  c.GetBackoff_factor(),
		GrowthInterval: c.GetGrowth_interval(),
	}
}

// SetLossScaling replaces the loss scaler of a Float16 net (other factors,
// or Enabled false) or a BFloat16 one (Enabled true turns scaling on); the
// scale restarts at InitScale and the skipped-step count at 0. Call it
// after SetComputeDType, which resets the scaler to its dtype's default.
// Enabled on a Float32 net (every CPU net) or an out-of-range field is
// StatusInvalidArgument naming the field; on an error nothing changes.
func (n *Net) SetLossScaling(o LossScalingOptions) error {
	p, err := n.handle().acquire("Net.SetLossScaling", "Net")
	if err != nil {
		return err
	}
	defer n.h.release()
	c := capi.NewDt_loss_scaling_options()
	defer capi.DeleteDt_loss_scaling_options(c)
	if err := check(capi.Dt_loss_scaling_options_init(c)); err != nil {
		return err
	}
	enabled := 0
	if o.Enabled {
		enabled = 1
	}
	c.SetEnabled(enabled)
	c.SetInit_scale(o.InitScale)
	c.SetGrowth_factor(o.GrowthFactor)
	c.SetBackoff_factor(o.BackoffFactor)
	c.SetGrowth_interval(o.GrowthInterval)
	return check(capi.Dt_net_set_loss_scaling(p, c))
}

// LossScaling is the current loss scaler's options: Enabled false (with
// the defaults) without loss scaling. The current scale is LossScale.
func (n *Net) LossScaling() (LossScalingOptions, error) {
	p, err := n.handle().acquire("Net.LossScaling", "Net")
	if err != nil {
		return LossScalingOptions{}, err
	}
	defer n.h.release()
	c := capi.NewDt_loss_scaling_options()
	defer capi.DeleteDt_loss_scaling_options(c)
	if err := check(capi.Dt_loss_scaling_options_init(c)); err != nil {
		return LossScalingOptions{}, err
	}
	if err := check(capi.Dt_net_loss_scaling(c, p)); err != nil {
		return LossScalingOptions{}, err
	}
	return lossScalingFrom(c), nil
}
