package org.disttrain;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The local kvstore through the binding: integer and string keys, lists, an optimizer. */
@Timeout(120)
class KVStoreTest {
  @Test
  void pushSumsAndPullBroadcasts() {
    try (Context ctx = Context.cpu();
        KVStore kv = KVStore.create("local");
        NDArray init = NDArray.fromArray(ctx, new float[] {1, 1, 1}, 3);
        NDArray a = NDArray.fromArray(ctx, new float[] {1, 2, 3}, 3);
        NDArray b = NDArray.fromArray(ctx, new float[] {10, 20, 30}, 3);
        NDArray out = NDArray.zeros(ctx, 3)) {
      assertEquals(0, kv.rank());
      assertEquals(1, kv.numWorkers());
      assertFalse(kv.joinedRunningJob());
      assertEquals(0L, kv.roundsBeforeJoining());
      // Only "allreduce" lets workers into a running job (AllreduceRejoinWorker).
      assertFalse(kv.admitJoiningWorkers());
      ErrorsTest.expect(Status.NOT_SUPPORTED, () -> kv.handOverState(new byte[] {1, 2, 3}));
      kv.init(7, init);
      kv.pull(7, out);
      assertArrayEquals(new float[] {1, 1, 1}, out.toFloatArray());
      // Values pushed under one key in one call are summed.
      kv.push(new long[] {7, 7}, new NDArray[] {a, b}, 0);
      kv.pull(7, out);
      assertArrayEquals(new float[] {11, 22, 33}, out.toFloatArray());
      kv.pushPull(7, a, out);
      assertArrayEquals(new float[] {1, 2, 3}, out.toFloatArray());
    }
  }

  @Test
  void stringKeysAndBroadcast() {
    try (Context ctx = Context.cpu();
        KVStore kv = KVStore.create("local");
        NDArray w = NDArray.fromArray(ctx, new float[] {4, 5}, 2);
        NDArray o1 = NDArray.zeros(ctx, 2);
        NDArray o2 = NDArray.zeros(ctx, 2)) {
      kv.broadcast(new long[] {1}, new NDArray[] {w}, new NDArray[] {o1});
      assertArrayEquals(new float[] {4, 5}, o1.toFloatArray());
      kv.init("fc1.weight", w);
      kv.pushPull(new String[] {"fc1.weight"}, new NDArray[] {w}, new NDArray[] {o2}, 1);
      assertArrayEquals(new float[] {4, 5}, o2.toFloatArray());
      kv.push("fc1.weight", o1.fill(1));
      kv.pull("fc1.weight", o2);
      assertArrayEquals(new float[] {1, 1}, o2.toFloatArray());
      kv.barrier();
    }
  }

  @Test
  void optimizerOnTheStore() {
    try (Context ctx = Context.cpu();
        KVStore kv = KVStore.create("local");
        Optimizer sgd = Optimizer.create("sgd").setDouble("learning_rate", 0.5);
        NDArray weight = NDArray.fromArray(ctx, new float[] {1, 1}, 2);
        NDArray grad = NDArray.fromArray(ctx, new float[] {2, 4}, 2);
        NDArray out = NDArray.zeros(ctx, 2)) {
      kv.setOptimizer(sgd);
      kv.init(0, weight);
      kv.pushPull(0, grad, out);
      assertArrayEquals(new float[] {0, -1}, out.toFloatArray(), 1e-6f);
    }
  }

  @Test
  void optionsCarryTheLibraryDefaults() {
    KVStore.Options o = new KVStore.Options();
    assertEquals(4000000L, o.bigarrayBoundBytes);
    try (KVStore kv = KVStore.create("local", o.requestTimeout(30))) {
      assertEquals("local", kv.type());
    }
  }
}
