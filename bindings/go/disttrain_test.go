package disttrain

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestVersionMatchesTheLoadedLibrary(t *testing.T) {
	if err := CheckVersion(); err != nil {
		t.Fatal(err)
	}
	if got, want := Version(), versionText(uint32(GeneratedVersion)); got != want {
		t.Fatalf("Version() = %s, generated for %s", got, want)
	}
	err := versionMismatch(200, 103)
	wantStatus(t, "a mismatched version", err, StatusProtocol)
	if !strings.Contains(err.Error(), "0.2.0") || !strings.Contains(err.Error(), "0.1.3") {
		t.Fatalf("the mismatch message names neither version: %v", err)
	}
	info := get(GetBuildInfo())(t)
	if info.VersionMajor*10000+info.VersionMinor*100+info.VersionPatch != GeneratedVersion {
		t.Fatalf("build info version %+v", info)
	}
}

func TestStatusText(t *testing.T) {
	if s := StatusTimedOut.String(); s == "" || strings.Contains(s, "?") {
		t.Fatalf("StatusTimedOut.String() = %q", s)
	}
	if !errors.Is(&Error{Status: StatusNotFound, Message: "x"}, &Error{Status: StatusNotFound}) {
		t.Fatal("errors.Is does not match on status")
	}
}

// Every handle type: create, use once, Close twice.
func TestCreateAndCloseEveryHandle(t *testing.T) {
	dir := fashionMNIST(t)
	leaked := LeakedHandles()
	ctx := get(CPU())(t)
	if d := get(ctx.DeviceType())(t); d != DeviceCPU {
		t.Fatalf("device type %v", d)
	}
	if err := ctx.SetNumThreads(1); err != nil {
		t.Fatal(err)
	}
	if n := get(ctx.NumThreads())(t); n != 1 {
		t.Fatalf("threads %d", n)
	}
	a := get(NewNDArray(ctx, Float32, []int64{2, 3}))(t)
	path := filepath.Join(t.TempDir(), "a.safetensors")
	if err := SaveArrays(path, []string{"a"}, []*NDArray{a}); err != nil {
		t.Fatal(err)
	}
	list := get(LoadArrays(ctx, path))(t)
	if n := get(list.Len())(t); n != 1 {
		t.Fatalf("%d entries", n)
	}
	net := get(NewNet(ctx, "mlp", `{"input_shape": [1, 28, 28], "hidden": [16], "classes": 10}`))(t)
	opt := get(NewOptimizer("sgd"))(t)
	kv := get(NewKVStore("local", nil))(t)
	opts := get(DefaultDataLoaderOptions())(t)
	loader := get(NewMNISTLoader(dir, "t10k", &opts))(t)
	tr := get(NewTrainer(net, opt, kv, nil))(t)
	for _, c := range []interface{ Close() error }{tr, loader, kv, opt, net, list, a, ctx} {
		for i := 0; i < 2; i++ {
			if err := c.Close(); err != nil {
				t.Fatalf("%T.Close #%d: %v", c, i+1, err)
			}
		}
	}
	var nilArray *NDArray
	if err := nilArray.Close(); err != nil {
		t.Fatal(err)
	}
	if n := LeakedHandles() - leaked; n != 0 {
		t.Fatalf("%d handles reached the finalizer", n)
	}
}

