package org.disttrain;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;
import java.util.Arrays;
import java.util.Map;

/**
 * An n-dimensional, dense, row-major tensor on a context.
 *
 * Data moves in and out by copy only: from and to Java primitive arrays of the
 * array's element type, raw bytes ({@code byte[]}, {@code ByteBuffer}), or
 * direct buffers. The byte count is that of the Java memory and C checks it
 * against the array's size; no native code keeps a pointer into Java memory
 * after a call returns.
 */
public final class NDArray extends NativeHandle {
  private final DType dtype;

  /** Wraps a new handle; parent is what the array keeps alive (its context, source array, net, ...). */
  NDArray(long handle, Object parent) {
    super("NDArray", handle, disttrain::dt_ndarray_free, parent);
    int[] out = new int[1];
    try {
      disttrain.dt_ndarray_dtype(out, handle);
    } catch (DtException e) {
      close();
      throw e;
    }
    this.dtype = DType.fromCode(out[0]);
  }

  /** A zero-filled array; an empty shape is a scalar. */
  public static NDArray create(Context ctx, DType dtype, long... shape) {
    if (dtype == null) throw new DtException(Status.INVALID_ARGUMENT, "dtype must not be null");
    long[] out = new long[1];
    try {
      disttrain.dt_ndarray_create(out, handleOf(ctx, "context"), dtype.code(), shape == null ? new long[0] : shape);
    } finally {
      keepAlive(ctx);
    }
    return new NDArray(out[0], ctx);
  }

  /** A zero-filled float32 array. */
  public static NDArray zeros(Context ctx, long... shape) {
    return create(ctx, DType.FLOAT32, shape);
  }

  /** A float32 array holding data; data.length must equal the shape's element count. */
  public static NDArray fromArray(Context ctx, float[] data, long... shape) {
    NDArray array = create(ctx, DType.FLOAT32, shape);
    try {
      array.copyFrom(data);
    } catch (RuntimeException e) {
      array.close();
      throw e;
    }
    return array;
  }

  public DType dtype() {
    handle();
    return dtype;
  }

  public int ndim() {
    long[] out = new long[1];
    try {
      disttrain.dt_ndarray_ndim(out, handle());
    } finally {
      fence();
    }
    return (int) out[0];
  }

  public long[] shape() {
    long[] dims = new long[ndim()];
    try {
      disttrain.dt_ndarray_shape(dims, handle());
    } finally {
      fence();
    }
    return dims;
  }

