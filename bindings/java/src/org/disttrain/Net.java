package org.disttrain;

/** A network of layers with parameters, forward and backward (Gluon's HybridSequential). */
public final class Net extends NativeHandle {
  /**
   * Dynamic loss scaling (PyTorch GradScaler's knobs); the defaults are the
   * library's (dt_loss_scaling_options_init): enabled, init scale 65536,
   * growth factor 2, backoff factor 0.5, growth interval 2000. See
   * {@link Net#setLossScaling}.
   */
  public static final class LossScalingOptions {
    /** false: no scaling (scale 1); the other fields are then ignored. */
    public boolean enabled;
    /** Finite, in [2^-24, 2^100]. */
    public double initScale;
    /** Greater than 1: applied after growthInterval steps without an overflow. */
    public double growthFactor;
    /** In (0, 1): applied on a step whose gradients overflow. */
    public double backoffFactor;
    /** At least 1 step. */
    public long growthInterval;

    public LossScalingOptions() {
      dt_loss_scaling_options o = new dt_loss_scaling_options();
      try {
        disttrain.dt_loss_scaling_options_init(o);
        read(o);
      } finally {
        o.delete();
      }
    }

    public LossScalingOptions enabled(boolean value) {
      enabled = value;
      return this;
    }

    public LossScalingOptions initScale(double value) {
      initScale = value;
      return this;
    }

    public LossScalingOptions growthFactor(double value) {
      growthFactor = value;
      return this;
    }

    public LossScalingOptions backoffFactor(double value) {
      backoffFactor = value;
      return this;
    }

    public LossScalingOptions growthInterval(long value) {
      growthInterval = value;
      return this;
    }

    private void read(dt_loss_scaling_options o) {
      enabled = o.getEnabled() != 0;
      initScale = o.getInit_scale();
      growthFactor = o.getGrowth_factor();
      backoffFactor = o.getBackoff_factor();
      growthInterval = o.getGrowth_interval();
    }

    /** The C struct; the caller deletes it. */
    dt_loss_scaling_options toNative() {
      dt_loss_scaling_options o = new dt_loss_scaling_options();
      disttrain.dt_loss_scaling_options_init(o);
      o.setEnabled(enabled ? 1 : 0);
      o.setInit_scale(initScale);
      o.setGrowth_factor(growthFactor);
      o.setBackoff_factor(backoffFactor);
      o.setGrowth_interval(growthInterval);
      return o;
    }

    @Override
    public String toString() {
      return enabled
          ? "LossScalingOptions(initScale=" + initScale + ", growthFactor=" + growthFactor + ", backoffFactor="
              + backoffFactor + ", growthInterval=" + growthInterval + ")"
          : "LossScalingOptions(disabled)";
    }
  }

  private Net(long handle, Context ctx) {
    super("Net", handle, disttrain::dt_net_free, ctx);
  }

  /**
   * Builds a model by name ("mlp", "lenet", "resnet18") on ctx; optionsJson
   * is null or a JSON object such as {"input_shape": [1, 28, 28], "classes": 10}.
   * Parameters are zeros until {@link #initialize} or {@link #loadParams}.
   */
  public static Net create(Context ctx, String builder, String optionsJson) {
    long[] out = new long[1];
    try {
      disttrain.dt_net_create(out, handleOf(ctx, "context"), builder, optionsJson);
    } finally {
      keepAlive(ctx);
    }
    return new Net(out[0], ctx);
  }

  public static Net create(Context ctx, String builder) {
    return create(ctx, builder, null);
  }

  /** From the JSON description {@link #toJson()} writes. */
  public static Net fromJson(Context ctx, String descriptionJson) {
    long[] out = new long[1];
    try {
      disttrain.dt_net_create_from_json(out, handleOf(ctx, "context"), descriptionJson);
    } finally {
      keepAlive(ctx);
    }
    return new Net(out[0], ctx);
  }

