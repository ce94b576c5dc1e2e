package org.disttrain;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

/** One error path per handle family, surfacing as DtException with the C status. */
@Timeout(120)
class ErrorsTest {
  static DtException expect(Status status, Executable call) {
    DtException e = assertThrows(DtException.class, call);
    assertEquals(status, e.status(), e.toString());
    assertTrue(!e.getMessage().isEmpty(), "an empty message");
    return e;
  }

  @Test
  void contextGpuWithoutOne() {
    if (Disttrain.gpuCount() > 0) {
      expect(Status.NO_DEVICE, () -> Context.gpu(Disttrain.gpuCount() + 7).close());
    } else {
      DtException e = assertThrows(DtException.class, () -> Context.gpu(0).close());
      assertTrue(e.status() == Status.NOT_SUPPORTED || e.status() == Status.NO_DEVICE, e.toString());
    }
  }

  @Test
  void ndarrayBadShapes() {
    try (Context ctx = Context.cpu()) {
      DtException e = expect(Status.INVALID_ARGUMENT, () -> NDArray.zeros(ctx, 2, -3).close());
      assertTrue(e.getMessage().contains("dt_ndarray_create"), e.getMessage());
      expect(Status.INVALID_ARGUMENT, () -> NDArray.zeros(ctx, 1, 1, 1, 1, 1, 1, 1, 1, 1).close());
      try (NDArray a = NDArray.zeros(ctx, 2, 3)) {
        expect(Status.SHAPE_MISMATCH, () -> a.reshape(4, 2).close());
        expect(Status.SHAPE_MISMATCH, () -> a.copyFrom(new float[5]));
        expect(Status.SHAPE_MISMATCH, () -> a.copyFrom(new float[7]));
        expect(Status.SHAPE_MISMATCH, () -> a.copyTo(new float[5]));
        expect(Status.SHAPE_MISMATCH, () -> a.copyFromBytes(new byte[23]));
        expect(Status.DTYPE_MISMATCH, () -> a.copyFrom(new int[6]));
        expect(Status.DTYPE_MISMATCH, a::toDoubleArray);
        expect(Status.INVALID_ARGUMENT, () -> a.slice(1, 5).close());
        // Capacity of a direct buffer is checked in C against the array.
        ByteBuffer small = ByteBuffer.allocateDirect(20).order(ByteOrder.nativeOrder());
        expect(Status.SHAPE_MISMATCH, () -> a.copyFrom(small));
        expect(Status.SHAPE_MISMATCH, () -> a.copyTo(small.asFloatBuffer()));
        // Not direct, or not the native byte order: refused before C.
        expect(Status.INVALID_ARGUMENT, () -> a.copyFrom(FloatBuffer.allocate(6)));
        FloatBuffer bigEndian = ByteBuffer.allocateDirect(24).order(ByteOrder.BIG_ENDIAN).asFloatBuffer();
        if (ByteOrder.nativeOrder() != ByteOrder.BIG_ENDIAN) {
          expect(Status.INVALID_ARGUMENT, () -> a.copyFrom(bigEndian));
        }
        try (NDArray b = NDArray.zeros(ctx, 3, 2)) {
          expect(Status.SHAPE_MISMATCH, () -> NDArray.add(a, a, b));
        }
        try (NDArray i = NDArray.create(ctx, DType.INT32, 2, 3)) {
          expect(Status.DTYPE_MISMATCH, () -> a.copyFrom(i));
        }
      }
    }
  }

