package consumer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Random;
import java.util.TreeSet;
import org.disttrain.Context;
import org.disttrain.DType;
import org.disttrain.Disttrain;
import org.disttrain.NDArray;
import org.disttrain.Net;
import org.disttrain.Optimizer;
import org.disttrain.Trainer;

/**
 * One SGD step of a small MLP on random data. Prints which JNI glue was
 * loaded and every libdisttrain file mapped into the process, then the loss;
 * exits 1 unless the loss is finite and positive.
 */
public final class TrainOneStep {
  private TrainOneStep() {}

  public static void main(String[] args) throws IOException {
    System.out.println("loaded " + Disttrain.nativeLibraryPath());
    TreeSet<String> mapped = new TreeSet<>();
    for (String line : Files.readAllLines(Paths.get("/proc/self/maps"))) {
      int slash = line.indexOf('/');
      if (slash >= 0 && line.contains("libdisttrain")) mapped.add(line.substring(slash));
    }
    for (String path : mapped) System.out.println("mapped " + path);

    int batch = 8;
    Random random = new Random(1);
    float[] x = new float[batch * 16];
    for (int i = 0; i < x.length; ++i) x[i] = (float) random.nextGaussian();
    int[] y = new int[batch];
    for (int i = 0; i < batch; ++i) y[i] = i % 3;
    try (Context ctx = Context.cpu().setNumThreads(1);
        Net net = Net.create(ctx, "mlp", "{\"input_shape\": [1, 4, 4], \"hidden\": [8], \"classes\": 3}").initialize(5);
        Optimizer opt = Optimizer.create("sgd").setDouble("learning_rate", 0.1);
        Trainer trainer = Trainer.create(net, opt, null);
        NDArray data = NDArray.fromArray(ctx, x, batch, 1, 4, 4);
        NDArray labels = NDArray.create(ctx, DType.INT32, batch).copyFrom(y)) {
      double loss = trainer.trainBatch(data, labels).loss;
      System.out.println("loss " + loss);
      if (!Double.isFinite(loss) || loss <= 0) {
        System.err.println("FAIL: the step's loss is " + loss);
        System.exit(1);
      }
    }
  }
}
