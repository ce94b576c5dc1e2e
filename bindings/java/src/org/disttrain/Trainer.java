package org.disttrain;

import java.util.Arrays;

/** Net + optimizer + kvstore (Gluon's Trainer). It keeps the net, kvstore and contexts alive. */
public final class Trainer extends NativeHandle {
  /** Trainer options. */
  public static final class Options {
    /**
     * -1: on the store when a kvstore that runs optimizers is given (all but "dist_nccl") and the net
     * needs no loss scaling (float16 compute), else locally; 1: the kvstore runs the optimizer; 0: workers do.
     */
    public int updateOnKVStore = -1;
    /** Extra devices for data parallelism in this process. */
    public Context[] extraContexts = new Context[0];
    /** The step's sync mode (SINGA's full, half, partial or sparse step); FULL by default. */
    public SyncMode syncMode = SyncMode.FULL;
    /** PARTIAL: the chunk size in elements; 0: the library's default (2097152, SINGA's threshold). */
    public long partialChunkElements;
    /** SPARSE: sparseValue is the fraction of each gradient sent (top-K) rather than a magnitude threshold. */
    public boolean sparseTopK;
    /** SPARSE: the threshold or fraction; 0: the library's default (0.05, SINGA's spars). */
    public double sparseValue;
    /** SPARSE: add what was not sent to the next step's gradient (SINGA's corr); true by default. */
    public boolean sparseAccumulate = true;

    public Options updateOnKVStore(int value) {
      updateOnKVStore = value;
      return this;
    }

    public Options extraContexts(Context... contexts) {
      extraContexts = contexts == null ? new Context[0] : contexts.clone();
      return this;
    }

    public Options syncMode(SyncMode value) {
      syncMode = value;
      return this;
    }

    /** PARTIAL with chunks of about chunkElements weights. */
    public Options partial(long chunkElements) {
      syncMode = SyncMode.PARTIAL;
      partialChunkElements = chunkElements;
      return this;
    }

    /** SPARSE sending the elements with |g| >= threshold. */
    public Options sparseThreshold(double threshold, boolean accumulate) {
      return sparse(false, threshold, accumulate);
    }

    /** SPARSE sending the given fraction of largest |g|. */
    public Options sparseTopK(double fraction, boolean accumulate) {
      return sparse(true, fraction, accumulate);
    }

    private Options sparse(boolean topK, double value, boolean accumulate) {
      syncMode = SyncMode.SPARSE;
      sparseTopK = topK;
      sparseValue = value;
      sparseAccumulate = accumulate;
      return this;
    }
  }

  /** dt_trainer_fit options; defaults are the library's (dt_fit_options_init). */
  public static final class FitOptions {
    public int epochs;
    /** JSON lines, one per epoch; null: none. */
    public String metricsPath;
    /** Written after every epoch; null: none. */
    public String checkpointPath;
    /** -1: a bar on a TTY, plain lines otherwise; 0: plain lines; 1: always the bar; 2: silent. */
    public int progress;

    public FitOptions() {
      dt_fit_options o = new dt_fit_options();
      try {
        disttrain.dt_fit_options_init(o);
        epochs = o.getEpochs();
        progress = o.getProgress();
      } finally {
        o.delete();
      }
    }

    public FitOptions epochs(int value) {
      epochs = value;
      return this;
    }

    public FitOptions metricsPath(String value) {
      metricsPath = value;
      return this;
    }

    public FitOptions checkpointPath(String value) {
      checkpointPath = value;
      return this;
    }

    public FitOptions progress(int value) {
      progress = value;
      return this;
    }
  }

  /** The mean loss of a batch and how many of its samples were classified correctly. */
  public static final class BatchResult {
    public final double loss;
    public final long correct;

    BatchResult(double loss, long correct) {
      this.loss = loss;
      this.correct = correct;
    }
  }

  /** Accuracy and mean loss over an epoch of a loader. */
  public static final class Evaluation {
    public final double accuracy;
    public final double loss;

    Evaluation(double accuracy, double loss) {
      this.accuracy = accuracy;
      this.loss = loss;
    }
  }

  private final Net net;
  private final KVStore kvstore;
  private final Context[] extraContexts;

  private Trainer(long handle, Net net, KVStore kvstore, Context[] extraContexts) {
    super("Trainer", handle, disttrain::dt_trainer_free, net);
    this.net = net;
    this.kvstore = kvstore;
    this.extraContexts = extraContexts;
  }

