package disttrain

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// writeCIFAR writes a CIFAR-10 directory of n records per file: record i of
// a file has label i%10 and every byte of its red plane equal to 10*i, its
// green and blue planes 0.
func writeCIFAR(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	names := []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
		"data_batch_5.bin", "test_batch.bin"}
	for _, name := range names {
		var records []byte
		for i := 0; i < n; i++ {
			record := make([]byte, 1+3*32*32)
			record[0] = byte(i % 10)
			for p := 1; p <= 32*32; p++ {
				record[p] = byte(10 * i)
			}
			records = append(records, record...)
		}
		noErr(t, os.WriteFile(filepath.Join(dir, name), records, 0o644))
	}
	return dir
}

// firstBatch returns the labels and pixels of epoch 0's first batch.
func firstBatch(t *testing.T, loader *DataLoader) ([]int32, []float32) {
	t.Helper()
	noErr(t, loader.StartEpoch(0))
	data, labels, ok, err := loader.Next()
	if err != nil || !ok {
		t.Fatalf("first batch: ok=%v err=%v", ok, err)
	}
	defer data.Close()
	defer labels.Close()
	if shape := get(data.Shape())(t); !reflect.DeepEqual(shape, []int64{4, 3, 32, 32}) {
		t.Fatalf("batch shape %v, want [4 3 32 32]", shape)
	}
	return get(labels.Int32s())(t), get(data.Float32s())(t)
}

func TestCIFARLoader(t *testing.T) {
	dir := writeCIFAR(t, 10)
	opts := get(DefaultDataLoaderOptions())(t)
	if opts.RandomCropPadding != 0 || opts.RandomFlip || opts.NumWorkers != 0 {
		t.Fatalf("defaults: no augmentation and an automatic worker count, got %+v", opts)
	}
	opts.BatchSize = 4
	opts.Shuffle = false
	test := get(NewCIFARLoader(dir, "test", 10, &opts))(t)
	defer test.Close()
	if n := get(test.NumSamples())(t); n != 10 {
		t.Fatalf("test samples %d, want 10", n)
	}
	labels, pixels := firstBatch(t, test)
	if !reflect.DeepEqual(labels, []int32{0, 1, 2, 3}) {
		t.Fatalf("labels %v", labels)
	}
	// Record 1's red pixels are 10: (10/255 - 0.4914) / 0.2470 with CIFAR-10's statistics.
	if got, want := pixels[3*32*32], float32((10.0/255-0.4914)/0.2470); got < want-1e-4 || got > want+1e-4 {
		t.Fatalf("record 1's first red pixel %v, want %v", got, want)
	}

	// Augmented, the batches depend on the seed only, not on the worker threads.
	opts.Shuffle = true
	opts.Seed = 5
	opts.RandomCropPadding = 4
	opts.RandomFlip = true
	var first []float32
	for _, workers := range []int64{1, 3} {
		opts.NumWorkers = workers
		train := get(NewCIFARLoader(dir, "train", 10, &opts))(t)
		if n := get(train.NumSamples())(t); n != 50 {
			t.Fatalf("train samples %d, want 50", n)
		}
		_, pixels := firstBatch(t, train)
		noErr(t, train.Close())
		if first == nil {
			first = pixels
		} else if !reflect.DeepEqual(pixels, first) {
			t.Fatalf("%d workers gave another first batch than 1", workers)
		}
	}

	_, err := NewCIFARLoader(dir, "train", 12, nil)
	wantStatus(t, "variant 12", err, StatusInvalidArgument)
	_, err = NewCIFARLoader(t.TempDir(), "train", 10, nil)
	wantStatus(t, "an empty directory", err, StatusNotFound)
	opts.NumWorkers = -1
	_, err = NewCIFARLoader(dir, "train", 10, &opts)
	wantStatus(t, "num_workers -1", err, StatusInvalidArgument)
}
