package org.disttrain;

/**
 * A declarative optimizer description (a name and typed hyper-parameters),
 * e.g. {@code Optimizer.create("sgd").setDouble("learning_rate", 0.05)}.
 * Each setter checks its key and value at once; rules across keys are checked
 * when the description is used (trainer, kvstore).
 */
public final class Optimizer extends NativeHandle {
  private Optimizer(long handle) {
    super("Optimizer", handle, disttrain::dt_optimizer_free, null);
  }

  /** "sgd", "nag", "adam", "adamw"; INVALID_ARGUMENT listing the known names otherwise. */
  public static Optimizer create(String name) {
    long[] out = new long[1];
    disttrain.dt_optimizer_create(out, name);
    return new Optimizer(out[0]);
  }

  /** From the JSON {@link #toJson()} writes. */
  public static Optimizer fromJson(String json) {
    long[] out = new long[1];
    disttrain.dt_optimizer_create_from_json(out, json);
    return new Optimizer(out[0]);
  }

  public Optimizer setDouble(String key, double value) {
    try {
      disttrain.dt_optimizer_set_double(handle(), key, value);
    } finally {
      fence();
    }
    return this;
  }

  public Optimizer setInt(String key, long value) {
    try {
      disttrain.dt_optimizer_set_int(handle(), key, value);
    } finally {
      fence();
    }
    return this;
  }

  public Optimizer setBool(String key, boolean value) {
    try {
      disttrain.dt_optimizer_set_bool(handle(), key, value ? 1 : 0);
    } finally {
      fence();
    }
    return this;
  }

  public Optimizer setString(String key, String value) {
    try {
      disttrain.dt_optimizer_set_string(handle(), key, value);
    } finally {
      fence();
    }
    return this;
  }

  public Optimizer setIntList(String key, long... values) {
    try {
      disttrain.dt_optimizer_set_int_list(handle(), key, values == null ? new long[0] : values);
    } finally {
      fence();
    }
    return this;
  }

  public String toJson() {
    String[] out = new String[1];
    try {
      disttrain.dtj_optimizer_to_json(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }
}