  @Test
  void kvstoreUnknownTypeAndBadCalls() {
    DtException e = expect(Status.INVALID_ARGUMENT, () -> KVStore.create("nope").close());
    assertTrue(e.getMessage().contains("nope"), e.getMessage());
    try (Context ctx = Context.cpu();
        KVStore kv = KVStore.create("local");
        NDArray a = NDArray.zeros(ctx, 4);
        NDArray b = NDArray.zeros(ctx, 4)) {
      expect(Status.INVALID_ARGUMENT, () -> kv.init(new long[] {1, 2}, new NDArray[] {a}));
      expect(Status.INVALID_ARGUMENT, () -> kv.pushPull(new long[] {1}, new NDArray[] {a}, new NDArray[] {a, b}, 0));
      expect(Status.INVALID_ARGUMENT, () -> kv.init(new long[] {1}, new NDArray[] {null}));
      // Keys must be below 2^63: a negative Java long is not.
      expect(Status.INVALID_ARGUMENT, () -> kv.init(-1L, a));
      kv.init(3, a);
      try (NDArray wrong = NDArray.zeros(ctx, 5)) {
        expect(Status.SHAPE_MISMATCH, () -> kv.pushPull(3, wrong, wrong));
      }
      expect(Status.NOT_FOUND, () -> kv.pull(99, b));
      expect(Status.NOT_SUPPORTED, () -> kv.setGradientCompression("2bit:threshold=0.5"));
    }
    // MXNet's names, case-insensitive.
    try (KVStore kv = KVStore.create("Local_Update_CPU")) {
      assertEquals("local", kv.type());
    }
  }

  @Test
  void netErrors() {
    try (Context ctx = Context.cpu()) {
      expect(Status.INVALID_ARGUMENT, () -> Net.create(ctx, "vgg16").close());
      expect(Status.INVALID_ARGUMENT, () -> Net.create(ctx, "lenet", "{\"classes\": ").close());
      try (Net net = Net.create(ctx, "lenet")) {
        expect(Status.NOT_FOUND, () -> net.findParam("no.such.param"));
        expect(Status.NOT_FOUND, () -> net.loadParams("/nonexistent/dt-java.safetensors"));
        try (NDArray bad = NDArray.zeros(ctx, 2, 3, 28, 28)) {
          assertThrows(DtException.class, () -> net.forward(true, bad));
        }
      }
    }
  }

  @Test
  void computeDtypeOnACpuNet() {
    try (Context ctx = Context.cpu();
        Net net = Net.create(ctx, "lenet")) {
      assertEquals(DType.FLOAT32, net.computeDtype());
      assertEquals(1.0, net.lossScale());
      // Mixed precision is a GPU feature: the CPU net refuses 16-bit compute.
      DtException e = expect(Status.NOT_SUPPORTED, () -> net.setComputeDtype(DType.FLOAT16));
      assertTrue(e.getMessage().contains("dt_net_set_compute_dtype"), e.getMessage());
      expect(Status.NOT_SUPPORTED, () -> net.setComputeDtype(DType.BFLOAT16));
      expect(Status.INVALID_ARGUMENT, () -> net.setComputeDtype(DType.INT32));
      expect(Status.INVALID_ARGUMENT, () -> net.setComputeDtype(DType.FLOAT64));
      expect(Status.INVALID_ARGUMENT, () -> net.setComputeDtype(null));
      // A value outside dt_dtype, which the enum cannot express, is checked in C.
      expect(Status.INVALID_ARGUMENT, () -> disttrain.dt_net_set_compute_dtype(net.handle(), 99));
      assertEquals(DType.FLOAT32, net.computeDtype());
      assertEquals(1.0, net.lossScale());
      assertTrue(net.setComputeDtype(DType.FLOAT32) == net);
    }
  }

