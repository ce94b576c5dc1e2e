package disttrain

import (
	"runtime"
	"time"
	"unsafe"

	"github.com/disttrain/disttrain/bindings/go/internal/capi"
)

// KVStoreOptions mirrors dt_kvstore_options: the deadlines and bounds of the
// distributed kvstores and of nodes, and optionally the job layout. A zero
// field keeps the library's default, which the environment may supply
// (DMLC_* and the launchers' variables, see docs/launching.md); every wait
// has a deadline, none is infinite.
type KVStoreOptions struct {
	StartupTimeout     time.Duration // registering with the scheduler (default 60 s)
	RequestTimeout     time.Duration // one push, pull or barrier (default 120 s)
	HeartbeatInterval  time.Duration // default 1 s
	HeartbeatTimeout   time.Duration // a node silent this long is lost (default 5 s)
	ShutdownTimeout    time.Duration // Close waiting for peers (default 10 s)
	BigArrayBoundBytes uint64        // larger tensors are split across all servers

	// The job layout; a field set here wins over every environment source.
	// Role and WorkerID are pointers because their zero values are valid
	// settings (worker, rank 0); nil leaves them to the environment.
	Role          *Role
	WorkerID      *int
	NumServers    int
	NumWorkers    int
	SchedulerHost string
	SchedulerPort int
}

