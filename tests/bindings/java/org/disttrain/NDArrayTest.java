package org.disttrain;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Data in and out of arrays through every bulk path, and the array operations. */
@Timeout(120)
class NDArrayTest {
  static Context ctx;

  @BeforeAll
  static void open() {
    ctx = Context.cpu();
  }

  @AfterAll
  static void close() {
    ctx.close();
  }

  @Test
  void shapeAndSizes() {
    try (NDArray a = NDArray.create(ctx, DType.INT64, 2, 3, 4);
        NDArray scalar = NDArray.create(ctx, DType.FLOAT64)) {
      assertEquals(3, a.ndim());
      assertArrayEquals(new long[] {2, 3, 4}, a.shape());
      assertEquals(24, a.size());
      assertEquals(24 * 8, a.nbytes());
      assertEquals(DType.INT64, a.dtype());
      assertEquals(0, scalar.ndim());
      assertEquals(1, scalar.size());
    }
  }

  @Test
  void primitiveArraysRoundTrip() {
    float[] f = {1.5f, -2.25f, 3e-8f, Float.MAX_VALUE, 0f, -0f};
    try (NDArray a = NDArray.fromArray(ctx, f, 2, 3)) {
      assertArrayEquals(f, a.toFloatArray());
      float[] into = new float[6];
      a.copyTo(into);
      assertArrayEquals(f, into);
    }
    double[] d = {Math.PI, -Math.E, 1e300};
    try (NDArray a = NDArray.create(ctx, DType.FLOAT64, 3)) {
      assertArrayEquals(d, a.copyFrom(d).toDoubleArray());
    }
    int[] i = {Integer.MIN_VALUE, -1, 0, 7, Integer.MAX_VALUE};
    try (NDArray a = NDArray.create(ctx, DType.INT32, 5)) {
      assertArrayEquals(i, a.copyFrom(i).toIntArray());
    }
    long[] l = {Long.MIN_VALUE, -5, 1L << 40, Long.MAX_VALUE};
    try (NDArray a = NDArray.create(ctx, DType.INT64, 2, 2)) {
      assertArrayEquals(l, a.copyFrom(l).toLongArray());
    }
    byte[] u8 = {0, 1, (byte) 200, (byte) 255};
    try (NDArray a = NDArray.create(ctx, DType.UINT8, 4)) {
      assertArrayEquals(u8, a.copyFromBytes(u8).toBytes());
    }
    short[] half = {0x3c00, (short) 0xc000, 0x7bff};
    try (NDArray a = NDArray.create(ctx, DType.FLOAT16, 3);
        NDArray f32 = NDArray.create(ctx, DType.FLOAT32, 3)) {
      a.copyFrom(half);
      f32.castFrom(a);
      assertArrayEquals(new float[] {1f, -2f, 65504f}, f32.toFloatArray());
    }
  }

  @Test
  void rawBytesAreLittleEndianElements() {
    try (NDArray a = NDArray.fromArray(ctx, new float[] {1f, 2f}, 2)) {
      byte[] bytes = a.toBytes();
      ByteBuffer view = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
      assertEquals(1f, view.getFloat(0));
      assertEquals(2f, view.getFloat(4));
    }
  }

  @Test
  void directBuffersRoundTripFromTheirPosition() {
    ByteBuffer bytes = ByteBuffer.allocateDirect(4 * 10).order(ByteOrder.nativeOrder());
    FloatBuffer floats = bytes.asFloatBuffer();
    for (int k = 0; k < 10; ++k) floats.put(k, k * 0.5f);
    floats.position(4); // the six elements 4..9
    try (NDArray a = NDArray.zeros(ctx, 6)) {
      a.copyFrom(floats);
      assertEquals(4, floats.position());
      assertArrayEquals(new float[] {2f, 2.5f, 3f, 3.5f, 4f, 4.5f}, a.toFloatArray());
      a.scale(2);
      FloatBuffer out = ByteBuffer.allocateDirect(24).order(ByteOrder.nativeOrder()).asFloatBuffer();
      a.copyTo(out);
      assertEquals(9f, out.get(5));
      ByteBuffer raw = ByteBuffer.allocateDirect(24);
      a.copyTo(raw);
      raw.order(ByteOrder.nativeOrder());
      assertEquals(4f, raw.getFloat(0));
    }
    try (NDArray i = NDArray.create(ctx, DType.INT32, 3)) {
      IntBuffer ints = ByteBuffer.allocateDirect(12).order(ByteOrder.nativeOrder()).asIntBuffer();
      ints.put(new int[] {7, 8, 9}).flip();
      assertArrayEquals(new int[] {7, 8, 9}, i.copyFrom(ints).toIntArray());
    }
  }

  @Test
  void viewsShareStorage() {
    try (NDArray a = NDArray.fromArray(ctx, new float[] {1, 2, 3, 4, 5, 6}, 3, 2);
        NDArray rows = a.slice(1, 3);
        NDArray flat = a.reshape(-1)) {
      assertArrayEquals(new long[] {2, 2}, rows.shape());
      assertArrayEquals(new long[] {6}, flat.shape());
      rows.fill(0);
      assertArrayEquals(new float[] {1, 2, 0, 0, 0, 0}, flat.toFloatArray());
    }
  }

  @Test
  void arithmeticAndCopies() {
    try (NDArray x = NDArray.fromArray(ctx, new float[] {1, 2, 3}, 3);
        NDArray y = NDArray.fromArray(ctx, new float[] {10, 20, 30}, 3);
        NDArray z = NDArray.zeros(ctx, 3);
        NDArray n = NDArray.create(ctx, DType.INT32, 3)) {
      NDArray.add(z, x, y);
      assertArrayEquals(new float[] {11, 22, 33}, z.toFloatArray());
      y.axpy(-2, x);
      assertArrayEquals(new float[] {8, 16, 24}, y.toFloatArray());
      z.copyFrom(x).scale(-1.5);
      assertArrayEquals(new float[] {-1.5f, -3f, -4.5f}, z.toFloatArray());
      n.castFrom(z);
      assertArrayEquals(new int[] {-1, -3, -4}, n.toIntArray());
    }
  }

  @Test
  void saveAndLoadSafetensors() throws Exception {
    Path file = Files.createTempFile("dt-java-nd", ".safetensors");
    try (NDArray w = NDArray.fromArray(ctx, new float[] {0.5f, 1.5f, 2.5f, 3.5f}, 2, 2);
        NDArray ids = NDArray.create(ctx, DType.INT64, 3)) {
      ids.copyFrom(new long[] {4, 5, 6});
      Map<String, NDArray> arrays = new LinkedHashMap<>();
      arrays.put("weight", w);
      arrays.put("ids", ids);
      NDArray.save(file.toString(), arrays);
      try (NamedArrays list = NamedArrays.load(ctx, file.toString());
          NDArray w2 = list.get("weight");
          NDArray ids2 = list.get("ids")) {
        assertEquals(2, list.size());
        assertEquals(java.util.Arrays.asList("weight", "ids"), list.names());
        assertArrayEquals(new long[] {2, 2}, w2.shape());
        assertArrayEquals(w.toFloatArray(), w2.toFloatArray());
        assertArrayEquals(new long[] {4, 5, 6}, ids2.toLongArray());
      }
    } finally {
      Files.deleteIfExists(file);
    }
  }
}
