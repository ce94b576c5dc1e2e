package org.disttrain;

/** A device: the CPU, or GPU n. Arrays and nets on a context keep it alive. */
public final class Context extends NativeHandle {
  Context(long handle) {
    super("Context", handle, disttrain::dt_context_free, null);
  }

  public static Context create(DeviceType type, int deviceId) {
    if (type == null) throw new DtException(Status.INVALID_ARGUMENT, "device type must not be null");
    long[] out = new long[1];
    disttrain.dt_context_create(out, type.code(), deviceId);
    return new Context(out[0]);
  }

  public static Context cpu() {
    return create(DeviceType.CPU, 0);
  }

  /** NO_DEVICE when the GPU is absent, NOT_SUPPORTED in a build without CUDA. */
  public static Context gpu(int deviceId) {
    return create(DeviceType.GPU, deviceId);
  }

  public DeviceType deviceType() {
    int[] out = new int[1];
    try {
      disttrain.dt_context_device_type(out, handle());
    } finally {
      fence();
    }
    return DeviceType.fromCode(out[0]);
  }

  public int deviceId() {
    int[] out = new int[1];
    try {
      disttrain.dt_context_device_id(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  /** CPU threads for kernels of nets created on this context afterwards (0: OMP_NUM_THREADS or all). */
  public Context setNumThreads(int numThreads) {
    try {
      disttrain.dt_context_set_num_threads(handle(), numThreads);
    } finally {
      fence();
    }
    return this;
  }

  public int numThreads() {
    int[] out = new int[1];
    try {
      disttrain.dt_context_num_threads(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  /**
   * What this context's allocator holds, from {@code dt_context_memory_stats}: the device
   * object's counts, shared by every handle to it.
   */
  public MemoryStats memoryStats() {
    dt_memory_stats stats = new dt_memory_stats();
    try {
      disttrain.dt_memory_stats_init(stats);
      disttrain.dt_context_memory_stats(stats, handle());
      return new MemoryStats(stats);
    } finally {
      stats.delete();
      fence();
    }
  }

  /** Lowers the peak to what is in use now (torch.cuda.reset_peak_memory_stats). */
  public Context resetPeakMemory() {
    try {
      disttrain.dt_context_reset_peak_memory(handle());
    } finally {
      fence();
    }
    return this;
  }

  @Override
  public String toString() {
    if (isClosed()) return "Context(closed)";
    return "Context(" + deviceType() + ", " + deviceId() + ")";
  }
}