// A closed or nil handle is an error of status StatusInvalidHandle in every
// family, never a crash.
func TestClosedHandles(t *testing.T) {
	dir := fashionMNIST(t)
	ctx := get(CPU())(t)
	a := get(NewNDArray(ctx, Float32, []int64{4}))(t)
	b := get(NewNDArray(ctx, Float32, []int64{4}))(t)
	net := get(NewNet(ctx, "mlp", `{"input_shape": [1, 28, 28], "hidden": [16], "classes": 10}`))(t)
	opt := get(NewOptimizer("sgd"))(t)
	kv := get(NewKVStore("local", nil))(t)
	loader := get(NewMNISTLoader(dir, "t10k", nil))(t)
	path := filepath.Join(t.TempDir(), "b.safetensors")
	if err := SaveArrays(path, []string{"b"}, []*NDArray{b}); err != nil {
		t.Fatal(err)
	}
	list := get(LoadArrays(ctx, path))(t)
	tr := get(NewTrainer(net, opt, kv, nil))(t)
	for _, c := range []interface{ Close() error }{tr, list, loader, kv, opt, net, a, ctx} {
		c.Close()
	}
	defer b.Close()

	_, err := ctx.DeviceID()
	wantStatus(t, "Context.DeviceID after Close", err, StatusInvalidHandle)
	_, err = NewNDArray(ctx, Float32, []int64{1})
	wantStatus(t, "NewNDArray on a closed Context", err, StatusInvalidHandle)
	wantStatus(t, "NDArray.Fill after Close", a.Fill(1), StatusInvalidHandle)
	wantStatus(t, "NDArray.CopyFromFloat32 after Close", a.CopyFromFloat32(make([]float32, 4)), StatusInvalidHandle)
	wantStatus(t, "CopyFromArray from a closed array", b.CopyFromArray(a), StatusInvalidHandle)
	_, err = list.Name(0)
	wantStatus(t, "NamedArrays.Name after Close", err, StatusInvalidHandle)
	_, err = net.NumParams()
	wantStatus(t, "Net.NumParams after Close", err, StatusInvalidHandle)
	_, err = net.ComputeDType()
	wantStatus(t, "Net.ComputeDType after Close", err, StatusInvalidHandle)
	wantStatus(t, "Net.SetLossScaling after Close", net.SetLossScaling(LossScalingOptions{}), StatusInvalidHandle)
	wantStatus(t, "Optimizer.SetFloat after Close", opt.SetFloat("learning_rate", 0.1), StatusInvalidHandle)
	_, err = kv.Rank()
	wantStatus(t, "KVStore.Rank after Close", err, StatusInvalidHandle)
	wantStatus(t, "KVStore.PushPull of a closed array", func() error {
		kv2 := get(NewKVStore("local", nil))(t)
		defer kv2.Close()
		return kv2.PushPull([]uint64{1}, []*NDArray{a}, nil, 0)
	}(), StatusInvalidHandle)
	wantStatus(t, "DataLoader.StartEpoch after Close", loader.StartEpoch(0), StatusInvalidHandle)
	wantStatus(t, "Trainer.SetLearningRate after Close", tr.SetLearningRate(0.1), StatusInvalidHandle)
	_, err = tr.SkippedSteps()
	wantStatus(t, "Trainer.SkippedSteps after Close", err, StatusInvalidHandle)
	wantStatus(t, "NewTrainer with a closed Net", func() error {
		_, err := NewTrainer(net, opt, nil, nil)
		return err
	}(), StatusInvalidHandle)

	var nilCtx *Context
	_, err = NewNDArray(nilCtx, Float32, []int64{1})
	wantStatus(t, "NewNDArray on a nil Context", err, StatusInvalidHandle)
	var nilArray *NDArray
	_, err = nilArray.Shape()
	wantStatus(t, "Shape of a nil NDArray", err, StatusInvalidHandle)
}

