package disttrain

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fashionMNIST is the dataset directory (Debian's dataset-fashion-mnist).
func fashionMNIST(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("DISTTRAIN_FASHION_MNIST")
	if dir == "" {
		dir = "/usr/share/datasets/fashion-mnist"
	}
	if _, err := os.Stat(filepath.Join(dir, "t10k-images-idx3-ubyte.gz")); err != nil {
		t.Fatalf("Fashion-MNIST not found in %s (set DISTTRAIN_FASHION_MNIST): %v", dir, err)
	}
	return dir
}

// fashionMNISTTrain is the Fashion-MNIST training set in shuffled batches
// of batch (seed 3), started at epoch 0 and closed when the test ends.
func fashionMNISTTrain(t *testing.T, batch int64) *DataLoader {
	t.Helper()
	opts := get(DefaultDataLoaderOptions())(t)
	opts.BatchSize = batch
	opts.Seed = 3
	loader := get(NewMNISTLoader(fashionMNIST(t), "train", &opts))(t)
	t.Cleanup(func() { loader.Close() })
	noErr(t, loader.StartEpoch(0))
	return loader
}

// wantStatus fails unless err is an *Error of the given status.
func wantStatus(t *testing.T, what string, err error, want Status) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: want a *disttrain.Error with status %q, got %v", what, want, err)
	}
	if e.Status != want {
		t.Fatalf("%s: want status %q, got %q (%v)", what, want, e.Status, err)
	}
	if e.Message == "" {
		t.Fatalf("%s: the error has no message", what)
	}
}

// get turns a (value, error) result into the value, failing the test on an
// error: get(NewOptimizer("sgd"))(t).
func get[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func cpu(t *testing.T) *Context {
	t.Helper()
	c := get(CPU())(t)
	t.Cleanup(func() { c.Close() })
	return c
}
