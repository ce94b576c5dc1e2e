package disttrain

import (
	"runtime"

	"github.com/disttrain/disttrain/bindings/go/internal/capi"
)

// LastBatch says what happens to an incomplete last batch.
type LastBatch int32

// Last-batch policies, as dt_last_batch.
const (
	LastBatchKeep     LastBatch = 0 // a smaller last batch
	LastBatchDiscard  LastBatch = 1 // drop it
	LastBatchRollover LastBatch = 2 // carry the leftovers into the next epoch
)

// DataLoaderOptions mirrors dt_data_loader_options. Start from
// DefaultDataLoaderOptions: every field is passed as set (zero is a valid
// value for several of them). The per-channel statistics and the random
// resized crop keep the library's defaults (a CIFAR loader normalises with
// CIFAR-10's statistics, an image folder with ImageNet's).
type DataLoaderOptions struct {
	BatchSize int64
	LastBatch LastBatch
	Shuffle   bool   // a new order every epoch
	Seed      uint64 // the order, and the augmentation, depend on it (and the epoch) only
	NumParts  int    // split the data into parts (one per worker)
	PartIndex int    // this worker's part
	Prefetch  int    // batches prepared ahead (>= 1)
	Mean, Std float32
	// Augmentation of (C, H, W) images: pad every side with this many zero
	// pixels and crop back at a random offset (4 for CIFAR); 0: none.
	RandomCropPadding int64
	RandomFlip        bool // mirror left-right with probability 1/2
	// Threads that decode and augment batches; 0: the library's choice.
	// The batches do not depend on it.
	NumWorkers int64
}

// DefaultDataLoaderOptions returns the library's defaults (batch 64,
// shuffled, one part, Fashion-MNIST's normalisation).
func DefaultDataLoaderOptions() (DataLoaderOptions, error) {
	if err := CheckVersion(); err != nil {
		return DataLoaderOptions{}, err
	}
	c := capi.NewDt_data_loader_options()
	defer capi.DeleteDt_data_loader_options(c)
	if err := check(capi.Dt_data_loader_options_init(c)); err != nil {
		return DataLoaderOptions{}, err
	}
	return DataLoaderOptions{
		BatchSize: c.GetBatch_size(),
		LastBatch: LastBatch(c.GetLast_batch()),
		Shuffle:   c.GetShuffle() != 0,
		Seed:      c.GetSeed(),
		NumParts:  c.GetNum_parts(),
		PartIndex: c.GetPart_index(),
		Prefetch:  c.GetPrefetch(),
		Mean:      c.GetMean(),
		Std:       c.GetStd(),

		RandomCropPadding: c.GetRandom_crop_padding(),
		RandomFlip:        c.GetRandom_flip() != 0,
		NumWorkers:        c.GetNum_workers(),
	}, nil
}

func withLoaderOptions(o *DataLoaderOptions, call func(capi.Dt_data_loader_options) error) error {
	if o == nil {
		return call(nil)
	}
	c := capi.NewDt_data_loader_options()
	defer capi.DeleteDt_data_loader_options(c)
	if err := check(capi.Dt_data_loader_options_init(c)); err != nil {
		return err
	}
	c.SetBatch_size(o.BatchSize)
	c.SetLast_batch(capi.Enum_SS_dt_last_batch(o.LastBatch))
	shuffle := 0
	if o.Shuffle {
		shuffle = 1
	}
	c.SetShuffle(shuffle)
	c.SetSeed(o.Seed)
	c.SetNum_parts(o.NumParts)
	c.SetPart_index(o.PartIndex)
	c.SetPrefetch(o.Prefetch)
	c.SetMean(o.Mean)
	c.SetStd(o.Std)
	c.SetRandom_crop_padding(o.RandomCropPadding)
	flip := 0
	if o.RandomFlip {
		flip = 1
	}
	c.SetRandom_flip(flip)
	c.SetNum_workers(o.NumWorkers)
	return call(c)
}

// DataLoader reads an MNIST-format (IDX), CIFAR or image-folder dataset in
// batches.
type DataLoader struct {
	h handle
}

func (l *DataLoader) finalize() { l.h.finalize() }

func (l *DataLoader) handle() *handle {
	if l == nil {
		return nil
	}
	return &l.h
}

func newDataLoader(ptr uintptr) *DataLoader {
	l := &DataLoader{}
	l.h.init("DataLoader", ptr, capi.Dt_data_loader_free)
	runtime.SetFinalizer(l, (*DataLoader).finalize)
	return l
}

// NewDataLoader loads an IDX image file and its label file (plain or
// gzip); opts nil means the defaults. Missing files are StatusNotFound,
// malformed ones StatusIO.
func NewDataLoader(imagesPath, labelsPath string, opts *DataLoaderOptions) (*DataLoader, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	var out uintptr
	err := withLoaderOptions(opts, func(c capi.Dt_data_loader_options) error {
		return check(capi.Dt_data_loader_create(&out, imagesPath, labelsPath, c))
	})
	if err != nil {
		return nil, err
	}
	return newDataLoader(out), nil
}

