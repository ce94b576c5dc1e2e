package org.disttrain;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Native memory does not grow when arrays are created and closed; the cleaner catches unclosed ones. */
@Timeout(120)
class LeakTest {
  /**
   * 8 MiB. Each array holds 4 KiB, so 10,000 leaked arrays would be over
   * 40 MiB. The test JVM runs with a fixed, pre-touched heap
   * (-Xms = -Xmx, -XX:+AlwaysPreTouch), so heap resizing does not move RSS.
   */
  static final long BOUND_BYTES = 8L << 20;
  static final int COUNT = 10_000;

  /** Resident set size from /proc/self/statm (second field, in pages). */
  static long rssBytes() throws Exception {
    String[] fields = new String(Files.readAllBytes(Paths.get("/proc/self/statm"))).trim().split("\\s+");
    return Long.parseLong(fields[1]) * 4096L;
  }

  static void createAndClose(Context ctx, int count) {
    float[] data = new float[1024];
    for (int i = 0; i < count; ++i) {
      try (NDArray a = NDArray.zeros(ctx, 1024)) {
        a.copyFrom(data);
      }
    }
  }

  @Test
  void tenThousandArraysDoNotGrowTheProcess() throws Exception {
    try (Context ctx = Context.cpu()) {
      // Warm-up: JIT, allocator arenas, the handle registry's table.
      createAndClose(ctx, COUNT);
      System.gc();
      long before = rssBytes();
      createAndClose(ctx, COUNT);
      System.gc();
      long after = rssBytes();
      long growth = after - before;
      System.out.println("LeakTest: RSS " + before + " -> " + after + " bytes (growth " + growth
          + ", bound " + BOUND_BYTES + ")");
      assertTrue(growth < BOUND_BYTES, "RSS grew by " + growth + " bytes over " + COUNT + " arrays");
    }
  }

  @Test
  void theCleanerFreesAndReportsAnUnclosedArray() throws Exception {
    long leakedBefore = NativeHandle.leakedCount();
    try (Context ctx = Context.cpu()) {
      for (int i = 0; i < 4; ++i) NDArray.zeros(ctx, 16); // never closed, on purpose
    }
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (NativeHandle.leakedCount() < leakedBefore + 4 && System.nanoTime() < deadline) {
      System.gc();
      Thread.sleep(50);
    }
    assertTrue(NativeHandle.leakedCount() >= leakedBefore + 4,
        "the cleaner reported " + (NativeHandle.leakedCount() - leakedBefore) + " of 4 unclosed arrays in 30 s");
  }
}
