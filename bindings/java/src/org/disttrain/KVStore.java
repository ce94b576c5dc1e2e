package org.disttrain;

/**
 * Keyed tensors, summed on push and broadcast on pull (MXNet's KVStore).
 *
 * Types: "local", "device", and the parameter-server types "dist_sync" and
 * "dist_async", which join the job described by the DMLC_* environment (see
 * dtrun). Integer keys must be below 2^63 (non-negative as a Java long);
 * string keys map to one 64-bit key, the same in every process.
 * Parallel lists (keys, values, outs) must have one length: that is checked
 * here, before the native call, which receives that length as its count.
 */
public final class KVStore extends NativeHandle {
  /** Deadlines and bounds of the distributed types; defaults from the library (and DT_* / DMLC_* environment). */
  public static final class Options {
    public double startupTimeoutS;
    public double requestTimeoutS;
    public double heartbeatIntervalS;
    public double heartbeatTimeoutS;
    public double shutdownTimeoutS;
    public long bigarrayBoundBytes;
    /** The job layout; each value set wins over the environment (null: environment). */
    public Role role;
    public Integer workerId;
    public Integer numServers;
    public Integer numWorkers;
    public String schedulerHost;
    public Integer schedulerPort;

    public Options() {
      dt_kvstore_options o = new dt_kvstore_options();
      try {
        disttrain.dt_kvstore_options_init(o);
        startupTimeoutS = o.getStartup_timeout_s();
        requestTimeoutS = o.getRequest_timeout_s();
        heartbeatIntervalS = o.getHeartbeat_interval_s();
        heartbeatTimeoutS = o.getHeartbeat_timeout_s();
        shutdownTimeoutS = o.getShutdown_timeout_s();
        bigarrayBoundBytes = o.getBigarray_bound_bytes();
      } finally {
        o.delete();
      }
    }

    public Options startupTimeout(double seconds) {
      startupTimeoutS = seconds;
      return this;
    }

    public Options requestTimeout(double seconds) {
      requestTimeoutS = seconds;
      return this;
    }

    public Options heartbeatInterval(double seconds) {
      heartbeatIntervalS = seconds;
      return this;
    }

    public Options heartbeatTimeout(double seconds) {
      heartbeatTimeoutS = seconds;
      return this;
    }

    public Options shutdownTimeout(double seconds) {
      shutdownTimeoutS = seconds;
      return this;
    }

    public Options bigarrayBound(long bytes) {
      bigarrayBoundBytes = bytes;
      return this;
    }

    public Options role(Role value) {
      role = value;
      return this;
    }

    public Options workerId(int value) {
      workerId = value;
      return this;
    }

    public Options numServers(int value) {
      numServers = value;
      return this;
    }

    public Options numWorkers(int value) {
      numWorkers = value;
      return this;
    }

    /** Scheduler host and port, as DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT. */
    public Options scheduler(String host, int port) {
      schedulerHost = host;
      schedulerPort = port;
      return this;
    }

    /** The C struct; the caller deletes it. */
    dt_kvstore_options toNative() {
      dt_kvstore_options o = new dt_kvstore_options();
      disttrain.dt_kvstore_options_init(o);
      o.setStartup_timeout_s(startupTimeoutS);
      o.setRequest_timeout_s(requestTimeoutS);
      o.setHeartbeat_interval_s(heartbeatIntervalS);
      o.setHeartbeat_timeout_s(heartbeatTimeoutS);
      o.setShutdown_timeout_s(shutdownTimeoutS);
      o.setBigarray_bound_bytes(bigarrayBoundBytes);
      // Unset stays at dt_kvstore_options_init's "from the environment".
      if (role != null) o.setRole(role.code());
      if (workerId != null) o.setWorker_id(workerId);
      if (numServers != null) o.setNum_servers(numServers);
      if (numWorkers != null) o.setNum_workers(numWorkers);
      if (schedulerPort != null) o.setScheduler_port(schedulerPort);
      return o;
    }
  }

  private KVStore(long handle) {
    super("KVStore", handle, disttrain::dt_kvstore_free, null);
  }

  /** NOT_SUPPORTED for an unknown type, NO_DEVICE for "device" without a GPU. */
  public static KVStore create(String type) {
    long[] out = new long[1];
    disttrain.dt_kvstore_create(out, type);
    return new KVStore(out[0]);
  }

  /** With options (null: defaults); a distributed type returns once the job's node table is known. */
  public static KVStore create(String type, Options options) {
    long[] out = new long[1];
    if (options == null) {
      disttrain.dt_kvstore_create_ex(out, type, null);
    } else {
      dt_kvstore_options o = options.toNative();
      try {
        disttrain.dtj_kvstore_create_ex(out, type, o, options.schedulerHost);
      } finally {
        o.delete();
      }
    }
    return new KVStore(out[0]);
  }

