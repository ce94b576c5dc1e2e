package disttrain

import (
	"errors"
	"math"
	"testing"
)

// GPUCount bounds the GPU contexts: the first id past it is refused, as no
// device (or, in a build without CUDA, as not supported), never created.
func TestGPUCountBoundsGPUContexts(t *testing.T) {
	n := get(GPUCount())(t)
	if n < 0 {
		t.Fatalf("GPUCount() = %d", n)
	}
	ctx, err := GPU(n)
	if err == nil {
		ctx.Close()
		t.Fatalf("GPU(%d) was created with %d GPU(s) counted", n, n)
	}
	if n > 0 {
		wantStatus(t, "GPU past the count", err, StatusNoDevice)
	} else if !errors.Is(err, &Error{Status: StatusNoDevice}) && !errors.Is(err, &Error{Status: StatusNotSupported}) {
		t.Fatalf("GPU(0) without a GPU: want StatusNoDevice or StatusNotSupported, got %v", err)
	}
}

// The allocator's counts follow arrays in and out; the peak stays until it
// is reset.
func TestMemoryStatsFollowArrays(t *testing.T) {
	ctx := get(CPU())(t)
	defer ctx.Close()
	empty := get(ctx.MemoryStats())(t)
	if empty.InUseBytes != 0 || empty.Allocations != 0 {
		t.Fatalf("fresh context: %+v", empty)
	}
	a := get(NewNDArray(ctx, Float32, []int64{1024}))(t)
	b := get(NewNDArray(ctx, Float32, []int64{2048}))(t)
	both := get(ctx.MemoryStats())(t)
	if both.InUseBytes != 4096+8192 || both.PeakBytes != 4096+8192 || both.CachedBytes != 0 || both.Allocations != 2 {
		t.Fatalf("two arrays of 4096 and 8192 bytes: %+v", both)
	}
	a.Close()
	b.Close()
	after := get(ctx.MemoryStats())(t)
	if after.InUseBytes != 0 || after.PeakBytes != 4096+8192 {
		t.Fatalf("arrays closed: %+v", after)
	}
	noErr(t, ctx.ResetPeakMemory())
	if peak := get(ctx.MemoryStats())(t).PeakBytes; peak != 0 {
		t.Fatalf("peak after reset = %d", peak)
	}
	ctx.Close()
	if _, err := ctx.MemoryStats(); err == nil {
		t.Fatal("MemoryStats of a closed context succeeded")
	}
}

// trainMLP trains an MLP from seed 5 on the first steps batches of 64 with
// the net on the first context and the others as extra contexts, and
// returns the first weight afterwards.
func trainMLP(t *testing.T, contexts []*Context, steps int) []float32 {
	t.Helper()
	net := get(NewNet(contexts[0], "mlp", `{"input_shape": [1, 28, 28], "hidden": [32], "classes": 10}`))(t)
	defer net.Close()
	noErr(t, net.Initialize(5))
	opt := get(NewOptimizer("sgd"))(t)
	defer opt.Close()
	noErr(t, opt.SetFloat("learning_rate", 0.1))
	tr := get(NewTrainer(net, opt, nil, &TrainerOptions{ExtraContexts: contexts[1:]}))(t)
	defer tr.Close()
	loader := fashionMNISTTrain(t, 64)
	for step := 0; step < steps; step++ {
		data, labels, ok, err := loader.Next()
		if err != nil || !ok {
			t.Fatalf("batch %d: ok=%v err=%v", step, ok, err)
		}
		_, _, err = tr.TrainBatch(data, labels)
		data.Close()
		labels.Close()
		noErr(t, err)
	}
	w := get(net.Param(0))(t)
	defer w.Close()
	return get(w.Float32s())(t)
}

// ExtraContexts split every batch across the replicas (split_and_load) and
// sum their gradients: two CPU replicas take the steps one replica takes
// on the whole batch, up to float rounding.
func TestExtraContextsSplitTheBatch(t *testing.T) {
	one := trainMLP(t, []*Context{cpu(t)}, 10)
	two := trainMLP(t, []*Context{cpu(t), cpu(t)}, 10)
	initial := func() []float32 {
		net := get(NewNet(cpu(t), "mlp", `{"input_shape": [1, 28, 28], "hidden": [32], "classes": 10}`))(t)
		defer net.Close()
		noErr(t, net.Initialize(5))
		w := get(net.Param(0))(t)
		defer w.Close()
		return get(w.Float32s())(t)
	}()
	var moved, differs float64
	for i := range one {
		moved = math.Max(moved, math.Abs(float64(one[i]-initial[i])))
		differs = math.Max(differs, math.Abs(float64(one[i]-two[i])))
	}
	if moved < 1e-3 {
		t.Fatalf("training moved the weights by at most %g", moved)
	}
	if differs > 1e-4 {
		t.Fatalf("two replicas end %g away from one (the steps moved the weights by up to %g)", differs, moved)
	}
}
