package org.disttrain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The device calls the training examples' --gpus and --cpus rest on. */
@Timeout(120)
class ContextsTest {
  static final String MLP = "{\"input_shape\": [1, 28, 28], \"hidden\": [32], \"classes\": 10}";

  @Test
  void gpuCountBoundsGpuContexts() {
    int n = Disttrain.gpuCount();
    assertTrue(n >= 0);
    DtException e = assertThrows(DtException.class, () -> Context.gpu(n).close());
    if (n > 0) {
      assertEquals(Status.NO_DEVICE, e.status());
    } else {
      assertTrue(e.status() == Status.NO_DEVICE || e.status() == Status.NOT_SUPPORTED, e.toString());
    }
  }

  /** The allocator's counts follow arrays in and out; the peak stays until it is reset. */
  @Test
  void memoryStatsFollowArrays() {
    try (Context ctx = Context.cpu()) {
      MemoryStats empty = ctx.memoryStats();
      assertEquals(0, empty.inUseBytes);
      assertEquals(0, empty.allocations);
      try (NDArray a = NDArray.create(ctx, DType.FLOAT32, 1024);
          NDArray b = NDArray.create(ctx, DType.FLOAT32, 2048)) {
        MemoryStats both = ctx.memoryStats();
        assertEquals(a.nbytes() + b.nbytes(), both.inUseBytes);
        assertEquals(4096 + 8192, both.peakBytes);
        assertEquals(0, both.cachedBytes);
        assertEquals(2, both.allocations);
      }
      MemoryStats after = ctx.memoryStats();
      assertEquals(0, after.inUseBytes);
      assertEquals(4096 + 8192, after.peakBytes);
      assertEquals(0, ctx.resetPeakMemory().memoryStats().peakBytes);
    }
    Context closed = Context.cpu();
    closed.close();
    assertThrows(RuntimeException.class, closed::memoryStats);
  }

  /** An MLP from seed 5 after `steps` batches of 64, its net on contexts[0]; the first weight. */
  static float[] train(Context[] contexts, int steps) {
    Context[] extra = java.util.Arrays.copyOfRange(contexts, 1, contexts.length);
    try (Net net = Net.create(contexts[0], "mlp", MLP).initialize(5);
        Optimizer opt = Optimizer.create("sgd").setDouble("learning_rate", 0.1);
        Trainer trainer = Trainer.create(net, opt, null, new Trainer.Options().extraContexts(extra));
        DataLoader train = DataLoader.mnist(null, "train", new DataLoader.Options().batchSize(64).seed(3))) {
      train.startEpoch(0);
      for (int step = 0; step < steps; ++step) {
        try (DataLoader.Batch batch = train.next()) {
          trainer.trainBatch(batch.data(), batch.labels());
        }
      }
      try (NDArray w = net.param(0)) {
        return w.toFloatArray();
      }
    }
  }

  /** Extra contexts split every batch (split_and_load): two CPU replicas step as one does, up to rounding. */
  @Test
  void extraContextsSplitTheBatch() {
    float[] initial;
    float[] one;
    float[] two;
    try (Context a = Context.cpu().setNumThreads(1);
        Context b = Context.cpu().setNumThreads(1);
        Net net = Net.create(a, "mlp", MLP).initialize(5);
        NDArray w = net.param(0)) {
      initial = w.toFloatArray();
      one = train(new Context[] {a}, 10);
      two = train(new Context[] {a, b}, 10);
    }
    double moved = 0;
    double differs = 0;
    for (int i = 0; i < one.length; ++i) {
      moved = Math.max(moved, Math.abs(one[i] - initial[i]));
      differs = Math.max(differs, Math.abs(one[i] - two[i]));
    }
    assertTrue(moved > 1e-3, "training moved the weights by at most " + moved);
    assertTrue(differs < 1e-4, "two replicas end " + differs + " away from one (moved up to " + moved + ")");
  }
}