  /** Number of elements (1 for a scalar). */
  public long size() {
    long[] out = new long[1];
    try {
      disttrain.dt_ndarray_size(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  public long nbytes() {
    long[] out = new long[1];
    try {
      disttrain.dt_ndarray_nbytes(out, handle());
    } finally {
      fence();
    }
    return out[0];
  }

  /** A new Context handle for the array's device; the caller closes it. */
  public Context context() {
    long[] out = new long[1];
    try {
      disttrain.dt_ndarray_context(out, handle());
    } finally {
      fence();
    }
    return new Context(out[0]);
  }

  private void requireDType(DType expected, String javaType) {
    if (dtype() != expected) {
      throw new DtException(Status.DTYPE_MISMATCH,
          "NDArray: " + javaType + " data needs a " + expected + " array, this one is " + dtype);
    }
  }

  // ---- copies in -------------------------------------------------------

  public NDArray copyFrom(float[] data) {
    requireDType(DType.FLOAT32, "float[]");
    try {
      disttrain.dtj_ndarray_copy_from_floats(handle(), data);
    } finally {
      fence();
    }
    return this;
  }

  public NDArray copyFrom(double[] data) {
    requireDType(DType.FLOAT64, "double[]");
    try {
      disttrain.dtj_ndarray_copy_from_doubles(handle(), data);
    } finally {
      fence();
    }
    return this;
  }

  public NDArray copyFrom(int[] data) {
    requireDType(DType.INT32, "int[]");
    try {
      disttrain.dtj_ndarray_copy_from_ints(handle(), data);
    } finally {
      fence();
    }
    return this;
  }

  public NDArray copyFrom(long[] data) {
    requireDType(DType.INT64, "long[]");
    try {
      disttrain.dtj_ndarray_copy_from_longs(handle(), data);
    } finally {
      fence();
    }
    return this;
  }

  /** The raw bit patterns of a FLOAT16 or BFLOAT16 array. */
  public NDArray copyFrom(short[] data) {
    if (dtype() != DType.FLOAT16 && dtype() != DType.BFLOAT16) {
      throw new DtException(Status.DTYPE_MISMATCH,
          "NDArray: short[] data needs a FLOAT16 or BFLOAT16 array, this one is " + dtype);
    }
    try {
      disttrain.dtj_ndarray_copy_from_shorts(handle(), data);
    } finally {
      fence();
    }
    return this;
  }

  /** Raw little-endian bytes, for any dtype; data.length must equal nbytes(). */
  public NDArray copyFromBytes(byte[] data) {
    try {
      disttrain.dtj_ndarray_copy_from_bytes(handle(), data);
    } finally {
      fence();
    }
    return this;
  }

  /**
   * From a direct buffer's remaining elements (position to limit), which
   * must hold exactly nbytes() bytes. A ByteBuffer is raw bytes for any
   * dtype; a typed view (FloatBuffer, ...) must match the dtype's element
   * type and use the native byte order. The position is not changed.
   */
  public NDArray copyFrom(Buffer source) {
    Buffer slice = directSlice(source);
    try {
      disttrain.dt_ndarray_copy_from_host(handle(), slice);
    } finally {
      fence();
    }
    return this;
  }

  /** dst = src: same dtype and shape, any devices. */
  public NDArray copyFrom(NDArray source) {
    try {
      disttrain.dt_ndarray_copy(handle(), handleOf(source, "source"));
    } finally {
      fence();
      keepAlive(source);
    }
    return this;
  }

  // ---- copies out ------------------------------------------------------

  private int elementCount() {
    long n = size();
    if (n > Integer.MAX_VALUE - 8) {
      throw new DtException(Status.INVALID_ARGUMENT, "NDArray of " + n + " elements does not fit a Java array");
    }
    return (int) n;
  }

  public float[] toFloatArray() {
    requireDType(DType.FLOAT32, "float[]");
    float[] out = new float[elementCount()];
    copyTo(out);
    return out;
  }

  public double[] toDoubleArray() {
    requireDType(DType.FLOAT64, "double[]");
    double[] out = new double[elementCount()];
    copyTo(out);
    return out;
  }

  public int[] toIntArray() {
    requireDType(DType.INT32, "int[]");
    int[] out = new int[elementCount()];
    copyTo(out);
    return out;
  }

  public long[] toLongArray() {
    requireDType(DType.INT64, "long[]");
    long[] out = new long[elementCount()];
    copyTo(out);
    return out;
  }

  /** The raw little-endian bytes, for any dtype. */
  public byte[] toBytes() {
    long n = nbytes();
    if (n > Integer.MAX_VALUE - 8) {
      throw new DtException(Status.INVALID_ARGUMENT, "NDArray of " + n + " bytes does not fit a Java array");
    }
    byte[] out = new byte[(int) n];
    try {
      disttrain.dtj_ndarray_copy_to_bytes(out, handle());
    } finally {
      fence();
    }
    return out;
  }

  /** Into an existing array of exactly size() elements (no allocation per call). */
  public void copyTo(float[] out) {
    requireDType(DType.FLOAT32, "float[]");
    try {
      disttrain.dtj_ndarray_copy_to_floats(out, handle());
    } finally {
      fence();
    }
  }

  public void copyTo(double[] out) {
    requireDType(DType.FLOAT64, "double[]");
    try {
      disttrain.dtj_ndarray_copy_to_doubles(out, handle());
    } finally {
      fence();
    }
  }

  public void copyTo(int[] out) {
    requireDType(DType.INT32, "int[]");
    try {
      disttrain.dtj_ndarray_copy_to_ints(out, handle());
    } finally {
      fence();
    }
  }

  public void copyTo(long[] out) {
    requireDType(DType.INT64, "long[]");
    try {
      disttrain.dtj_ndarray_copy_to_longs(out, handle());
    } finally {
      fence();
    }
  }

  /** Into a direct buffer's remaining elements; see {@link #copyFrom(Buffer)}. */
  public void copyTo(Buffer destination) {
    if (destination != null && destination.isReadOnly()) {
      throw new DtException(Status.INVALID_ARGUMENT, "NDArray.copyTo: the buffer is read-only");
    }
    Buffer slice = directSlice(destination);
    try {
      disttrain.dt_ndarray_copy_to_host(slice, handle());
    } finally {
      fence();
    }
  }

  private Buffer directSlice(Buffer buffer) {
    if (buffer == null) throw new DtException(Status.INVALID_ARGUMENT, "NDArray: buffer must not be null");
    if (!buffer.isDirect()) {
      throw new DtException(Status.INVALID_ARGUMENT,
          "NDArray: the buffer must be direct (ByteBuffer.allocateDirect); use a Java array otherwise");
    }
    if (buffer instanceof ByteBuffer) return ((ByteBuffer) buffer).slice();
    DType wanted;
    ByteOrder order;
    Buffer slice;
    if (buffer instanceof FloatBuffer) {
      wanted = DType.FLOAT32;
      order = ((FloatBuffer) buffer).order();
      slice = ((FloatBuffer) buffer).slice();
    } else if (buffer instanceof DoubleBuffer) {
      wanted = DType.FLOAT64;
      order = ((DoubleBuffer) buffer).order();
      slice = ((DoubleBuffer) buffer).slice();
    } else if (buffer instanceof IntBuffer) {
      wanted = DType.INT32;
      order = ((IntBuffer) buffer).order();
      slice = ((IntBuffer) buffer).slice();
    } else if (buffer instanceof LongBuffer) {
      wanted = DType.INT64;
      order = ((LongBuffer) buffer).order();
      slice = ((LongBuffer) buffer).slice();
    } else if (buffer instanceof ShortBuffer) {
      wanted = dtype() == DType.BFLOAT16 ? DType.BFLOAT16 : DType.FLOAT16;
      order = ((ShortBuffer) buffer).order();
      slice = ((ShortBuffer) buffer).slice();
    } else {
      throw new DtException(Status.INVALID_ARGUMENT,
          "NDArray: unsupported buffer type " + buffer.getClass().getSimpleName()
              + (buffer instanceof CharBuffer ? " (use a ShortBuffer for 16-bit data)" : ""));
    }
    requireDType(wanted, buffer.getClass().getSimpleName());
    if (order != ByteOrder.nativeOrder()) {
      throw new DtException(Status.INVALID_ARGUMENT,
          "NDArray: the buffer's byte order is " + order + "; set ByteOrder.nativeOrder() on the ByteBuffer before the view");
    }
    return slice;
  }

  // ---- arithmetic and views ---------------------------------------------

  /** Sets every element to value (converted to the dtype). */
  public NDArray fill(double value) {
    try {
      disttrain.dt_ndarray_fill(handle(), value);
    } finally {
      fence();
    }
    return this;
  }

  /** A view with a new shape sharing this array's storage; one dim may be -1. */
  public NDArray reshape(long... shape) {
    long[] out = new long[1];
    try {
      disttrain.dt_ndarray_reshape(out, handle(), shape == null ? new long[0] : shape);
    } finally {
      fence();
    }
    return new NDArray(out[0], this);
  }

  /** A view of rows [begin, end) along the first axis. */
  public NDArray slice(long begin, long end) {
    long[] out = new long[1];
    try {
      disttrain.dt_ndarray_slice(out, handle(), begin, end);
    } finally {
      fence();
    }
    return new NDArray(out[0], this);
  }

  /** out = a + b (floating point, one dtype and shape; out may alias a or b). */
  public static void add(NDArray out, NDArray a, NDArray b) {
    try {
      disttrain.dt_ndarray_add(handleOf(out, "out"), handleOf(a, "a"), handleOf(b, "b"));
    } finally {
      keepAlive(out);
      keepAlive(a);
      keepAlive(b);
    }
  }

  /** this = alpha * this */
  public NDArray scale(double alpha) {
    try {
      disttrain.dt_ndarray_scale(handle(), alpha);
    } finally {
      fence();
    }
    return this;
  }

  /** this = this + alpha * x */
  public NDArray axpy(double alpha, NDArray x) {
    try {
      disttrain.dt_ndarray_axpy(handle(), alpha, handleOf(x, "x"));
    } finally {
      fence();
      keepAlive(x);
    }
    return this;
  }

  /** this = source converted to this array's dtype (same shape and context). */
  public NDArray castFrom(NDArray source) {
    try {
      disttrain.dt_ndarray_cast(handle(), handleOf(source, "source"));
    } finally {
      fence();
      keepAlive(source);
    }
    return this;
  }

  /** Writes the arrays, in the map's iteration order, to a safetensors file. */
  public static void save(String path, Map<String, NDArray> arrays) {
    if (arrays == null) throw new DtException(Status.INVALID_ARGUMENT, "arrays must not be null");
    String[] names = new String[arrays.size()];
    NDArray[] values = new NDArray[arrays.size()];
    int i = 0;
    for (Map.Entry<String, NDArray> e : arrays.entrySet()) {
      names[i] = e.getKey();
      values[i] = e.getValue();
      ++i;
    }
    save(path, names, values);
  }

  public static void save(String path, String[] names, NDArray[] arrays) {
    if (names == null || arrays == null || names.length != arrays.length) {
      throw new DtException(Status.INVALID_ARGUMENT, "NDArray.save: names and arrays must be non-null and of one length");
    }
    try {
      disttrain.dt_ndarray_save(path, names, handlesOf(arrays, "arrays"), arrays.length);
    } finally {
      keepAlive(arrays);
    }
  }

  @Override
  public String toString() {
    if (isClosed()) return "NDArray(closed)";
    return "NDArray(" + dtype + ", " + Arrays.toString(shape()) + ")";
  }
}