  public String type() {
    String[] out = new String[1];
    try {
      disttrain.dt_kvstore_type(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  public int rank() {
    int[] out = new int[1];
    try {
      disttrain.dt_kvstore_rank(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  public int numWorkers() {
    int[] out = new int[1];
    try {
      disttrain.dt_kvstore_num_workers(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  /**
   * Whether this worker joined a running job in the place of one the job lost
   * (DT_WORKER_LOSS=continue, e.g. started again by {@code dtrun --worker-loss continue
   * --max-restarts N}); see {@link #roundsBeforeJoining()}.
   */
  public boolean joinedRunningJob() {
    return joined()[0] != 0;
  }

  /**
   * For a worker that joined a running job, how many dist_sync rounds the job had done on every
   * key before it joined: its pushes count from the next one, so a training loop of its own goes
   * on from that step. 0 otherwise.
   */
  public long roundsBeforeJoining() {
    return joined()[1];
  }

  /**
   * Letting a worker into an {@code allreduce} job from a training loop of one's own
   * (DT_WORKER_LOSS=continue; {@link Trainer#admitJoiningWorkers()} does it all for a trainer).
   * Every worker in the job calls it at the same point of its loop, before each step; about every
   * 0.1 s of steps it is one small all-reduce. True, alike on every worker, when a worker that
   * joined in a departed one's place was let in just now: then each calls {@link
   * #handOverState(byte[])} with its state before its next push. False on the other stores.
   */
  public boolean admitJoiningWorkers() {
    int[] admitted = new int[1];
    try {
      disttrain.dt_kvstore_admit_joining_workers(admitted, handle());
    } finally {
      fence();
    }
    return admitted[0] != 0;
  }

  /**
   * The hand-over after {@link #admitJoiningWorkers()}: a worker in the job passes its state and
   * gets an empty array back. A worker that {@link #joinedRunningJob() joined} calls it once,
   * before anything else that communicates (with null or an empty array): it waits until the job
   * lets it in and returns the state the first worker in the job sent. DtException NOT_SUPPORTED on
   * the stores that let nobody in this way; BAD_STATE on a worker in the job when nobody was let in
   * (the store goes on); TIMED_OUT, CLOSED or PEER_LOST on a joined worker that was not let in (see
   * dt_kvstore_hand_over_state).
   */
  public byte[] handOverState(byte[] state) {
    long[] length = new long[1];
    try {
      disttrain.dtj_kvstore_hand_over_state(length, handle(), state);
      if (length[0] > Integer.MAX_VALUE - 8) {
        throw new DtException(Status.OUT_OF_MEMORY, "KVStore.handOverState: the " + length[0]
            + " bytes handed over do not fit a Java array");
      }
      byte[] handed = new byte[(int) length[0]];
      disttrain.dt_kvstore_handed_state(handed, length, handle());
      return handed;
    } finally {
      fence();
    }
  }

  private long[] joined() {
    int[] joined = new int[1];
    long[] before = new long[1];
    try {
      disttrain.dt_kvstore_joined_running_job(joined, before, handle());
    } finally {
      fence();
    }
    return new long[] {joined[0], before[0]};
  }

  /**
   * Bytes this process's store has sent and received over the network since it was created,
   * as {sent, received} (0 and 0 for the in-process stores): what gradient compression saves.
   */
  public long[] traffic() {
    long[] sent = new long[1];
    long[] received = new long[1];
    try {
      disttrain.dt_kvstore_traffic(sent, received, handle());
    } finally {
      fence();
    }
    return new long[] {sent[0], received[0]};
  }

  private static void sameLength(String call, int keys, int values, int outs) {
    if (keys != values || keys != outs) {
      throw new DtException(Status.INVALID_ARGUMENT, "KVStore." + call + ": " + keys + " keys, "
          + values + " values and " + outs + " outs; the lists must have one length");
    }
  }

  private static int length(Object[] list, String what) {
    if (list == null) throw new DtException(Status.INVALID_ARGUMENT, what + " must not be null");
    return list.length;
  }

  private static int length(long[] list) {
    if (list == null) throw new DtException(Status.INVALID_ARGUMENT, "keys must not be null");
    return list.length;
  }

  // ---- integer keys -------------------------------------------------------

  public void init(long[] keys, NDArray[] values) {
    int n = length(keys);
    sameLength("init", n, length(values, "values"), n);
    long[] v = handlesOf(values, "values");
    try {
      disttrain.dt_kvstore_init(handle(), keys, v, n);
    } finally {
      fence();
      keepAlive(values);
    }
  }

  public void init(long key, NDArray value) {
    init(new long[] {key}, new NDArray[] {value});
  }

  public void push(long[] keys, NDArray[] values, int priority) {
    int n = length(keys);
    sameLength("push", n, length(values, "values"), n);
    long[] v = handlesOf(values, "values");
    try {
      disttrain.dt_kvstore_push(handle(), keys, v, n, priority);
    } finally {
      fence();
      keepAlive(values);
    }
  }

  public void push(long key, NDArray value) {
    push(new long[] {key}, new NDArray[] {value}, 0);
  }

  public void pull(long[] keys, NDArray[] outs, int priority) {
    int n = length(keys);
    sameLength("pull", n, n, length(outs, "outs"));
    long[] o = handlesOf(outs, "outs");
    try {
      disttrain.dt_kvstore_pull(handle(), keys, o, n, priority);
    } finally {
      fence();
      keepAlive(outs);
    }
  }

  public void pull(long key, NDArray out) {
    pull(new long[] {key}, new NDArray[] {out}, 0);
  }

  /** push then pull; values and outs may be the same arrays. */
  public void pushPull(long[] keys, NDArray[] values, NDArray[] outs, int priority) {
    int n = length(keys);
    sameLength("pushPull", n, length(values, "values"), length(outs, "outs"));
    long[] v = handlesOf(values, "values");
    long[] o = handlesOf(outs, "outs");
    try {
      disttrain.dt_kvstore_pushpull(handle(), keys, v, o, n, priority);
    } finally {
      fence();
      keepAlive(values);
      keepAlive(outs);
    }
  }

  public void pushPull(long key, NDArray value, NDArray out) {
    long[] v = {handleOf(value, "value")};
    long[] o = {handleOf(out, "out")};
    try {
      disttrain.dt_kvstore_pushpull(handle(), new long[] {key}, v, o, 1, 0);
    } finally {
      fence();
      keepAlive(value);
      keepAlive(out);
    }
  }

  /** init from the first value of each key, then pull into outs. */
  public void broadcast(long[] keys, NDArray[] values, NDArray[] outs) {
    int n = length(keys);
    sameLength("broadcast", n, length(values, "values"), length(outs, "outs"));
    long[] v = handlesOf(values, "values");
    long[] o = handlesOf(outs, "outs");
    try {
      disttrain.dt_kvstore_broadcast(handle(), keys, v, o, n);
    } finally {
      fence();
      keepAlive(values);
      keepAlive(outs);
    }
  }

  public void broadcast(long key, NDArray value, NDArray out) {
    broadcast(new long[] {key}, new NDArray[] {value}, new NDArray[] {out});
  }

  // ---- string keys --------------------------------------------------------

  public void init(String[] keys, NDArray[] values) {
    int n = length(keys, "keys");
    sameLength("init", n, length(values, "values"), n);
    long[] v = handlesOf(values, "values");
    try {
      disttrain.dt_kvstore_init_str(handle(), keys, v, n);
    } finally {
      fence();
      keepAlive(values);
    }
  }

  public void init(String key, NDArray value) {
    init(new String[] {key}, new NDArray[] {value});
  }

  public void push(String[] keys, NDArray[] values, int priority) {
    int n = length(keys, "keys");
    sameLength("push", n, length(values, "values"), n);
    long[] v = handlesOf(values, "values");
    try {
      disttrain.dt_kvstore_push_str(handle(), keys, v, n, priority);
    } finally {
      fence();
      keepAlive(values);
    }
  }

  public void push(String key, NDArray value) {
    push(new String[] {key}, new NDArray[] {value}, 0);
  }

  public void pull(String[] keys, NDArray[] outs, int priority) {
    int n = length(keys, "keys");
    sameLength("pull", n, n, length(outs, "outs"));
    long[] o = handlesOf(outs, "outs");
    try {
      disttrain.dt_kvstore_pull_str(handle(), keys, o, n, priority);
    } finally {
      fence();
      keepAlive(outs);
    }
  }

  public void pull(String key, NDArray out) {
    pull(new String[] {key}, new NDArray[] {out}, 0);
  }

  public void pushPull(String[] keys, NDArray[] values, NDArray[] outs, int priority) {
    int n = length(keys, "keys");
    sameLength("pushPull", n, length(values, "values"), length(outs, "outs"));
    long[] v = handlesOf(values, "values");
    long[] o = handlesOf(outs, "outs");
    try {
      disttrain.dt_kvstore_pushpull_str(handle(), keys, v, o, n, priority);
    } finally {
      fence();
      keepAlive(values);
      keepAlive(outs);
    }
  }

  public void pushPull(String key, NDArray value, NDArray out) {
    pushPull(new String[] {key}, new NDArray[] {value}, new NDArray[] {out}, 0);
  }

  /** From now on pushes are gradients the store applies with this optimizer (copied). */
  public void setOptimizer(Optimizer optimizer) {
    try {
      disttrain.dt_kvstore_set_optimizer(handle(), handleOf(optimizer, "optimizer"));
    } finally {
      fence();
      keepAlive(optimizer);
    }
  }

  /**
   * MXNet's set_gradient_compression, as text: "2bit:threshold=0.5", "fp16", "topk:fraction=0.01",
   * ... (see dt_kvstore_set_gradient_compression). Pushed float32 values travel compressed from now on,
   * with error feedback unless "error_feedback=off"; pulls stay exact. Every worker, the same text,
   * before the first push. NOT_SUPPORTED for stores that send nothing between processes.
   */
  public void setGradientCompression(String spec) {
    try {
      disttrain.dt_kvstore_set_gradient_compression(handle(), spec);
    } finally {
      fence();
    }
  }

  /** Returns when every worker has reached the barrier (or the request deadline passed). */
  public void barrier() {
    try {
      disttrain.dt_kvstore_barrier(handle());
    } finally {
      fence();
    }
  }
}