  public String toJson() {
    String[] out = new String[1];
    try {
      disttrain.dtj_net_to_json(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  /** Fills every parameter by its layer's initialiser, reproducibly from seed. */
  public Net initialize(long seed) {
    try {
      disttrain.dt_net_initialize(handle(), seed);
    } finally {
      fence();
    }
    return this;
  }

  public int numParams() {
    long[] out = new long[1];
    try {
      disttrain.dt_net_num_params(out, handle());
    } finally {
      fence();
    }
    return (int) out[0];
  }

  public String paramName(int index) {
    String[] out = new String[1];
    try {
      disttrain.dt_net_param_name(out, handle(), index);
    } finally {
      fence();
    }
    return out[0];
  }

  /** True for an auxiliary state (no gradient, not synchronised). */
  public boolean isAuxiliary(int index) {
    int[] out = new int[1];
    try {
      disttrain.dt_net_param_is_auxiliary(out, handle(), index);
    } finally {
      fence();
    }
    return out[0] != 0;
  }

  /** The index of a parameter by name; NOT_FOUND for an unknown name. */
  public int findParam(String name) {
    long[] out = new long[1];
    try {
      disttrain.dt_net_find_param(out, handle(), name);
    } finally {
      fence();
    }
    return (int) out[0];
  }

  /** A new handle sharing parameter index's storage; the caller closes it. */
  public NDArray param(int index) {
    long[] out = new long[1];
    try {
      disttrain.dt_net_param(out, handle(), index);
    } finally {
      fence();
    }
    return new NDArray(out[0], this);
  }

  /** A new handle sharing the gradient's storage; NOT_FOUND for an auxiliary state. */
  public NDArray grad(int index) {
    long[] out = new long[1];
    try {
      disttrain.dt_net_grad(out, handle(), index);
    } finally {
      fence();
    }
    return new NDArray(out[0], this);
  }

  /** grad_req of one parameter by name. */
  public Net setGradReq(String name, GradReq req) {
    if (req == null) throw new DtException(Status.INVALID_ARGUMENT, "grad_req must not be null");
    if (name == null) throw new DtException(Status.INVALID_ARGUMENT, "name must not be null (use setGradReq(req) for all)");
    try {
      disttrain.dt_net_set_grad_req(handle(), name, req.code());
    } finally {
      fence();
    }
    return this;
  }

  /** grad_req of every learnable parameter. */
  public Net setGradReq(GradReq req) {
    if (req == null) throw new DtException(Status.INVALID_ARGUMENT, "grad_req must not be null");
    try {
      disttrain.dt_net_set_grad_req(handle(), null, req.code());
    } finally {
      fence();
    }
    return this;
  }

  /** Runs the net on a batch (float32 inputs with a leading batch dim). */
  public void forward(boolean train, NDArray... inputs) {
    long[] handles = handlesOf(inputs, "inputs");
    try {
      disttrain.dt_net_forward(handle(), handles, handles.length, train ? 1 : 0);
    } finally {
      fence();
      keepAlive(inputs);
    }
  }

  /** After a forward: the loss against integer labels, and the gradients. */
  public double backward(NDArray labels) {
    double[] loss = new double[1];
    try {
      disttrain.dt_net_backward(loss, handle(), handleOf(labels, "labels"));
    } finally {
      fence();
      keepAlive(labels);
    }
    return loss[0];
  }

  public int numOutputs() {
    long[] out = new long[1];
    try {
      disttrain.dt_net_num_outputs(out, handle());
    } finally {
      fence();
    }
    return (int) out[0];
  }

  /** Output index of the last forward; its storage is overwritten by the next forward. */
  public NDArray output(int index) {
    long[] out = new long[1];
    try {
      disttrain.dt_net_output(out, handle(), index);
    } finally {
      fence();
    }
    return new NDArray(out[0], this);
  }

  public void saveParams(String path) {
    try {
      disttrain.dt_net_save_params(handle(), path);
    } finally {
      fence();
    }
  }

  public void loadParams(String path) {
    try {
      disttrain.dt_net_load_params(handle(), path);
    } finally {
      fence();
    }
  }

  /**
   * Mixed precision on a GPU context: compute in FLOAT16 (with dynamic loss
   * scaling) or BFLOAT16 over float32 master weights; FLOAT32 is the
   * default. Before the first forward only (BAD_STATE after); 16 bits on a
   * CPU context is NOT_SUPPORTED, any other dtype INVALID_ARGUMENT.
   */
  public Net setComputeDtype(DType dtype) {
    if (dtype == null) throw new DtException(Status.INVALID_ARGUMENT, "dtype must not be null");
    try {
      disttrain.dt_net_set_compute_dtype(handle(), dtype.code());
    } finally {
      fence();
    }
    return this;
  }

  public DType computeDtype() {
    int[] out = new int[1];
    try {
      disttrain.dt_net_compute_dtype(out, handle());
    } finally {
      fence();
    }
    return DType.fromCode(out[0]);
  }

  /** The factor the next backward multiplies the loss gradient by (1.0 without loss scaling). */
  public double lossScale() {
    double[] out = new double[1];
    try {
      disttrain.dt_net_loss_scale(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  /**
   * Replaces the loss scaler of a FLOAT16 net (other factors, or disabled)
   * or a BFLOAT16 one (enabled turns scaling on); the scale restarts at
   * initScale and the skipped-step count at 0. Call after
   * {@link #setComputeDtype}, which resets the scaler to its dtype's
   * default. Enabled on a FLOAT32 net (every CPU net), a null options or an
   * out-of-range field is INVALID_ARGUMENT naming the field; on an error
   * nothing changes.
   */
  public Net setLossScaling(LossScalingOptions options) {
    if (options == null) throw new DtException(Status.INVALID_ARGUMENT, "options must not be null");
    dt_loss_scaling_options o = options.toNative();
    try {
      disttrain.dt_net_set_loss_scaling(handle(), o);
    } finally {
      o.delete();
      fence();
    }
    return this;
  }

  /** The current loss scaler's options: disabled (with the defaults) without loss scaling. */
  public LossScalingOptions lossScaling() {
    LossScalingOptions options = new LossScalingOptions();
    dt_loss_scaling_options o = new dt_loss_scaling_options();
    try {
      disttrain.dt_loss_scaling_options_init(o);
      disttrain.dt_net_loss_scaling(o, handle());
      options.read(o);
    } finally {
      o.delete();
      fence();
    }
    return options;
  }
}