  /**
   * The optimizer is copied; kvstore may be null (single-device updates).
   * The net's current weights are the initial values everywhere.
   */
  public static Trainer create(Net net, Optimizer optimizer, KVStore kvstore, Options options) {
    Options o = options == null ? new Options() : options;
    Context[] extra = o.extraContexts == null ? new Context[0] : o.extraContexts.clone();
    if (o.syncMode == null) throw new DtException(Status.INVALID_ARGUMENT, "syncMode must not be null");
    long[] out = new long[1];
    try {
      disttrain.dtj_trainer_create(out, handleOf(net, "net"), handleOf(optimizer, "optimizer"),
          handleOrNull(kvstore), o.updateOnKVStore, handlesOf(extra, "extraContexts"), o.syncMode.code(),
          o.partialChunkElements, o.sparseTopK ? 1 : 0, o.sparseValue, o.sparseAccumulate ? 0 : 1);
    } finally {
      keepAlive(net);
      keepAlive(optimizer);
      keepAlive(kvstore);
      keepAlive(extra);
    }
    return new Trainer(out[0], net, kvstore, extra);
  }

  public static Trainer create(Net net, Optimizer optimizer, KVStore kvstore) {
    return create(net, optimizer, kvstore, null);
  }

  public Net net() {
    return net;
  }

  /** The kvstore, or null. */
  public KVStore kvstore() {
    return kvstore;
  }

  /** After forward/backward on the net: reduce gradients and update; gradients are rescaled by 1/batchSize. */
  public void step(long batchSize) {
    try {
      disttrain.dt_trainer_step(handle(), batchSize);
    } finally {
      fence();
    }
  }

  /** One training step on a batch: forward, backward and step. */
  public BatchResult trainBatch(NDArray data, NDArray labels) {
    double[] loss = new double[1];
    long[] correct = new long[1];
    try {
      disttrain.dt_trainer_train_batch(loss, correct, handle(), handleOf(data, "data"), handleOf(labels, "labels"));
    } finally {
      fence();
      keepAlive(data);
      keepAlive(labels);
    }
    return new BatchResult(loss[0], correct[0]);
  }

  /** Accuracy and mean loss over one epoch of loader, in inference mode. */
  public Evaluation evaluate(DataLoader loader) {
    double[] accuracy = new double[1];
    double[] loss = new double[1];
    try {
      disttrain.dt_trainer_evaluate(accuracy, loss, handle(), handleOf(loader, "loader"));
    } finally {
      fence();
      keepAlive(loader);
    }
    return new Evaluation(accuracy[0], loss[0]);
  }

  public void setLearningRate(double lr) {
    try {
      disttrain.dt_trainer_set_learning_rate(handle(), lr);
    } finally {
      fence();
    }
  }

  public double learningRate() {
    double[] out = new double[1];
    try {
      disttrain.dt_trainer_learning_rate(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  public void saveCheckpoint(String path) {
    try {
      disttrain.dt_trainer_save_checkpoint(handle(), path);
    } finally {
      fence();
    }
  }

  /** Before the first step only (BAD_STATE after). */
  public void loadCheckpoint(String path) {
    try {
      disttrain.dt_trainer_load_checkpoint(handle(), path);
    } finally {
      fence();
    }
  }

  /** Trains up to options.epochs, evaluating on test (may be null) after every epoch. */
  public void fit(DataLoader train, DataLoader test, FitOptions options) {
    FitOptions o = options == null ? new FitOptions() : options;
    try {
      disttrain.dtj_trainer_fit(handle(), handleOf(train, "train"), handleOrNull(test), o.epochs,
          o.metricsPath, o.checkpointPath, o.progress);
    } finally {
      fence();
      keepAlive(train);
      keepAlive(test);
    }
  }

  /** Epochs completed (after fit or a loaded checkpoint). */
  public int epoch() {
    int[] out = new int[1];
    try {
      disttrain.dt_trainer_epoch(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  /** Steps taken (by fit, step and trainBatch; those a loaded checkpoint or a hand-over brought included). */
  public long steps() {
    long[] out = new long[1];
    try {
      disttrain.dt_trainer_steps(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  /**
   * What fit does before each batch, for a loop of one's own: letting a worker into an {@code
   * allreduce} job under DT_WORKER_LOSS=continue. Every worker calls it before each batch. True on
   * the workers in the job, alike on every one, when a worker that joined in a departed one's place
   * was let in just now and handed this trainer's state; on the joined worker, the first call waits
   * to be let in, takes that state and returns true: its loop goes on from {@link #steps()}. False
   * otherwise (see dt_trainer_admit_joining_workers).
   */
  public boolean admitJoiningWorkers() {
    int[] admitted = new int[1];
    try {
      disttrain.dt_trainer_admit_joining_workers(admitted, handle());
    } finally {
      fence();
    }
    return admitted[0] != 0;
  }

  /** Steps skipped because float16 gradients overflowed (see {@link Net#setComputeDtype}); 0 without loss scaling. */
  public long skippedSteps() {
    long[] out = new long[1];
    try {
      disttrain.dt_trainer_skipped_steps(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  @Override
  public String toString() {
    return isClosed() ? "Trainer(closed)" : "Trainer(" + (kvstore == null ? "no kvstore" : kvstore.type())
        + ", " + Arrays.toString(extraContexts) + ")";
  }
}