// NewMNISTLoader opens the standard file names in dir ("" for
// /usr/share/datasets/fashion-mnist) for split "train" or "t10k".
func NewMNISTLoader(dir, split string, opts *DataLoaderOptions) (*DataLoader, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	var out uintptr
	err := withLoaderOptions(opts, func(c capi.Dt_data_loader_options) error {
		return check(capi.Dt_data_loader_create_mnist(&out, dir, split, c))
	})
	if err != nil {
		return nil, err
	}
	return newDataLoader(out), nil
}

// NewCIFARLoader reads the CIFAR binary format in dir (or in the folder its
// archive unpacks to there): variant 10 reads data_batch_1.bin ...
// data_batch_5.bin for split "train" and test_batch.bin for "test";
// variant 100 train.bin or test.bin. Batches are (B, 3, 32, 32). A missing
// file is StatusNotFound, a malformed one StatusIO naming the file and
// offset. opts nil means the defaults.
func NewCIFARLoader(dir, split string, variant int, opts *DataLoaderOptions) (*DataLoader, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	var out uintptr
	err := withLoaderOptions(opts, func(c capi.Dt_data_loader_options) error {
		return check(capi.Dt_data_loader_create_cifar(&out, dir, split, variant, c))
	})
	if err != nil {
		return nil, err
	}
	return newDataLoader(out), nil
}

// NewImageFolderLoader reads dir/<class>/<image> (JPEG or PNG), each image
// resized to height x width: batches are (B, 3, height, width), classes
// numbered in name order. opts nil means the defaults.
func NewImageFolderLoader(dir string, height, width int64, opts *DataLoaderOptions) (*DataLoader, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	var out uintptr
	err := withLoaderOptions(opts, func(c capi.Dt_data_loader_options) error {
		return check(capi.Dt_data_loader_create_image_folder(&out, dir, height, width, c))
	})
	if err != nil {
		return nil, err
	}
	return newDataLoader(out), nil
}

// NewRecordIOLoader reads an MXNet RecordIO image set (the .rec and .idx
// files im2rec writes, what ImageRecordIter reads): idxPath "" uses the .idx
// beside recPath when there is one, else walks the .rec. Each record's image
// (JPEG or PNG) is resized to height x width: batches are (B, 3, height,
// width), the class the record's (first) label. A malformed file is
// StatusIO naming it and the byte offset. opts nil means the defaults.
func NewRecordIOLoader(recPath, idxPath string, height, width int64, opts *DataLoaderOptions) (*DataLoader, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	var out uintptr
	err := withLoaderOptions(opts, func(c capi.Dt_data_loader_options) error {
		return check(capi.Dt_data_loader_create_recordio(&out, recPath, idxPath, height, width, c))
	})
	if err != nil {
		return nil, err
	}
	return newDataLoader(out), nil
}

// Close frees the loader; batches taken from it stay valid. Idempotent.
func (l *DataLoader) Close() error {
	if l == nil {
		return nil
	}
	l.h.close()
	runtime.SetFinalizer(l, nil)
	return nil
}

// NumSamples is the number of samples in this loader's part.
func (l *DataLoader) NumSamples() (int, error) {
	p, err := l.handle().acquire("DataLoader.NumSamples", "DataLoader")
	if err != nil {
		return 0, err
	}
	defer l.h.release()
	var n uint64
	if err := check(capi.Dt_data_loader_num_samples(&n, p)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// NumBatches is the number of batches per epoch.
func (l *DataLoader) NumBatches() (int, error) {
	p, err := l.handle().acquire("DataLoader.NumBatches", "DataLoader")
	if err != nil {
		return 0, err
	}
	defer l.h.release()
	var n uint64
	if err := check(capi.Dt_data_loader_num_batches(&n, p)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// StartEpoch starts epoch epoch (its order depends on seed and epoch).
func (l *DataLoader) StartEpoch(epoch int) error {
	p, err := l.handle().acquire("DataLoader.StartEpoch", "DataLoader")
	if err != nil {
		return err
	}
	defer l.h.release()
	return check(capi.Dt_data_loader_start_epoch(p, epoch))
}

// Next returns the epoch's next batch: float32 (B, 1, 28, 28) data and int32
// (B) labels, which the caller closes; ok is false at the end of the epoch.
// Before the first StartEpoch it is StatusBadState.
func (l *DataLoader) Next() (data, labels *NDArray, ok bool, err error) {
	p, err := l.handle().acquire("DataLoader.Next", "DataLoader")
	if err != nil {
		return nil, nil, false, err
	}
	defer l.h.release()
	var d, lb uintptr
	var has int32
	if err := check(capi.Dt_data_loader_next(&d, &lb, &has, p)); err != nil {
		return nil, nil, false, err
	}
	if has == 0 {
		return nil, nil, false, nil
	}
	return newNDArray(d, nil, Float32), newNDArray(lb, nil, Int32), true, nil
}
