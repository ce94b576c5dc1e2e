/*
 * TrainFashionMnist: trains LeNet (or an MLP) on Fashion-MNIST through the Java binding,
 * the Java twin of examples/c/train_fashion_mnist.c.
 *
 *   java -Djava.library.path=<dir of libdisttrain*.so> -cp disttrain.jar:disttrain-examples.jar \
 *     TrainFashionMnist [--kvstore local|dist_sync|dist_async|none] [--epochs N]
 *                       [--batch-size N] [--lr X] [--momentum X] [--seed N]
 *                       [--threads N] [--data DIR] [--model lenet|mlp]
 *                       [--gpus LIST | --cpus N] [--precision fp32|fp16|bf16]
 *
 * Prints per-epoch progress; the last line is test_accuracy=<fraction>.
 *
 * --gpus 0,1 trains one replica on each listed GPU (0,0: two on GPU 0;
 * local: the GPU of this process's local rank), the trainer splitting every
 * batch across them as Gluon's split_and_load does and the kvstore
 * defaulting to "device" when there are several; no --gpus is the CPU,
 * --cpus N replicas there (see DeviceFlags). A GPU the machine lacks, or
 * fp16/bf16 on the CPU, exits with status 2 before anything trains.
 *
 * With --kvstore dist_sync or dist_async the process is one worker of a
 * parameter-server job (start it with dtrun, which sets DMLC_*): every
 * worker trains on its rank-th part of the training set, and only rank 0
 * evaluates and prints. As in the C example, --lr is the rate for the job's
 * global batch: dist_sync servers sum the workers' gradients, each already
 * divided by its own batch, so the trainer gets lr / num_workers.
 */
import org.disttrain.Context;
import org.disttrain.DataLoader;
import org.disttrain.DtException;
import org.disttrain.KVStore;
import org.disttrain.Net;
import org.disttrain.Node;
import org.disttrain.Optimizer;
import org.disttrain.Role;
import org.disttrain.Trainer;

public final class TrainFashionMnist {
  private TrainFashionMnist() {}

  static final class Args {
    String kvstore = "local";
    int epochs = 5;
    long batchSize = 64;
    double lr = 0.02;
    double momentum = 0.9;
    long seed = 1;
    int threads = 0;
    String data = null;
    String model = "lenet";
    boolean kvstoreGiven;
    final DeviceFlags devices = new DeviceFlags();
  }

  static void usage() {
    System.out.println("usage: TrainFashionMnist [--kvstore local|dist_sync|dist_async|none] [--epochs N]\n"
        + "         [--batch-size N] [--lr X] [--momentum X] [--seed N] [--threads N] [--data DIR] [--model lenet|mlp]\n"
        + "         " + DeviceFlags.USAGE + "\n"
        + "defaults: local (device for several GPUs), 5 epochs, batch 64, lr 0.02, momentum 0.9, seed 1,\n"
        + "          threads from OMP_NUM_THREADS or all, data /usr/share/datasets/fashion-mnist, the CPU, fp32");
  }

  static Args parse(String[] argv) {
    Args a = new Args();
    for (int i = 0; i < argv.length; ++i) {
      String flag = argv[i];
      if (flag.equals("--help") || flag.equals("-h")) {
        usage();
        System.exit(0);
      }
      if (i + 1 >= argv.length) throw new IllegalArgumentException(flag + " needs a value");
      String value = argv[++i];
      if (a.devices.accept(flag, value)) continue;
      switch (flag) {
        case "--kvstore": a.kvstore = value; a.kvstoreGiven = true; break;
        case "--epochs": a.epochs = Integer.parseInt(value); break;
        case "--batch-size": a.batchSize = Long.parseLong(value); break;
        case "--lr": a.lr = Double.parseDouble(value); break;
        case "--momentum": a.momentum = Double.parseDouble(value); break;
        case "--seed": a.seed = Long.parseLong(value); break;
        case "--threads": a.threads = Integer.parseInt(value); break;
        case "--data": a.data = value; break;
        case "--model": a.model = value; break;
        default: throw new IllegalArgumentException("unknown option " + flag);
      }
    }
    if (a.epochs < 0 || a.batchSize <= 0 || a.threads < 0) {
      throw new IllegalArgumentException("--epochs, --batch-size and --threads must not be negative");
    }
    a.devices.validate();
    a.kvstore = a.devices.kvstore(a.kvstore, a.kvstoreGiven, "local");
    return a;
  }

