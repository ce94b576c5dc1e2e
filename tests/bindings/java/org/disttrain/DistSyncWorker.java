package org.disttrain;

import java.util.Arrays;

/**
 * One worker of a dist_sync job started by dtrun (tests/bindings/java):
 * every worker pushes rank-dependent values and checks that the pulled
 * result is the sum over all workers. Exits non-zero on any mismatch, so
 * dtrun (and the test) fails.
 */
public final class DistSyncWorker {
  private DistSyncWorker() {}

  static float[] contribution(int rank, int n, float scale) {
    float[] v = new float[n];
    for (int i = 0; i < n; ++i) v[i] = scale * (rank + 1) + i;
    return v;
  }

  static void check(String what, float[] expected, float[] actual) {
    for (int i = 0; i < expected.length; ++i) {
      if (Math.abs(expected[i] - actual[i]) > 1e-4f * Math.max(1f, Math.abs(expected[i]))) {
        throw new AssertionError(what + ": element " + i + " is " + actual[i] + ", expected " + expected[i]
            + " (got " + Arrays.toString(Arrays.copyOf(actual, Math.min(8, actual.length))) + "...)");
      }
    }
  }

  public static void main(String[] args) {
    final int n = 1000;
    try (Context ctx = Context.cpu();
        KVStore kv = KVStore.create("dist_sync", new KVStore.Options().requestTimeout(60));
        NDArray value = NDArray.zeros(ctx, n);
        NDArray out = NDArray.zeros(ctx, n)) {
      int rank = kv.rank();
      int workers = kv.numWorkers();
      if (!"dist_sync".equals(kv.type())) throw new AssertionError("type " + kv.type());
      if (workers != 2) throw new AssertionError("expected 2 workers, got " + workers);

      kv.init(5, value);
      kv.init("java.weight", value);
      for (int round = 1; round <= 3; ++round) {
        float[] expected = new float[n];
        for (int r = 0; r < workers; ++r) {
          float[] c = contribution(r, n, round);
          for (int i = 0; i < n; ++i) expected[i] += c[i];
        }
        value.copyFrom(contribution(rank, n, round));
        kv.pushPull(5, value, out);
        check("round " + round + " int key", expected, out.toFloatArray());
        kv.pushPull("java.weight", value, out);
        check("round " + round + " string key", expected, out.toFloatArray());
      }
      kv.barrier();
      System.out.println("worker " + rank + " of " + workers + ": dist_sync pushpull sums OK");
    } catch (Throwable t) {
      t.printStackTrace();
      System.exit(1);
    }
  }
}