// One error path per family, with the status the C API documents.
func TestErrorsCarryTheirStatus(t *testing.T) {
	ctx := cpu(t)

	_, err := NewContext(DeviceType(9), 0)
	wantStatus(t, "an unknown device type", err, StatusInvalidArgument)

	_, err = NewNDArray(ctx, Float32, []int64{2, -3})
	wantStatus(t, "a negative dim", err, StatusInvalidArgument)
	a := get(NewNDArray(ctx, Float32, []int64{2, 3}))(t)
	defer a.Close()
	b := get(NewNDArray(ctx, Float32, []int64{3, 2}))(t)
	defer b.Close()
	wantStatus(t, "adding (2,3) and (3,2)", Add(a, a, b), StatusShapeMismatch)
	_, err = a.Reshape([]int64{4, 2})
	wantStatus(t, "reshaping 6 elements to (4,2)", err, StatusShapeMismatch)
	err = a.CopyFromFloat32(make([]float32, 5))
	if err == nil {
		t.Fatal("copying 5 floats into 6 elements succeeded")
	}
	wantStatus(t, "copying int64 into a float32 array", a.CopyFromInt64(make([]int64, 6)), StatusDTypeMismatch)

	_, err = NewKVStore("nope", nil)
	wantStatus(t, `kvstore type "nope"`, err, StatusInvalidArgument)
	kv := get(NewKVStore("local", nil))(t)
	defer kv.Close()
	wantStatus(t, "pull of a key never initialised", kv.Pull([]uint64{99}, []*NDArray{a}, 0), StatusNotFound)
	wantStatus(t, "3 keys and 1 value", kv.Push([]uint64{1, 2, 3}, []*NDArray{a}, 0), StatusInvalidArgument)
	wantStatus(t, "compression on a local store", kv.SetGradientCompression("2bit"), StatusNotSupported)

	_, err = NewNet(ctx, "nope", "")
	wantStatus(t, `net builder "nope"`, err, StatusInvalidArgument)
	net := get(NewNet(ctx, "mlp", `{"input_shape": [1, 28, 28], "hidden": [16], "classes": 10}`))(t)
	defer net.Close()
	_, err = net.FindParam("nope.weight")
	wantStatus(t, "an unknown parameter", err, StatusNotFound)

	// Mixed precision is a GPU feature: the CPU net refuses 16-bit compute
	// and stays in float32 without loss scaling.
	if d := get(net.ComputeDType())(t); d != Float32 {
		t.Fatalf("a CPU net computes in %v", d)
	}
	wantStatus(t, "float16 compute on a CPU net", net.SetComputeDType(Float16), StatusNotSupported)
	wantStatus(t, "bfloat16 compute on a CPU net", net.SetComputeDType(BFloat16), StatusNotSupported)
	wantStatus(t, "int32 compute", net.SetComputeDType(Int32), StatusInvalidArgument)
	wantStatus(t, "an unknown dtype value", net.SetComputeDType(DType(99)), StatusInvalidArgument)
	if d := get(net.ComputeDType())(t); d != Float32 {
		t.Fatalf("after the refusals the net computes in %v", d)
	}
	if s := get(net.LossScale())(t); s != 1 {
		t.Fatalf("loss scale %v without loss scaling", s)
	}
	noErr(t, net.SetComputeDType(Float32))

	// Loss scaling: the library's defaults; a float32 net has none to
	// enable, and bad values are refused by name before the dtype is
	// looked at.
	defaults := get(DefaultLossScalingOptions())(t)
	want := LossScalingOptions{Enabled: true, InitScale: 65536, GrowthFactor: 2, BackoffFactor: 0.5, GrowthInterval: 2000}
	if defaults != want {
		t.Fatalf("loss scaling defaults %+v, want %+v", defaults, want)
	}
	if o := get(net.LossScaling())(t); o.Enabled || o.InitScale != 65536 {
		t.Fatalf("a float32 net's loss scaling %+v", o)
	}
	err = net.SetLossScaling(defaults)
	wantStatus(t, "loss scaling on a float32 net", err, StatusInvalidArgument)
	if !strings.Contains(err.Error(), "float32") {
		t.Fatalf("the refusal does not say why: %v", err)
	}
	for field, o := range map[string]LossScalingOptions{
		"init_scale":      {Enabled: true, InitScale: -1, GrowthFactor: 2, BackoffFactor: 0.5, GrowthInterval: 2000},
		"growth_factor":   {Enabled: true, InitScale: 65536, GrowthFactor: 1, BackoffFactor: 0.5, GrowthInterval: 2000},
		"backoff_factor":  {Enabled: true, InitScale: 65536, GrowthFactor: 2, BackoffFactor: 0, GrowthInterval: 2000},
		"growth_interval": {Enabled: true, InitScale: 65536, GrowthFactor: 2, BackoffFactor: 0.5, GrowthInterval: 0},
	} {
		err = net.SetLossScaling(o)
		wantStatus(t, "loss scaling with a bad "+field, err, StatusInvalidArgument)
		if !strings.Contains(err.Error(), field) {
			t.Fatalf("the error for a bad %s does not name it: %v", field, err)
		}
	}
	// Disabled, the other fields are not looked at (the zero value).
	noErr(t, net.SetLossScaling(LossScalingOptions{}))
	if s := get(net.LossScale())(t); s != 1 {
		t.Fatalf("loss scale %v with scaling disabled", s)
	}

	_, err = NewOptimizer("nope")
	wantStatus(t, `optimizer "nope"`, err, StatusInvalidArgument)
	opt := get(NewOptimizer("sgd"))(t)
	defer opt.Close()
	wantStatus(t, "an unknown optimizer key", opt.SetFloat("nope", 1), StatusInvalidArgument)

	_, err = NewMNISTLoader(t.TempDir(), "train", nil)
	wantStatus(t, "a directory without the dataset", err, StatusNotFound)
	loader := get(NewMNISTLoader(fashionMNIST(t), "t10k", nil))(t)
	defer loader.Close()
	_, _, _, err = loader.Next()
	wantStatus(t, "Next before StartEpoch", err, StatusBadState)

	tr := get(NewTrainer(net, opt, nil, nil))(t)
	defer tr.Close()
	wantStatus(t, "a missing checkpoint", tr.LoadCheckpoint(filepath.Join(t.TempDir(), "none")), StatusNotFound)

	_, err = LoadArrays(ctx, filepath.Join(t.TempDir(), "none.safetensors"))
	wantStatus(t, "a missing safetensors file", err, StatusNotFound)

	t.Setenv("DMLC_ROLE", "worker")
	wantStatus(t, "RunNode as a worker", RunNode(nil), StatusInvalidArgument)
	t.Setenv("DMLC_ROLE", "nope")
	_, err = NodeRole()
	wantStatus(t, `DMLC_ROLE "nope"`, err, StatusInvalidArgument)
}

