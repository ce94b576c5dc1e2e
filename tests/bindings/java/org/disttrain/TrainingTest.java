package org.disttrain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A short local training run on real Fashion-MNIST samples: the loss must go down. */
@Timeout(240)
class TrainingTest {
  static final String MLP = "{\"input_shape\": [1, 28, 28], \"hidden\": [64], \"classes\": 10}";

  /** 600 training samples: part 0 of 100 of the training set, through the split sampler. */
  static DataLoader smallTrainingSet(int batch) {
    return DataLoader.mnist(null, "train", new DataLoader.Options().batchSize(batch).seed(3).part(0, 100));
  }

  static double meanEpochLoss(Trainer trainer, DataLoader loader, int epoch) {
    double sum = 0;
    int batches = 0;
    loader.startEpoch(epoch);
    for (DataLoader.Batch b = loader.next(); b != null; b = loader.next()) {
      try (DataLoader.Batch batch = b) {
        sum += trainer.trainBatch(batch.data(), batch.labels()).loss;
        ++batches;
      }
    }
    assertTrue(batches > 0);
    return sum / batches;
  }

  @Test
  void trainBatchLossDecreasesWithALocalKVStore() {
    try (Context ctx = Context.cpu().setNumThreads(1);
        Net net = Net.create(ctx, "mlp", MLP).initialize(7);
        Optimizer opt = Optimizer.create("sgd").setDouble("learning_rate", 0.1).setDouble("momentum", 0.9);
        KVStore kv = KVStore.create("local");
        Trainer trainer = Trainer.create(net, opt, kv);
        DataLoader train = smallTrainingSet(32)) {
      assertEquals(600, train.numSamples());
      double first = meanEpochLoss(trainer, train, 0);
      double last = first;
      for (int epoch = 1; epoch < 4; ++epoch) last = meanEpochLoss(trainer, train, epoch);
      assertTrue(last < 0.9 * first, "loss went from " + first + " to " + last);
      try (DataLoader test = DataLoader.mnist(null, "t10k", new DataLoader.Options().batchSize(1000).shuffle(false))) {
        Trainer.Evaluation eval = trainer.evaluate(test);
        // 10 classes: chance is 0.10; 600 samples and 4 epochs give far more.
        assertTrue(eval.accuracy > 0.5, "test accuracy " + eval.accuracy);
      }
    }
  }

  @Test
  void manualForwardBackwardStep() {
    try (Context ctx = Context.cpu().setNumThreads(1);
        Net net = Net.create(ctx, "lenet").initialize(11);
        Optimizer opt = Optimizer.create("sgd").setDouble("learning_rate", 0.05);
        Trainer trainer = Trainer.create(net, opt, null);
        DataLoader train = smallTrainingSet(50)) {
      double first = Double.NaN;
      double last = Double.NaN;
      for (int epoch = 0; epoch < 3; ++epoch) {
        double sum = 0;
        int n = 0;
        train.startEpoch(epoch);
        for (DataLoader.Batch b = train.next(); b != null; b = train.next()) {
          try (DataLoader.Batch batch = b) {
            net.forward(true, batch.data());
            sum += net.backward(batch.labels()) / batch.data().shape()[0];
            trainer.step(batch.data().shape()[0]);
            ++n;
          }
        }
        if (epoch == 0) first = sum / n;
        last = sum / n;
      }
      assertTrue(last < first, "loss went from " + first + " to " + last);
      // float32 has no loss scaling: no step is ever skipped.
      assertEquals(0, trainer.skippedSteps());
      assertTrue(trainer.steps() > 0);
      // A local store lets nobody into the job: a loop of one's own goes on.
      assertFalse(trainer.admitJoiningWorkers());
      assertEquals(1.0, net.lossScale());
      assertEquals(DType.FLOAT32, net.computeDtype());
      ErrorsTest.expect(Status.BAD_STATE, () -> net.setComputeDtype(DType.FLOAT32));
      assertEquals(1, net.numOutputs());
      try (NDArray logits = net.output(0)) {
        assertEquals(10, logits.shape()[1]);
      }
    }
  }

  @Test
  void fitWithCheckpointAndParams() throws Exception {
    Path dir = Files.createTempDirectory("dt-java-fit");
    Path metrics = dir.resolve("metrics.jsonl");
    Path checkpoint = dir.resolve("ckpt.safetensors");
    Path params = dir.resolve("params.safetensors");
    try (Context ctx = Context.cpu().setNumThreads(1);
        Net net = Net.create(ctx, "mlp", MLP).initialize(5);
        Optimizer opt = Optimizer.create("sgd").setDouble("learning_rate", 0.1);
        Trainer trainer = Trainer.create(net, opt, null);
        DataLoader train = smallTrainingSet(64)) {
      trainer.fit(train, null, new Trainer.FitOptions().epochs(2).progress(2)
          .metricsPath(metrics.toString()).checkpointPath(checkpoint.toString()));
      assertEquals(2, trainer.epoch());
      assertEquals(2, Files.readAllLines(metrics).size());
      assertTrue(Files.size(checkpoint) > 0);
      net.saveParams(params.toString());
      try (Net copy = Net.fromJson(ctx, net.toJson())) {
        copy.loadParams(params.toString());
        int w = copy.findParam(net.paramName(0));
        try (NDArray a = net.param(0);
            NDArray b = copy.param(w)) {
          org.junit.jupiter.api.Assertions.assertArrayEquals(a.toFloatArray(), b.toFloatArray());
        }
      }
      try (Net resumedNet = Net.create(ctx, "mlp", MLP);
          Trainer resumed = Trainer.create(resumedNet, opt, null)) {
        resumed.loadCheckpoint(checkpoint.toString());
        assertEquals(2, resumed.epoch());
      }
    } finally {
      for (Path p : new Path[] {metrics, checkpoint, params}) Files.deleteIfExists(p);
      Files.deleteIfExists(dir);
    }
  }
}
