package disttrain

import (
	"runtime"

	"github.com/disttrain/disttrain/bindings/go/internal/capi"
)

// UpdatePlacement says where the optimizer runs.
type UpdatePlacement int32

// Placements; the zero value is the library's choice.
const (
	UpdateAuto     UpdatePlacement = iota // on the store when it runs optimizers (all but "dist_nccl") and no loss scaling is needed, else locally
	UpdateOnStore                         // the kvstore runs the optimizer
	UpdateOnWorker                        // workers do, the store only sums
)

// SyncMode is how a step keeps the workers of a distributed job together:
// SINGA DistOpt's four steps (dt_sync_mode; see dt_c_api.h for each one's
// rules and errors).
type SyncMode int32

// Sync modes; the zero value is SyncFull.
const (
	SyncFull    SyncMode = iota // backward_and_update: gradients reduced in full
	SyncHalf                    // backward_and_update_half: gradients travel as float16
	SyncPartial                 // backward_and_partial_update: local updates, one rotating chunk of weights averaged per step
	SyncSparse                  // backward_and_sparse_update: only significant gradient elements travel
)

// TrainerOptions mirrors dt_trainer_options; the zero value is the default.
type TrainerOptions struct {
	Update UpdatePlacement
	// ExtraContexts replicate the net for data parallelism in this process;
	// TrainBatch splits each batch across the net's context and these.
	ExtraContexts []*Context
	// Sync is the step's sync mode; the fields after it belong to one mode
	// each (setting one for another mode is an invalid argument), 0 meaning
	// SINGA's default.
	Sync SyncMode
	// PartialChunkElements (SyncPartial): the chunk size; 0: 2097152.
	PartialChunkElements uint64
	// SparseTopK (SyncSparse): SparseValue is the fraction of each gradient
	// sent rather than the magnitude an element must reach.
	SparseTopK bool
	// SparseValue (SyncSparse): the threshold or fraction; 0: 0.05.
	SparseValue float64
	// SparseNoAccumulation (SyncSparse): drop what was not sent instead of
	// adding it to the next step's gradient.
	SparseNoAccumulation bool
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Trainer is net + optimizer + kvstore (Gluon's Trainer). It keeps the
// net, the kvstore and the contexts alive and copies the optimizer.
type Trainer struct {
	h     handle
	net   *Net
	kv    *KVStore
	extra []*Context
}

func (t *Trainer) finalize() { t.h.finalize() }

func (t *Trainer) handle() *handle {
	if t == nil {
		return nil
	}
	return &t.h
}

// NewTrainer creates a trainer; kv nil trains without a kvstore, opts nil
// means the defaults. The net's current weights are the initial values
// everywhere, so initialise or load them first. The trainer switches the
// net's loss to sum reduction for good (Step divides by the batch size).
func NewTrainer(net *Net, opt *Optimizer, kv *KVStore, opts *TrainerOptions) (*Trainer, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &TrainerOptions{}
	}
	update := int32(-1)
	switch opts.Update {
	case UpdateOnStore:
		update = 1
	case UpdateOnWorker:
		update = 0
	}
	np, err := net.handle().acquire("NewTrainer", "Net")
	if err != nil {
		return nil, err
	}
	defer net.h.release()
	op, err := opt.handle().acquire("NewTrainer", "Optimizer")
	if err != nil {
		return nil, err
	}
	defer opt.h.release()
	var kp uintptr
	if kv != nil {
		if kp, err = kv.h.acquire("NewTrainer", "KVStore"); err != nil {
			return nil, err
		}
		defer kv.h.release()
	}
	extra := make([]uintptr, len(opts.ExtraContexts))
	for i, c := range opts.ExtraContexts {
		p, err := c.handle().acquire("NewTrainer", "Context")
		if err != nil {
			return nil, err // the deferred releases cover contexts before i
		}
		defer c.h.release()
		extra[i] = p
	}
	var out uintptr
	if err := check(capi.Dt_go_trainer_create(&out, np, op, kp, int(update), first(extra), int64(len(extra)),
		int(opts.Sync), int64(opts.PartialChunkElements), boolInt(opts.SparseTopK), opts.SparseValue,
		boolInt(opts.SparseNoAccumulation))); err != nil {
		return nil, err
	}
	t := &Trainer{net: net, kv: kv, extra: append([]*Context(nil), opts.ExtraContexts...)}
	t.h.init("Trainer", out, capi.Dt_trainer_free)
	runtime.SetFinalizer(t, (*Trainer).finalize)
	return t, nil
}

// Close frees the trainer. Idempotent.
func (t *Trainer) Close() error {
	if t == nil {
		return nil
	}
	t.h.close()
	runtime.SetFinalizer(t, nil)
	return nil
}

// Step reduces the gradients of the last Net.Backward through the kvstore
// and updates the weights, rescaling gradients by 1/batchSize.
func (t *Trainer) Step(batchSize int64) error {
	p, err := t.handle().acquire("Trainer.Step", "Trainer")
	if err != nil {
		return err
	}
	defer t.h.release()
	return check(capi.Dt_trainer_step(p, batchSize))
}

// TrainBatch runs forward, backward and step on one batch, returning the
// mean loss and the number of correctly classified samples.
func (t *Trainer) TrainBatch(data, labels *NDArray) (loss float64, correct int64, err error) {
	p, err := t.handle().acquire("Trainer.TrainBatch", "Trainer")
	if err != nil {
		return 0, 0, err
	}
	defer t.h.release()
	dp, lp, err := acquire2("Trainer.TrainBatch", data, labels)
	if err != nil {
		return 0, 0, err
	}
	defer data.h.release()
	defer labels.h.release()
	if err := check(capi.Dt_trainer_train_batch(&loss, &correct, p, dp, lp)); err != nil {
		return 0, 0, err
	}
	return loss, correct, nil
}

// Evaluate runs one epoch of loader in inference mode and returns the
// accuracy and the mean loss.
func (t *Trainer) Evaluate(loader *DataLoader) (accuracy, loss float64, err error) {
	p, err := t.handle().acquire("Trainer.Evaluate", "Trainer")
	if err != nil {
		return 0, 0, err
	}
	defer t.h.release()
	lp, err := loader.handle().acquire("Trainer.Evaluate", "DataLoader")
	if err != nil {
		return 0, 0, err
	}
	defer loader.h.release()
	if err := check(capi.Dt_trainer_evaluate(&accuracy, &loss, p, lp)); err != nil {
		return 0, 0, err
	}
	return accuracy, loss, nil
}

// SetLearningRate changes the learning rate from the next step on.
func (t *Trainer) SetLearningRate(lr float64) error {
	p, err := t.handle().acquire("Trainer.SetLearningRate", "Trainer")
	if err != nil {
		return err
	}
	defer t.h.release()
	return check(capi.Dt_trainer_set_learning_rate(p, lr))
}

// LearningRate is the current learning rate.
func (t *Trainer) LearningRate() (float64, error) {
	p, err := t.handle().acquire("Trainer.LearningRate", "Trainer")
	if err != nil {
		return 0, err
	}
	defer t.h.release()
	var lr float64
	if err := check(capi.Dt_trainer_learning_rate(&lr, p)); err != nil {
		return 0, err
	}
	return lr, nil
}

// SaveCheckpoint writes weights, optimizer state and progress to path.
func (t *Trainer) SaveCheckpoint(path string) error {
	p, err := t.handle().acquire("Trainer.SaveCheckpoint", "Trainer")
	if err != nil {
		return err
	}
	defer t.h.release()
	return check(capi.Dt_trainer_save_checkpoint(p, path))
}

// LoadCheckpoint resumes from a checkpoint; allowed before the first step
// only (StatusBadState after).
func (t *Trainer) LoadCheckpoint(path string) error {
	p, err := t.handle().acquire("Trainer.LoadCheckpoint", "Trainer")
	if err != nil {
		return err
	}
	defer t.h.release()
	return check(capi.Dt_trainer_load_checkpoint(p, path))
}

// Progress selects how Fit reports each epoch.
type Progress int32

// Progress styles; the zero value is the library's choice.
const (
	ProgressAuto   Progress = iota // a bar on a TTY, plain lines otherwise
	ProgressPlain                  // plain lines
	ProgressBar                    // always the bar
	ProgressSilent                 // nothing
)

// FitOptions mirrors dt_fit_options; the zero value is the default.
type FitOptions struct {
	Epochs         int    // train up to this epoch count; 0: the library default (5)
	MetricsPath    string // JSON lines, one per epoch; "": none
	CheckpointPath string // written after every epoch; "": none
	Progress       Progress
}

// Fit trains from the trainer's current epoch up to opts.Epochs,
// evaluating on test (may be nil) after every epoch.
func (t *Trainer) Fit(train, test *DataLoader, opts *FitOptions) error {
	if opts == nil {
		opts = &FitOptions{}
	}
	progress := int32(-1)
	switch opts.Progress {
	case ProgressPlain:
		progress = 0
	case ProgressBar:
		progress = 1
	case ProgressSilent:
		progress = 2
	}
	p, err := t.handle().acquire("Trainer.Fit", "Trainer")
	if err != nil {
		return err
	}
	defer t.h.release()
	trp, err := train.handle().acquire("Trainer.Fit", "DataLoader")
	if err != nil {
		return err
	}
	defer train.h.release()
	var tep uintptr
	if test != nil {
		if tep, err = test.h.acquire("Trainer.Fit", "DataLoader"); err != nil {
			return err
		}
		defer test.h.release()
	}
	return check(capi.Dt_go_trainer_fit(p, trp, tep, opts.Epochs, opts.MetricsPath, opts.CheckpointPath, int(progress)))
}

// Epoch is the number of epochs completed.
func (t *Trainer) Epoch() (int, error) {
	p, err := t.handle().acquire("Trainer.Epoch", "Trainer")
	if err != nil {
		return 0, err
	}
	defer t.h.release()
	var e int32
	if err := check(capi.Dt_trainer_epoch(&e, p)); err != nil {
		return 0, err
	}
	return int(e), nil
}

// Steps is the number of steps taken (by Fit, Step and TrainBatch; those a
// loaded checkpoint or a hand-over brought included).
func (t *Trainer) Steps() (int64, error) {
	p, err := t.handle().acquire("Trainer.Steps", "Trainer")
	if err != nil {
		return 0, err
	}
	defer t.h.release()
	var n int64
	if err := check(capi.Dt_trainer_steps(&n, p)); err != nil {
		return 0, err
	}
	return n, nil
}

// AdmitJoiningWorkers is what Fit does before each batch, for a loop of
// one's own: letting a worker into an "allreduce" job under
// DT_WORKER_LOSS=continue. Every worker calls it before each batch. true on
// the workers in the job, alike on every one, when a worker that joined in
// a departed one's place was let in just now and handed this trainer's
// state; on the joined worker the first call waits to be let in, takes
// that state and returns true: its loop goes on from Steps. false otherwise
// (see dt_trainer_admit_joining_workers).
func (t *Trainer) AdmitJoiningWorkers() (bool, error) {
	p, err := t.handle().acquire("Trainer.AdmitJoiningWorkers", "Trainer")
	if err != nil {
		return false, err
	}
	defer t.h.release()
	var admitted int32
	if err := check(capi.Dt_trainer_admit_joining_workers(&admitted, p)); err != nil {
		return false, err
	}
	return admitted != 0, nil
}

// SkippedSteps is the number of steps whose update was skipped because
// float16 gradients overflowed (see Net.SetComputeDType); 0 without loss
// scaling.
func (t *Trainer) SkippedSteps() (int64, error) {
	p, err := t.handle().acquire("Trainer.SkippedSteps", "Trainer")
	if err != nil {
		return 0, err
	}
	defer t.h.release()
	var n int64
	if err := check(capi.Dt_trainer_skipped_steps(&n, p)); err != nil {
		return 0, err
	}
	return n, nil
}