func TestLocalRankComesFromTheLauncher(t *testing.T) {
	t.Setenv("DT_LOCAL_RANK", "1")
	t.Setenv("DT_LOCAL_SIZE", "2")
	rank, size, err := LocalRank()
	if err != nil || rank != 1 || size != 2 {
		t.Fatalf("LocalRank() = %d, %d, %v; want 1, 2, nil", rank, size, err)
	}
	t.Setenv("DT_LOCAL_RANK", "two")
	_, _, err = LocalRank()
	wantStatus(t, `DT_LOCAL_RANK "two"`, err, StatusInvalidArgument)
}

// The message comes from the failing call itself: many goroutines fail at
// once, each with its own cause, across OS threads.
func TestErrorMessageBelongsToItsCall(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				name := fmt.Sprintf("no-such-optimizer-%d-%d", g, i)
				_, err := NewOptimizer(name)
				var e *Error
				if !errors.As(err, &e) || !strings.Contains(e.Message, name) {
					errs <- fmt.Errorf("NewOptimizer(%q): %v", name, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A child outlives its closed parent: the C objects are reference counted
// and the Go wrappers hold their parents.
func TestChildrenOutliveClosedParents(t *testing.T) {
	ctx := get(CPU())(t)
	a := get(FromFloat32(ctx, []int64{3}, []float32{1, 2, 3}))(t)
	defer a.Close()
	net := get(NewNet(ctx, "mlp", `{"input_shape": [1, 28, 28], "hidden": [8], "classes": 10}`))(t)
	defer net.Close()
	noErr(t, net.Initialize(5))
	w := get(net.Param(0))(t)
	defer w.Close()
	before := get(w.Float32s())(t)
	opt := get(NewOptimizer("sgd"))(t)
	tr := get(NewTrainer(net, opt, nil, nil))(t)
	defer tr.Close()

	ctx.Close()
	opt.Close() // the trainer copied the description
	noErr(t, a.Scale(2))
	if got := get(a.Float32s())(t); !reflect.DeepEqual(got, []float32{2, 4, 6}) {
		t.Fatalf("array after its context was closed: %v", got)
	}
	noErr(t, net.Close())
	if got := get(w.Float32s())(t); !reflect.DeepEqual(got, before) {
		t.Fatal("a parameter changed when its net was closed")
	}
	// The trainer still holds the net: a step on a batch works.
	loader := get(NewMNISTLoader(fashionMNIST(t), "t10k", nil))(t)
	defer loader.Close()
	noErr(t, loader.StartEpoch(0))
	data, labels, ok, err := loader.Next()
	if err != nil || !ok {
		t.Fatalf("first batch: %v %v", ok, err)
	}
	defer data.Close()
	defer labels.Close()
	if _, _, err := tr.TrainBatch(data, labels); err != nil {
		t.Fatalf("TrainBatch after the net's handle was closed: %v", err)
	}
}
