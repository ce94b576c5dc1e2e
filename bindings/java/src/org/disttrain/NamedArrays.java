package org.disttrain;

import java.util.ArrayList;
import java.util.List;

/** The arrays of one safetensors file, in the file's order. */
public final class NamedArrays extends NativeHandle {
  private NamedArrays(long handle, Context ctx) {
    super("NamedArrays", handle, disttrain::dt_named_arrays_free, ctx);
  }

  /** Reads and validates a file, placing its arrays on ctx (NOT_FOUND, IO on failure). */
  public static NamedArrays load(Context ctx, String path) {
    long[] out = new long[1];
    try {
      disttrain.dt_named_arrays_load(out, handleOf(ctx, "context"), path);
    } finally {
      keepAlive(ctx);
    }
    return new NamedArrays(out[0], ctx);
  }

  public int size() {
    long[] out = new long[1];
    try {
      disttrain.dt_named_arrays_count(out, handle());
    } finally {
      fence();
    }
    return (int) out[0];
  }

  public String name(int index) {
    String[] out = new String[1];
    try {
      disttrain.dt_named_arrays_name(out, handle(), index);
    } finally {
      fence();
    }
    return out[0];
  }

  public List<String> names() {
    int n = size();
    List<String> names = new ArrayList<>(n);
    for (int i = 0; i < n; ++i) names.add(name(i));
    return names;
  }

  /** A new array handle sharing entry index's storage; the caller closes it. */
  public NDArray get(int index) {
    long[] out = new long[1];
    try {
      disttrain.dt_named_arrays_get(out, handle(), index);
    } finally {
      fence();
    }
    return new NDArray(out[0], this);
  }

  /** Like {@link #get(int)} by name; NOT_FOUND if absent. */
  public NDArray get(String name) {
    long[] out = new long[1];
    try {
      disttrain.dt_named_arrays_find(out, handle(), name);
    } finally {
      fence();
    }
    return new NDArray(out[0], this);
  }
}