  @Test
  void lossScalingOnACpuNet() {
    Net.LossScalingOptions defaults = new Net.LossScalingOptions();
    assertTrue(defaults.enabled);
    assertEquals(65536.0, defaults.initScale);
    assertEquals(2.0, defaults.growthFactor);
    assertEquals(0.5, defaults.backoffFactor);
    assertEquals(2000L, defaults.growthInterval);
    try (Context ctx = Context.cpu();
        Net net = Net.create(ctx, "lenet")) {
      // A float32 net reports a disabled scaler with the defaults.
      Net.LossScalingOptions current = net.lossScaling();
      assertTrue(!current.enabled, current.toString());
      assertEquals(65536.0, current.initScale);
      assertEquals(2000L, current.growthInterval);
      // It has nothing to scale: enabling is refused, disabling is a no-op.
      DtException e = expect(Status.INVALID_ARGUMENT, () -> net.setLossScaling(defaults));
      assertTrue(e.getMessage().contains("dt_net_set_loss_scaling"), e.getMessage());
      assertTrue(e.getMessage().contains("float32"), e.getMessage());
      assertTrue(net.setLossScaling(new Net.LossScalingOptions().enabled(false)) == net);
      assertEquals(1.0, net.lossScale());
      expect(Status.INVALID_ARGUMENT, () -> net.setLossScaling(null));
      // Out-of-range fields are refused by name (before the dtype is looked at).
      String[][] cases = {{"initScale", "init_scale"}, {"growthFactor", "growth_factor"},
          {"backoffFactor", "backoff_factor"}, {"growthInterval", "growth_interval"}};
      Net.LossScalingOptions[] bad = {new Net.LossScalingOptions().initScale(0.0),
          new Net.LossScalingOptions().growthFactor(1.0), new Net.LossScalingOptions().backoffFactor(1.5),
          new Net.LossScalingOptions().growthInterval(0)};
      for (int i = 0; i < bad.length; ++i) {
        Net.LossScalingOptions options = bad[i];
        DtException b = expect(Status.INVALID_ARGUMENT, () -> net.setLossScaling(options));
        assertTrue(b.getMessage().contains(cases[i][1]), cases[i][0] + ": " + b.getMessage());
      }
      assertTrue(!net.lossScaling().enabled);
    }
  }

  @Test
  void optimizerErrors() {
    expect(Status.INVALID_ARGUMENT, () -> Optimizer.create("nope").close());
    try (Optimizer opt = Optimizer.create("sgd")) {
      expect(Status.INVALID_ARGUMENT, () -> opt.setDouble("no_such_key", 1.0));
      expect(Status.INVALID_ARGUMENT, () -> opt.setDouble("learning_rate", -1.0));
      expect(Status.INVALID_ARGUMENT, () -> Optimizer.fromJson("{not json").close());
    }
  }

  @Test
  void dataLoaderErrors() {
    expect(Status.NOT_FOUND, () -> DataLoader.mnist("/nonexistent/dt-java", "t10k", null).close());
    expect(Status.INVALID_ARGUMENT, () -> DataLoader.mnist(null, "valid", null).close());
    expect(Status.NOT_FOUND, () -> DataLoader.recordio("/nonexistent/dt-java.rec", null, 32, 32, null).close());
    try (DataLoader loader = DataLoader.mnist(null, "t10k", null)) {
      expect(Status.BAD_STATE, loader::next);
      expect(Status.INVALID_ARGUMENT, () -> loader.startEpoch(-1));
    }
  }

  @Test
  void trainerAndNamedArraysErrors() {
    try (Context ctx = Context.cpu();
        Net net = Net.create(ctx, "lenet");
        Optimizer opt = Optimizer.create("sgd")) {
      net.initialize(1);
      try (Trainer trainer = Trainer.create(net, opt, null)) {
        expect(Status.NOT_FOUND, () -> trainer.loadCheckpoint("/nonexistent/dt-java-ckpt.safetensors"));
      }
      expect(Status.NOT_FOUND, () -> NamedArrays.load(ctx, "/nonexistent/dt-java.safetensors").close());
    }
  }

