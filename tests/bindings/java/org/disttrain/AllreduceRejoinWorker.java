package org.disttrain;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One worker of an "allreduce" job that dtrun starts with {@code --worker-loss continue
 * --max-restarts 1} (java_allreduce_rejoin): a Java loop of its own lets worker 1, started again in
 * its lost place, into the job with {@link KVStore#admitJoiningWorkers()} and hands it the next
 * round and the weights with {@link KVStore#handOverState(byte[])}. Every worker pushes rank + 1
 * into every element each round and subtracts the sum from its weights, so after R rounds, of which
 * worker 1 took part in K, every weight is INIT - 3 K - (R - K) exactly. The joined worker checks
 * that; both check that they end with the same weights. Exits non-zero on any mismatch.
 */
public final class AllreduceRejoinWorker {
  private AllreduceRejoinWorker() {}

  static final int ROUNDS = 200;
  static final int LEAVE = 5; // worker 1's rounds before its first process dies
  static final int N = 1000;
  static final float INIT = 100f;

  static byte[] encode(int round, float[] weights) {
    ByteBuffer state = ByteBuffer.allocate(4 * (1 + weights.length)).order(ByteOrder.LITTLE_ENDIAN);
    state.putInt(round);
    for (float w : weights) state.putFloat(w);
    return state.array();
  }

  static int decode(byte[] bytes, float[] weights) {
    if (bytes.length != 4 * (1 + weights.length)) {
      throw new AssertionError("handed " + bytes.length + " bytes, expected " + 4 * (1 + weights.length));
    }
    ByteBuffer state = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    int round = state.getInt();
    for (int i = 0; i < weights.length; ++i) weights[i] = state.getFloat();
    return round;
  }

  public static void main(String[] args) {
    try (Context ctx = Context.cpu();
        KVStore kv = KVStore.create("allreduce");
        NDArray pushed = NDArray.zeros(ctx, N);
        NDArray out = NDArray.zeros(ctx, N)) {
      int rank = kv.rank();
      boolean joined = kv.joinedRunningJob();
      float[] mine = new float[N];
      float[] weights = new float[N];
      java.util.Arrays.fill(mine, rank + 1);
      java.util.Arrays.fill(weights, INIT);
      pushed.copyFrom(mine);
      kv.init(new long[] {0, 1}, new NDArray[] {out, out});
      int first = 1;
      if (joined) {
        first = decode(kv.handOverState(null), weights);
        System.out.println("worker " + rank + " joined before round " + first);
        if (first <= LEAVE) throw new AssertionError("joined before round " + first);
      }
      for (int round = first; round <= ROUNDS; ++round) {
        if ((round > first || !joined) && kv.admitJoiningWorkers()) {
          byte[] handed = kv.handOverState(encode(round, weights));
          if (handed.length != 0) throw new AssertionError("a worker that held the state was handed some");
        }
        kv.pushPull(0, pushed, out);
        float[] sums = out.toFloatArray();
        for (int i = 0; i < N; ++i) weights[i] -= sums[i];
        if (rank == 1 && !joined && round == LEAVE) {
          System.out.println("worker 1 dies after round " + round);
          System.out.flush();
          Runtime.getRuntime().halt(3); // no goodbye: the job has lost it, and dtrun starts it again
        }
        Thread.sleep(50);
      }
      if (joined) {
        int together = LEAVE + ROUNDS - first + 1;
        float expected = INIT - 3f * together - (ROUNDS - together);
        if (weights[0] != expected) {
          throw new AssertionError("weights " + weights[0] + ", expected " + expected + " (worker 1 in "
              + together + " of " + ROUNDS + " rounds)");
        }
      }
      // Both hold the same weights: their sum is twice each one's.
      try (NDArray held = NDArray.fromArray(ctx, weights, N)) {
        kv.pushPull(1, held, out);
      }
      float[] sums = out.toFloatArray();
      for (int i = 0; i < N; ++i) {
        if (sums[i] != 2 * weights[i]) {
          throw new AssertionError("weight " + i + " is " + weights[i] + " here; the two sum to " + sums[i]);
        }
      }
      kv.barrier();
      System.out.println("worker " + rank + ": weights " + weights[0] + " after round " + ROUNDS + ", the same on both");
    } catch (Throwable t) {
      t.printStackTrace();
      System.exit(1);
    }
  }
}
