package org.disttrain;

/** MNIST-format (IDX) and RecordIO datasets in batches, with a split sampler for data parallelism. */
public final class DataLoader extends NativeHandle {
  /** Loader options; the defaults are the library's (dt_data_loader_options_init). */
  public static final class Options {
    public long batchSize;
    public LastBatch lastBatch;
    public boolean shuffle;
    public long seed;
    /** Split the data into numParts parts; this loader reads part partIndex (e.g. kvstore rank). */
    public int numParts;
    public int partIndex;
    public int prefetch;
    /** Normalisation (x / 255 - mean) / std. */
    public float mean;
    public float std;

    public Options() {
      dt_data_loader_options o = new dt_data_loader_options();
      try {
        disttrain.dt_data_loader_options_init(o);
        batchSize = o.getBatch_size();
        lastBatch = LastBatch.fromCode(o.getLast_batch());
        shuffle = o.getShuffle() != 0;
        seed = o.getSeed();
        numParts = o.getNum_parts();
        partIndex = o.getPart_index();
        prefetch = o.getPrefetch();
        mean = o.getMean();
        std = o.getStd();
      } finally {
        o.delete();
      }
    }

    public Options batchSize(long value) {
      batchSize = value;
      return this;
    }

    public Options lastBatch(LastBatch value) {
      lastBatch = value;
      return this;
    }

    public Options shuffle(boolean value) {
      shuffle = value;
      return this;
    }

    public Options seed(long value) {
      seed = value;
      return this;
    }

    public Options part(int index, int parts) {
      partIndex = index;
      numParts = parts;
      return this;
    }

    public Options prefetch(int value) {
      prefetch = value;
      return this;
    }

    public Options normalize(float meanValue, float stdValue) {
      mean = meanValue;
      std = stdValue;
      return this;
    }

    /** The C struct; the caller deletes it. */
    dt_data_loader_options toNative() {
      if (lastBatch == null) throw new DtException(Status.INVALID_ARGUMENT, "lastBatch must not be null");
      dt_data_loader_options o = new dt_data_loader_options();
      disttrain.dt_data_loader_options_init(o);
      o.setBatch_size(batchSize);
      o.setLast_batch(lastBatch.code());
      o.setShuffle(shuffle ? 1 : 0);
      o.setSeed(seed);
      o.setNum_parts(numParts);
      o.setPart_index(partIndex);
      o.setPrefetch(prefetch);
      o.setMean(mean);
      o.setStd(std);
      return o;
    }
  }

  /** One batch: float32 (B, 1, 28, 28) data and int32 (B) labels. Closing it closes both. */
  public static final class Batch implements AutoCloseable {
    private final NDArray data;
    private final NDArray labels;

    Batch(NDArray data, NDArray labels) {
      this.data = data;
      this.labels = labels;
    }

    public NDArray data() {
      return data;
    }

    public NDArray labels() {
      return labels;
    }

    @Override
    public void close() {
      data.close();
      labels.close();
    }
  }

  private DataLoader(long handle) {
    super("DataLoader", handle, disttrain::dt_data_loader_free, null);
  }

  /** An IDX image file and its label file (plain or gzip); options may be null (defaults). */
  public static DataLoader create(String imagesPath, String labelsPath, Options options) {
    long[] out = new long[1];
    dt_data_loader_options o = options == null ? null : options.toNative();
    try {
      disttrain.dt_data_loader_create(out, imagesPath, labelsPath, o);
    } finally {
      if (o != null) o.delete();
    }
    return new DataLoader(out[0]);
  }

  /**
   * The standard MNIST/Fashion-MNIST files in dir (null:
   * /usr/share/datasets/fashion-mnist); split "train" or "t10k".
   */
  public static DataLoader mnist(String dir, String split, Options options) {
    long[] out = new long[1];
    dt_data_loader_options o = options == null ? null : options.toNative();
    try {
      disttrain.dt_data_loader_create_mnist(out, dir, split, o);
    } finally {
      if (o != null) o.delete();
    }
    return new DataLoader(out[0]);
  }

  /**
   * An MXNet RecordIO image set (the .rec and .idx files im2rec writes, what
   * ImageRecordIter reads). idxPath null: the .idx beside recPath when there
   * is one, else the .rec is walked; "": always walked. Each record's image
   * (JPEG or PNG) is resized to height x width, batches are (B, 3, height,
   * width) normalised with ImageNet's statistics, the class the record's
   * (first) label. A malformed file throws Status.IO naming it and the byte
   * offset; options may be null (defaults).
   */
  public static DataLoader recordio(String recPath, String idxPath, long height, long width, Options options) {
    long[] out = new long[1];
    dt_data_loader_options o = options == null ? null : options.toNative();
    try {
      disttrain.dt_data_loader_create_recordio(out, recPath, idxPath, height, width, o);
    } finally {
      if (o != null) o.delete();
    }
    return new DataLoader(out[0]);
  }

  /** Samples in this loader's part. */
  public long numSamples() {
    long[] out = new long[1];
    try {
      disttrain.dt_data_loader_num_samples(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  public long numBatches() {
    long[] out = new long[1];
    try {
      disttrain.dt_data_loader_num_batches(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  /** Starts an epoch; its order depends on the seed and epoch only. */
  public void startEpoch(int epoch) {
    try {
      disttrain.dt_data_loader_start_epoch(handle(), epoch);
    } finally {
      fence();
    }
  }

  /** The next batch of the epoch, or null at its end; BAD_STATE before the first startEpoch. */
  public Batch next() {
    long[] data = new long[1];
    long[] labels = new long[1];
    int[] hasBatch = new int[1];
    try {
      disttrain.dt_data_loader_next(data, labels, hasBatch, handle());
    } finally {
      fence();
    }
    if (hasBatch[0] == 0) return null;
    NDArray d = new NDArray(data[0], this);
    NDArray l;
    try {
      l = new NDArray(labels[0], this);
    } catch (RuntimeException e) {
      d.close();
      throw e;
    }
    return new Batch(d, l);
  }
}