  @Test
  void syncModesAreCheckedAgainstTheStore() {
    try (Context ctx = Context.cpu().setNumThreads(1);
        Net net = Net.create(ctx, "mlp", "{\"input_shape\": [1, 28, 28], \"hidden\": [16], \"classes\": 10}");
        Optimizer opt = Optimizer.create("sgd");
        KVStore kv = KVStore.create("local")) {
      net.initialize(1);
      try (Trainer full = Trainer.create(net, opt, kv, new Trainer.Options().syncMode(SyncMode.FULL))) {
        assertEquals(kv, full.kvstore());
      }
      expect(Status.INVALID_ARGUMENT,
          () -> Trainer.create(net, opt, null, new Trainer.Options().partial(1000)).close());
      DtException e = expect(Status.NOT_SUPPORTED,
          () -> Trainer.create(net, opt, kv, new Trainer.Options().partial(1000)).close());
      assertTrue(e.getMessage().contains("allreduce"), e.getMessage());
      expect(Status.NOT_SUPPORTED,
          () -> Trainer.create(net, opt, kv, new Trainer.Options().syncMode(SyncMode.HALF)).close());
      expect(Status.INVALID_ARGUMENT,
          () -> Trainer.create(net, opt, kv, new Trainer.Options().sparseTopK(1.5, true)).close());
      expect(Status.INVALID_ARGUMENT, () -> Trainer.create(net, opt, kv, new Trainer.Options().partial(-1)).close());
      Trainer.Options mixed = new Trainer.Options().partial(1000).syncMode(SyncMode.FULL);
      expect(Status.INVALID_ARGUMENT, () -> Trainer.create(net, opt, kv, mixed).close());
      expect(Status.INVALID_ARGUMENT,
          () -> Trainer.create(net, opt, kv, new Trainer.Options().syncMode(null)).close());
    }
  }

  @Test
  void nodeRunAsWorkerIsRefused() {
    // DMLC_ROLE is unset in the test environment: this process is a worker.
    assertEquals(Role.WORKER, Node.role());
    expect(Status.INVALID_ARGUMENT, () -> Node.run(null));
  }

  @Test
  void localRankWithoutALauncherIsTheOnlyWorkerOfItsHost() {
    // The test JVM is started by hand, not by dtrun or torchrun.
    assertArrayEquals(new int[] {0, 1}, Node.localRank());
  }

  @Test
  void explicitLayoutWinsOverTheEmptyEnvironment() {
    // No job in the environment: without a layout there is nothing to join.
    KVStore.Options bare = new KVStore.Options().startupTimeout(0.5);
    expect(Status.INVALID_ARGUMENT, () -> KVStore.create("dist_sync", bare).close());
    // With one, the worker looks for its scheduler at the given address (no one
    // listens on port 1) until the start-up deadline.
    KVStore.Options layout = new KVStore.Options().startupTimeout(0.5).role(Role.WORKER)
        .numServers(1).numWorkers(1).scheduler("127.0.0.1", 1);
    expect(Status.TIMED_OUT, () -> KVStore.create("dist_sync", layout).close());
    expect(Status.INVALID_ARGUMENT,
        () -> KVStore.create("dist_sync", new KVStore.Options().scheduler("127.0.0.1", 70000)).close());
  }

  @Test
  void messagesComeFromTheFailingThread() throws Exception {
    // Two threads fail differently at the same time; each exception carries its own call's message.
    CountDownLatch start = new CountDownLatch(1);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Runnable kvstores = () -> {
      try {
        start.await();
        for (int i = 0; i < 200; ++i) {
          DtException e = assertThrows(DtException.class, () -> KVStore.create("nope").close());
          assertTrue(e.getMessage().contains("nope"), e.getMessage());
        }
      } catch (Throwable t) {
        failure.compareAndSet(null, t);
      }
    };
    Runnable optimizers = () -> {
      try {
        start.await();
        for (int i = 0; i < 200; ++i) {
          DtException e = assertThrows(DtException.class, () -> Optimizer.create("zzz_unknown").close());
          assertTrue(e.getMessage().contains("zzz_unknown"), e.getMessage());
        }
      } catch (Throwable t) {
        failure.compareAndSet(null, t);
      }
    };
    Thread a = new Thread(kvstores);
    Thread b = new Thread(optimizers);
    a.start();
    b.start();
    start.countDown();
    a.join(TimeUnit.SECONDS.toMillis(60));
    b.join(TimeUnit.SECONDS.toMillis(60));
    assertTrue(!a.isAlive() && !b.isAlive(), "threads did not finish in 60 s");
    if (failure.get() != null) throw new AssertionError(failure.get());
  }
}
