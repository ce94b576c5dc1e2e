package org.disttrain;

/** A network of layers with parameters, forward and backward (Gluon's HybridSequential). */
public final class Net extends NativeHandle {
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
}