  public static void main(String[] argv) {
    Args a;
    try {
      a = parse(argv);
    } catch (IllegalArgumentException e) {
      System.err.println("error: " + e.getMessage());
      usage();
      System.exit(2);
      return;
    }
    try {
      // As an MXNet program on import: launched as the job's scheduler or a
      // server (DMLC_ROLE, ...), serve the job until it ends, then exit 0, so
      // launchers that run one command line for every role work unchanged.
      if (Node.role() != Role.WORKER) {
        Node.run(null);
        System.exit(0);
      }
      // Every GPU asked for must exist before anything trains.
      try {
        a.devices.checkMachine();
      } catch (IllegalArgumentException e) {
        System.err.println("error: " + e.getMessage());
        System.exit(2);
      }
      System.exit(train(a));
    } catch (DtException e) {
      System.err.println("error: " + e.status().description() + ": " + e.getMessage());
      System.exit(1);
    }
  }

  static int train(Args a) {
    // The net lives on the first context; the trainer replicates it onto the
    // others and splits every batch across all of them.
    Context[] contexts = a.devices.open(a.threads);
    try {
      return train(a, contexts);
    } finally {
      for (Context c : contexts) c.close();
    }
  }

  static int train(Args a, Context[] contexts) {
    boolean withKVStore = !a.kvstore.equals("none");
    Context[] extra = java.util.Arrays.copyOfRange(contexts, 1, contexts.length);
    try (Net net = Net.create(contexts[0], a.model).initialize(a.seed).setComputeDtype(a.devices.dtype());
        KVStore kv = withKVStore ? KVStore.create(a.kvstore, new KVStore.Options()) : null) {
      int rank = kv == null ? 0 : kv.rank();
      int workers = kv == null ? 1 : kv.numWorkers();
      // The synchronous distributed stores sum the workers' gradients.
      String type = kv == null ? "none" : kv.type();
      boolean sums = type.equals("dist_sync") || type.equals("dist_sync_device") || type.equals("allreduce")
          || type.equals("dist_nccl");
      double lr = sums ? a.lr / workers : a.lr;
      DataLoader.Options trainOptions = new DataLoader.Options().batchSize(a.batchSize).seed(a.seed)
          .part(rank, workers); // split sampler: every worker its own part
      DataLoader.Options testOptions = new DataLoader.Options().batchSize(1000).shuffle(false);
      try (Optimizer sgd = Optimizer.create("sgd").setDouble("learning_rate", lr).setDouble("momentum", a.momentum);
          DataLoader train = DataLoader.mnist(a.data, "train", trainOptions);
          DataLoader test = DataLoader.mnist(a.data, "t10k", testOptions);
          Trainer trainer = Trainer.create(net, sgd, kv, new Trainer.Options().extraContexts(extra))) {
        if (rank == 0) {
          System.out.printf("training %s on Fashion-MNIST: %d epochs, %d worker(s) x batch %d, SGD lr %g momentum %g, "
              + "kvstore %s, contexts %s, precision %s%n", a.model, a.epochs, workers, a.batchSize, lr, a.momentum, a.kvstore,
              a.devices.contextNames(), a.devices.precision());
        }
        for (int epoch = 0; epoch < a.epochs; ++epoch) {
          long started = System.nanoTime();
          double lossSum = 0;
          long correct = 0;
          long samples = 0;
          long batches = 0;
          train.startEpoch(epoch);
          for (DataLoader.Batch b = train.next(); b != null; b = train.next()) {
            try (DataLoader.Batch batch = b) {
              long n = batch.labels().size();
              Trainer.BatchResult r = trainer.trainBatch(batch.data(), batch.labels());
              lossSum += r.loss * n;
              correct += r.correct;
              samples += n;
              ++batches;
            }
          }
          double seconds = (System.nanoTime() - started) / 1e9;
          if (rank == 0) {
            Trainer.Evaluation eval = trainer.evaluate(test);
            System.out.printf("epoch %d: loss %.4f train_accuracy %.4f test_accuracy %.4f (%d batches, %.0f images/s, %.1f s)%n",
                epoch + 1, lossSum / samples, (double) correct / samples, eval.accuracy, batches,
                samples / seconds, seconds);
          }
        }
        if (rank == 0) {
          System.out.printf("test_accuracy=%.4f%n", trainer.evaluate(test).accuracy);
        }
      }
    }
    return 0;
  }
}
