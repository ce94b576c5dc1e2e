package disttrain

import (
	"math"
	"testing"
)

// A short local run: an MLP on the first Fashion-MNIST batches, through a
// local kvstore; the mean loss of the last steps must be well below that of
// the first ones.
func TestLocalTrainingLossDecreases(t *testing.T) {
	ctx := cpu(t)
	net := get(NewNet(ctx, "mlp", `{"input_shape": [1, 28, 28], "hidden": [64], "classes": 10}`))(t)
	defer net.Close()
	if err := net.Initialize(1); err != nil {
		t.Fatal(err)
	}
	opt := get(NewOptimizer("sgd"))(t)
	defer opt.Close()
	noErr(t, opt.SetFloat("learning_rate", 0.1))
	noErr(t, opt.SetFloat("momentum", 0.9))
	kv := get(NewKVStore("local", nil))(t)
	defer kv.Close()
	tr := get(NewTrainer(net, opt, kv, nil))(t)
	defer tr.Close()
	loader := fashionMNISTTrain(t, 64)

	const steps, window = 60, 10
	var losses []float64
	for step := 0; step < steps; step++ {
		data, labels, ok, err := loader.Next()
		if err != nil || !ok {
			t.Fatalf("batch %d: ok=%v err=%v", step, ok, err)
		}
		if step%2 == 0 {
			// TrainBatch: forward, backward and step in one call.
			loss, correct, err := tr.TrainBatch(data, labels)
			if err != nil {
				t.Fatal(err)
			}
			if correct < 0 || correct > 64 {
				t.Fatalf("correct %d of 64", correct)
			}
			losses = append(losses, loss)
		} else {
			// The same through Net.Forward/Backward and Trainer.Step; the
			// trainer set the loss to sum reduction, so divide by the batch.
			if err := net.Forward([]*NDArray{data}, true); err != nil {
				t.Fatal(err)
			}
			sum, err := net.Backward(labels)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Step(64); err != nil {
				t.Fatal(err)
			}
			losses = append(losses, sum/64)
		}
		data.Close()
		labels.Close()
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				t.Fatalf("loss %v", x)
			}
			s += x
		}
		return s / float64(len(xs))
	}
	first, last := mean(losses[:window]), mean(losses[steps-window:])
	t.Logf("mean loss: first %d steps %.4f, last %d steps %.4f", window, first, window, last)
	if !(last < 0.75*first) {
		t.Fatalf("loss did not decrease: %.4f -> %.4f", first, last)
	}

	test := get(NewMNISTLoader(fashionMNIST(t), "t10k", nil))(t)
	defer test.Close()
	acc, _, err := tr.Evaluate(test)
	if err != nil {
		t.Fatal(err)
	}
	if acc < 0.5 {
		t.Fatalf("test accuracy %.3f after %d steps", acc, steps)
	}
	if lr := get(tr.LearningRate())(t); lr != 0.1 {
		t.Fatalf("learning rate %v", lr)
	}
	if n := get(tr.Steps())(t); n != steps {
		t.Fatalf("%d steps counted, %d taken", n, steps)
	}
	// A local store lets nobody into the job: a loop of one's own goes on.
	if admitted := get(tr.AdmitJoiningWorkers())(t); admitted {
		t.Fatal("a local store let a worker in")
	}
	// float32 has no loss scaling: no step is ever skipped.
	if n := get(tr.SkippedSteps())(t); n != 0 {
		t.Fatalf("%d of %d float32 steps skipped", n, steps)
	}
	if s := get(net.LossScale())(t); s != 1 {
		t.Fatalf("loss scale %v after float32 steps", s)
	}
	wantStatus(t, "SetComputeDType after a forward", net.SetComputeDType(Float32), StatusBadState)
}

// The sync modes reach the library with their fields, and every combination
// it refuses comes back as an error of the right status; the modes train in
// the library's own 2-worker tests.
func TestSyncModesAreCheckedAgainstTheStore(t *testing.T) {
	ctx := cpu(t)
	net := get(NewNet(ctx, "mlp", `{"input_shape": [1, 28, 28], "hidden": [16], "classes": 10}`))(t)
	defer net.Close()
	noErr(t, net.Initialize(1))
	opt := get(NewOptimizer("sgd"))(t)
	defer opt.Close()
	kv := get(NewKVStore("local", nil))(t)
	defer kv.Close()

	full := get(NewTrainer(net, opt, kv, &TrainerOptions{Sync: SyncFull}))(t)
	noErr(t, full.Close())
	for _, c := range []struct {
		what string
		kv   *KVStore
		opts TrainerOptions
		want Status
	}{
		{"partial without a kvstore", nil, TrainerOptions{Sync: SyncPartial}, StatusInvalidArgument},
		{"partial on a local kvstore", kv, TrainerOptions{Sync: SyncPartial, PartialChunkElements: 1000}, StatusNotSupported},
		{"half on a local kvstore", kv, TrainerOptions{Sync: SyncHalf}, StatusNotSupported},
		{"sparse top-K above 1", kv, TrainerOptions{Sync: SyncSparse, SparseTopK: true, SparseValue: 1.5}, StatusInvalidArgument},
		{"a partial field in full mode", kv, TrainerOptions{PartialChunkElements: 1000}, StatusInvalidArgument},
		{"a sparse field in partial mode", kv, TrainerOptions{Sync: SyncPartial, SparseNoAccumulation: true}, StatusInvalidArgument},
		{"an unknown mode", kv, TrainerOptions{Sync: SyncMode(9)}, StatusInvalidArgument},
	} {
		opts := c.opts
		tr, err := NewTrainer(net, opt, c.kv, &opts)
		if err == nil {
			tr.Close()
		}
		wantStatus(t, c.what, err, c.want)
	}
}
