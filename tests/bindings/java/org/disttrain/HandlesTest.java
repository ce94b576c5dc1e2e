package org.disttrain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Create and close every handle; close is idempotent; a closed handle is a clear error. */
@Timeout(120)
class HandlesTest {
  static void assertClosedError(NativeHandle handle, Runnable use) {
    DtException e = assertThrows(DtException.class, use::run);
    assertEquals(Status.INVALID_HANDLE, e.status());
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
    assertTrue(handle.isClosed());
  }

  @Test
  void versionsAgree() {
    assertEquals(Disttrain.bindingVersion(), Disttrain.version());
    assertEquals(NativeLibrary.format(Disttrain.version()), Disttrain.versionString());
    BuildInfo info = Disttrain.buildInfo();
    assertEquals(Disttrain.version(), info.versionMajor * 10000 + info.versionMinor * 100 + info.versionPatch);
    assertTrue(Disttrain.gpuCount() >= 0);
  }

  @Test
  void versionMismatchIsReportedClearly() {
    assertNull(NativeLibrary.versionProblem(100, 100, 100));
    String problem = NativeLibrary.versionProblem(100, 100, 200);
    assertNotNull(problem);
    assertTrue(problem.contains("0.1.0") && problem.contains("0.2.0"), problem);
    UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, () -> NativeLibrary.checkVersion(100, 200, 200));
    assertTrue(e.getMessage().contains("version mismatch"), e.getMessage());
  }

  @Test
  void enumsMirrorTheCHeader() {
    assertEquals(disttrainConstants.DT_OK, Status.OK.code());
    assertEquals(disttrainConstants.DT_ERR_INVALID_ARGUMENT, Status.INVALID_ARGUMENT.code());
    assertEquals(disttrainConstants.DT_ERR_INVALID_HANDLE, Status.INVALID_HANDLE.code());
    assertEquals(disttrainConstants.DT_ERR_PEER_LOST, Status.PEER_LOST.code());
    for (Status s : Status.values()) {
      if (s != Status.UNKNOWN) assertEquals(s, Status.fromCode(s.code()));
    }
    assertEquals(Status.UNKNOWN, Status.fromCode(1000));
    assertEquals("invalid argument", Status.INVALID_ARGUMENT.description());
    for (DType t : DType.values()) {
      long[] size = new long[1];
      disttrain.dt_dtype_size(size, t.code());
      assertEquals(t.size(), size[0], t.toString());
      assertEquals(t.safetensorsName(), disttrain.dt_dtype_name(t.code()));
    }
    assertEquals(disttrainConstants.DT_UINT8, DType.UINT8.code());
    assertEquals(disttrainConstants.DT_DEVICE_GPU, DeviceType.GPU.code());
    assertEquals(disttrainConstants.DT_GRAD_ADD, GradReq.ADD.code());
    assertEquals(disttrainConstants.DT_LAST_BATCH_ROLLOVER, LastBatch.ROLLOVER.code());
    assertEquals(disttrainConstants.DT_ROLE_SCHEDULER, Role.SCHEDULER.code());
  }

  @Test
  void contextCreateCloseAndUseAfterClose() {
    Context ctx = Context.cpu();
    assertEquals(DeviceType.CPU, ctx.deviceType());
    assertEquals(0, ctx.deviceId());
    ctx.setNumThreads(1);
    assertEquals(1, ctx.numThreads());
    ctx.close();
    ctx.close();
    assertClosedError(ctx, ctx::deviceType);
    assertClosedError(ctx, () -> NDArray.zeros(ctx, 2));
  }

  @Test
  void ndarrayCreateCloseAndUseAfterClose() {
    try (Context ctx = Context.cpu()) {
      NDArray a = NDArray.zeros(ctx, 2, 3);
      assertEquals(6, a.size());
      a.close();
      a.close();
      assertClosedError(a, a::size);
      assertClosedError(a, () -> a.copyFrom(new float[6]));
      assertClosedError(a, a::toFloatArray);
    }
  }

  @Test
  void childKeepsParentAlive() {
    NDArray a;
    NDArray view;
    try (Context ctx = Context.cpu()) {
      a = NDArray.fromArray(ctx, new float[] {1, 2, 3, 4}, 2, 2);
      assertTrue(a.parent() == ctx);
    }
    // The context is closed, the array (and a view of it) still work.
    view = a.reshape(4);
    a.close();
    assertTrue(view.parent() == a);
    float[] values = view.toFloatArray();
    assertEquals(4.0f, values[3]);
    try (Context again = view.context()) {
      assertEquals(DeviceType.CPU, again.deviceType());
    }
    view.close();
  }

  @Test
  void netOptimizerKVStoreTrainerLoaderCreateAndClose() {
    try (Context ctx = Context.cpu();
        Net net = Net.create(ctx, "mlp", "{\"input_shape\": [1, 28, 28], \"hidden\": [16], \"classes\": 10}");
        Optimizer opt = Optimizer.create("sgd").setDouble("learning_rate", 0.1);
        KVStore kv = KVStore.create("local")) {
      net.initialize(1);
      assertTrue(net.numParams() > 0);
      assertEquals("local", kv.type());
      Trainer trainer = Trainer.create(net, opt, kv);
      assertEquals(0.1, trainer.learningRate(), 1e-12);
      assertTrue(trainer.net() == net);
      trainer.close();
      trainer.close();
      assertClosedError(trainer, trainer::learningRate);
      assertClosedError(trainer, trainer::skippedSteps);

      DataLoader loader = DataLoader.mnist(null, "t10k", new DataLoader.Options().batchSize(100));
      assertEquals(10000, loader.numSamples());
      assertEquals(100, loader.numBatches());
      loader.close();
      loader.close();
      assertClosedError(loader, loader::numSamples);

      NDArray p = net.param(0);
      p.close();
      Optimizer other = Optimizer.fromJson(opt.toJson());
      other.close();
      other.close();
      assertClosedError(other, other::toJson);
    }
  }

  @Test
  void kvstoreNetAndOptimizerUseAfterClose() {
    KVStore kv = KVStore.create("local");
    kv.close();
    kv.close();
    assertClosedError(kv, kv::rank);
    try (Context ctx = Context.cpu()) {
      Net net = Net.create(ctx, "lenet");
      net.close();
      net.close();
      assertClosedError(net, net::numParams);
      assertClosedError(net, net::computeDtype);
      assertClosedError(net, net::lossScaling);
      Optimizer opt = Optimizer.create("adam");
      opt.close();
      assertClosedError(opt, () -> opt.setDouble("learning_rate", 0.1));
    }
  }

  @Test
  void namedArraysCreateAndClose() throws Exception {
    java.nio.file.Path file = java.nio.file.Files.createTempFile("dt-java-named", ".safetensors");
    try (Context ctx = Context.cpu();
        NDArray a = NDArray.fromArray(ctx, new float[] {1, 2}, 2)) {
      NDArray.save(file.toString(), new String[] {"a"}, new NDArray[] {a});
      NamedArrays list = NamedArrays.load(ctx, file.toString());
      assertEquals(1, list.size());
      assertEquals("a", list.name(0));
      NDArray back = list.get(0);
      list.close();
      list.close();
      assertClosedError(list, list::size);
      // The entry outlives its list.
      assertEquals(2.0f, back.toFloatArray()[1]);
      back.close();
    } finally {
      java.nio.file.Files.deleteIfExists(file);
    }
  }

  @Test
  void batchCloseClosesBoth() {
    try (DataLoader loader = DataLoader.mnist(null, "t10k", new DataLoader.Options().batchSize(8))) {
      loader.startEpoch(0);
      DataLoader.Batch batch = loader.next();
      assertNotNull(batch);
      assertEquals(DType.FLOAT32, batch.data().dtype());
      assertEquals(DType.INT32, batch.labels().dtype());
      batch.close();
      assertTrue(batch.data().isClosed() && batch.labels().isClosed());
    }
  }

  @Test
  void closeFromManyThreadsIsIdempotent() throws Exception {
    try (Context ctx = Context.cpu()) {
      NDArray a = NDArray.zeros(ctx, 4);
      List<Thread> threads = new ArrayList<>();
      for (int i = 0; i < 4; ++i) {
        Thread t = new Thread(a::close);
        threads.add(t);
        t.start();
      }
      for (Thread t : threads) {
        t.join(10_000);
        assertFalse(t.isAlive());
      }
      assertTrue(a.isClosed());
    }
  }
}