// DefaultKVStoreOptions returns the library's default deadlines and bounds,
// environment included, with the layout left to the environment.
func DefaultKVStoreOptions() (KVStoreOptions, error) {
	if err := CheckVersion(); err != nil {
		return KVStoreOptions{}, err
	}
	c := capi.NewDt_kvstore_options()
	defer capi.DeleteDt_kvstore_options(c)
	if err := check(capi.Dt_kvstore_options_init(c)); err != nil {
		return KVStoreOptions{}, err
	}
	return KVStoreOptions{
		StartupTimeout:     seconds(c.GetStartup_timeout_s()),
		RequestTimeout:     seconds(c.GetRequest_timeout_s()),
		HeartbeatInterval:  seconds(c.GetHeartbeat_interval_s()),
		HeartbeatTimeout:   seconds(c.GetHeartbeat_timeout_s()),
		ShutdownTimeout:    seconds(c.GetShutdown_timeout_s()),
		BigArrayBoundBytes: c.GetBigarray_bound_bytes(),
	}, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// withKVStoreOptions builds the C struct for one call (nil: NULL, the
// defaults) and frees it after; the scheduler host travels beside it, see
// dt_go_kvstore_create_ex in go.i.
func withKVStoreOptions(o *KVStoreOptions, call func(c capi.Dt_kvstore_options, schedulerHost string) error) error {
	if o == nil {
		return call(nil, "")
	}
	c := capi.NewDt_kvstore_options()
	defer capi.DeleteDt_kvstore_options(c)
	if err := check(capi.Dt_kvstore_options_init(c)); err != nil {
		return err
	}
	set := func(d time.Duration, f func(float64)) {
		if d != 0 {
			f(d.Seconds())
		}
	}
	set(o.StartupTimeout, c.SetStartup_timeout_s)
	set(o.RequestTimeout, c.SetRequest_timeout_s)
	set(o.HeartbeatInterval, c.SetHeartbeat_interval_s)
	set(o.HeartbeatTimeout, c.SetHeartbeat_timeout_s)
	set(o.ShutdownTimeout, c.SetShutdown_timeout_s)
	if o.BigArrayBoundBytes != 0 {
		c.SetBigarray_bound_bytes(o.BigArrayBoundBytes)
	}
	if o.Role != nil {
		c.SetRole(int(*o.Role))
	}
	if o.WorkerID != nil {
		c.SetWorker_id(*o.WorkerID)
	}
	if o.NumServers != 0 {
		c.SetNum_servers(o.NumServers)
	}
	if o.NumWorkers != 0 {
		c.SetNum_workers(o.NumWorkers)
	}
	if o.SchedulerPort != 0 {
		c.SetScheduler_port(o.SchedulerPort)
	}
	return call(c, o.SchedulerHost)
}

// KVStore is a keyed tensor store: values pushed under a key are summed,
// pulls copy the key's value out. Types: "local", "device", and the
// parameter-server types "dist_sync", "dist_async" (...), which join the job
// described by the DMLC_* environment.
type KVStore struct {
	h handle
}

func (kv *KVStore) finalize() { kv.h.finalize() }

func (kv *KVStore) handle() *handle {
	if kv == nil {
		return nil
	}
	return &kv.h
}

// NewKVStore creates a kvstore of type typ; opts nil means the defaults.
// An unknown type is StatusInvalidArgument (or StatusNotSupported for a
// type not built in); a distributed store that cannot join its job within
// StartupTimeout is StatusTimedOut.
func NewKVStore(typ string, opts *KVStoreOptions) (*KVStore, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	var out uintptr
	err := withKVStoreOptions(opts, func(c capi.Dt_kvstore_options, host string) error {
		return check(capi.Dt_go_kvstore_create_ex(&out, typ, c, host))
	})
	if err != nil {
		return nil, err
	}
	kv := &KVStore{}
	kv.h.init("KVStore", out, capi.Dt_kvstore_free)
	runtime.SetFinalizer(kv, (*KVStore).finalize)
	return kv, nil
}

// Close frees the store; a distributed store leaves its job, waiting at
// most ShutdownTimeout for its peers. Idempotent.
func (kv *KVStore) Close() error {
	if kv == nil {
		return nil
	}
	kv.h.close()
	runtime.SetFinalizer(kv, nil)
	return nil
}

// Type is the store's type name.
func (kv *KVStore) Type() (string, error) {
	p, err := kv.handle().acquire("KVStore.Type", "KVStore")
	if err != nil {
		return "", err
	}
	defer kv.h.release()
	var t string
	if err := check(capi.Dt_kvstore_type(&t, p)); err != nil {
		return "", err
	}
	return t, nil
}

// Rank is this worker's rank in the job (0 for in-process stores).
func (kv *KVStore) Rank() (int, error) {
	p, err := kv.handle().acquire("KVStore.Rank", "KVStore")
	if err != nil {
		return 0, err
	}
	defer kv.h.release()
	var r int32
	if err := check(capi.Dt_kvstore_rank(&r, p)); err != nil {
		return 0, err
	}
	return int(r), nil
}

// NumWorkers is the number of workers in the job (1 for in-process stores).
func (kv *KVStore) NumWorkers() (int, error) {
	p, err := kv.handle().acquire("KVStore.NumWorkers", "KVStore")
	if err != nil {
		return 0, err
	}
	defer kv.h.release()
	var n int32
	if err := check(capi.Dt_kvstore_num_workers(&n, p)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// JoinedRunningJob says whether this worker joined a running job in the place
// of one the job lost (DT_WORKER_LOSS=continue, e.g. started again by dtrun
// --worker-loss continue --max-restarts N), and how many dist_sync rounds the
// job had done on every key before it joined: its pushes count from
// roundsBefore+1, so a training loop of its own goes on from that step.
// false and 0 for a worker that started with the job and the other stores.
func (kv *KVStore) JoinedRunningJob() (joined bool, roundsBefore int64, err error) {
	p, err := kv.handle().acquire("KVStore.JoinedRunningJob", "KVStore")
	if err != nil {
		return false, 0, err
	}
	defer kv.h.release()
	var j int32
	if err := check(capi.Dt_kvstore_joined_running_job(&j, &roundsBefore, p)); err != nil {
		return false, 0, err
	}
	return j != 0, roundsBefore, nil
}

// AdmitJoiningWorkers lets a worker into an "allreduce" job from a
// training loop of one's own (DT_WORKER_LOSS=continue;
// Trainer.AdmitJoiningWorkers does it all for a trainer). Every worker in
// the job calls it at the same point of its loop, before each step; about
// every 0.1 s of steps it is one small all-reduce. true, alike on every
// worker, when a worker that joined in a departed one's place was let in
// just now: then each calls HandOverState with its state before its next
// push. false on the other stores.
func (kv *KVStore) AdmitJoiningWorkers() (bool, error) {
	p, err := kv.handle().acquire("KVStore.AdmitJoiningWorkers", "KVStore")
	if err != nil {
		return false, err
	}
	defer kv.h.release()
	var admitted int32
	if err := check(capi.Dt_kvstore_admit_joining_workers(&admitted, p)); err != nil {
		return false, err
	}
	return admitted != 0, nil
}

// HandOverState is the hand-over after AdmitJoiningWorkers: a worker in the
// job passes its state and gets nil back. A worker that joined
// (JoinedRunningJob) calls it once, before anything else that communicates
// (with nil): it waits until the job lets it in and returns the state the
// first worker in the job sent. A *Failure NotSupported on the stores that
// let nobody in this way; BadState on a worker in the job when nobody was
// let in (the store goes on); TimedOut, Closed or PeerLost on a joined
// worker that was not let in (see dt_kvstore_hand_over_state).
func (kv *KVStore) HandOverState(state []byte) ([]byte, error) {
	p, err := kv.handle().acquire("KVStore.HandOverState", "KVStore")
	if err != nil {
		return nil, err
	}
	defer kv.h.release()
	var src unsafe.Pointer
	if len(state) > 0 {
		src = unsafe.Pointer(&state[0])
	}
	var n uint64
	if err := check(capi.Dt_kvstore_hand_over_state(&n, p, src, int64(len(state)))); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	handed := make([]byte, n)
	if err := check(capi.Dt_kvstore_handed_state(handed, int64(len(handed)), &n, p)); err != nil {
		return nil, err
	}
	return handed, nil
}

// Traffic is the bytes this process's store has sent and received over the
// network since it was created (0 and 0 for the in-process stores): what
// gradient compression saves.
func (kv *KVStore) Traffic() (sent, received int64, err error) {
	p, err := kv.handle().acquire("KVStore.Traffic", "KVStore")
	if err != nil {
		return 0, 0, err
	}
	defer kv.h.release()
	if err := check(capi.Dt_kvstore_traffic(&sent, &received, p)); err != nil {
		return 0, 0, err
	}
	return sent, received, nil
}

// acquireKV acquires the store and two lists of arrays (b may be nil) for
// one call, after checking that every key has its arrays. release undoes it.
func (kv *KVStore) acquireKV(op string, nkeys int, a, b []*NDArray) (p uintptr, pa, pb *uintptr, err error) {
	if len(a) != nkeys || (b != nil && len(b) != nkeys) {
		return 0, nil, nil, errorf(StatusInvalidArgument, "%s: %d keys but %d values and %d outputs", op, nkeys, len(a), len(b))
	}
	if p, err = kv.handle().acquire(op, "KVStore"); err != nil {
		return 0, nil, nil, err
	}
	if pa, err = acquireArrays(op, a); err != nil {
		kv.h.release()
		return 0, nil, nil, err
	}
	if b != nil {
		if pb, err = acquireArrays(op, b); err != nil {
			releaseArrays(a)
			kv.h.release()
			return 0, nil, nil, err
		}
	}
	return p, pa, pb, nil
}

func (kv *KVStore) release(a, b []*NDArray) {
	releaseArrays(b)
	releaseArrays(a)
	kv.h.release()
}

// Init sets the initial value of each key (keys[i] with values[i]);
// integer keys must be below 2^63.
func (kv *KVStore) Init(keys []uint64, values []*NDArray) error {
	p, pv, _, err := kv.acquireKV("KVStore.Init", len(keys), values, nil)
	if err != nil {
		return err
	}
	defer kv.release(values, nil)
	return check(capi.Dt_kvstore_init(p, first(keys), pv, int64(len(keys))))
}

// Push adds values to their keys; priority orders queued transfers
// (higher first).
func (kv *KVStore) Push(keys []uint64, values []*NDArray, priority int) error {
	p, pv, _, err := kv.acquireKV("KVStore.Push", len(keys), values, nil)
	if err != nil {
		return err
	}
	defer kv.release(values, nil)
	return check(capi.Dt_kvstore_push(p, first(keys), pv, int64(len(keys)), priority))
}

// Pull copies each key's value into outs[i].
func (kv *KVStore) Pull(keys []uint64, outs []*NDArray, priority int) error {
	p, po, _, err := kv.acquireKV("KVStore.Pull", len(keys), outs, nil)
	if err != nil {
		return err
	}
	defer kv.release(outs, nil)
	return check(capi.Dt_kvstore_pull(p, first(keys), po, int64(len(keys)), priority))
}

// PushPull pushes values then pulls into outs (nil: back into values).
func (kv *KVStore) PushPull(keys []uint64, values, outs []*NDArray, priority int) error {
	if outs == nil {
		outs = values
	}
	p, pv, po, err := kv.acquireKV("KVStore.PushPull", len(keys), values, outs)
	if err != nil {
		return err
	}
	defer kv.release(values, outs)
	return check(capi.Dt_kvstore_pushpull(p, first(keys), pv, po, int64(len(keys)), priority))
}

// Broadcast initialises each key from values[i], then pulls into outs
// (nil: into values).
func (kv *KVStore) Broadcast(keys []uint64, values, outs []*NDArray) error {
	if outs == nil {
		outs = values
	}
	p, pv, po, err := kv.acquireKV("KVStore.Broadcast", len(keys), values, outs)
	if err != nil {
		return err
	}
	defer kv.release(values, outs)
	return check(capi.Dt_kvstore_broadcast(p, first(keys), pv, po, int64(len(keys))))
}

// InitStr is Init with string keys, which map to the same 64-bit keys in
// every process.
func (kv *KVStore) InitStr(keys []string, values []*NDArray) error {
	joined, err := joinNames("KVStore.InitStr", keys)
	if err != nil {
		return err
	}
	p, pv, _, err := kv.acquireKV("KVStore.InitStr", len(keys), values, nil)
	if err != nil {
		return err
	}
	defer kv.release(values, nil)
	return check(capi.Dt_kvstore_init_str(p, joined, pv, int64(len(keys))))
}

// PushStr is Push with string keys.
func (kv *KVStore) PushStr(keys []string, values []*NDArray, priority int) error {
	joined, err := joinNames("KVStore.PushStr", keys)
	if err != nil {
		return err
	}
	p, pv, _, err := kv.acquireKV("KVStore.PushStr", len(keys), values, nil)
	if err != nil {
		return err
	}
	defer kv.release(values, nil)
	return check(capi.Dt_kvstore_push_str(p, joined, pv, int64(len(keys)), priority))
}

// PullStr is Pull with string keys.
func (kv *KVStore) PullStr(keys []string, outs []*NDArray, priority int) error {
	joined, err := joinNames("KVStore.PullStr", keys)
	if err != nil {
		return err
	}
	p, po, _, err := kv.acquireKV("KVStore.PullStr", len(keys), outs, nil)
	if err != nil {
		return err
	}
	defer kv.release(outs, nil)
	return check(capi.Dt_kvstore_pull_str(p, joined, po, int64(len(keys)), priority))
}

// PushPullStr is PushPull with string keys (outs nil: into values).
func (kv *KVStore) PushPullStr(keys []string, values, outs []*NDArray, priority int) error {
	if outs == nil {
		outs = values
	}
	joined, err := joinNames("KVStore.PushPullStr", keys)
	if err != nil {
		return err
	}
	p, pv, po, err := kv.acquireKV("KVStore.PushPullStr", len(keys), values, outs)
	if err != nil {
		return err
	}
	defer kv.release(values, outs)
	return check(capi.Dt_kvstore_pushpull_str(p, joined, pv, po, int64(len(keys)), priority))
}

// SetOptimizer makes the store apply pushes as gradients with opt (update
// on kvstore); the description is copied.
func (kv *KVStore) SetOptimizer(opt *Optimizer) error {
	p, err := kv.handle().acquire("KVStore.SetOptimizer", "KVStore")
	if err != nil {
		return err
	}
	defer kv.h.release()
	op, err := opt.handle().acquire("KVStore.SetOptimizer", "Optimizer")
	if err != nil {
		return err
	}
	defer opt.h.release()
	return check(capi.Dt_kvstore_set_optimizer(p, op))
}

// SetGradientCompression is MXNet's set_gradient_compression, as text:
// "2bit:threshold=0.5", "fp16", "topk:fraction=0.01", ... (see
// dt_kvstore_set_gradient_compression). Pushed float32 values travel
// compressed from now on, with error feedback unless "error_feedback=off";
// pulls stay exact. Every worker, the same text, before the first push;
// StatusNotSupported for stores that send nothing between processes.
func (kv *KVStore) SetGradientCompression(spec string) error {
	p, err := kv.handle().acquire("KVStore.SetGradientCompression", "KVStore")
	if err != nil {
		return err
	}
	defer kv.h.release()
	return check(capi.Dt_kvstore_set_gradient_compression(p, spec))
}

// Barrier returns when every worker has reached it (or RequestTimeout
// passed: StatusTimedOut).
func (kv *KVStore) Barrier() error {
	p, err := kv.handle().acquire("KVStore.Barrier", "KVStore")
	if err != nil {
		return err
	}
	defer kv.h.release()
	return check(capi.Dt_kvstore_barrier(p))
}
