/*
 * TrainFashionMnist: trains LeNet on Fashion-MNIST through the Scala layer
 * (org.disttrain.scala), the Scala twin of examples/java/TrainFashionMnist.java.
 *
 *   scala -Djava.library.path=<dir of libdisttrain*.so> \
 *     -cp disttrain.jar:disttrain-scala.jar:disttrain-scala-examples.jar \
 *     TrainFashionMnist [--kvstore local|dist_sync|dist_async|none] [--epochs N]
 *                       [--batch-size N] [--lr X] [--momentum X] [--seed N]
 *                       [--threads N] [--data DIR]
 *
 * Prints per-epoch progress; the last line is test_accuracy=<fraction>.
 * Under dtrun with dist_sync or dist_async every worker trains on its
 * rank-th part of the data and rank 0 evaluates and prints; with dist_sync
 * the trainer gets lr / num_workers (the servers sum the workers' gradients).
 */
import org.disttrain.scala._

object TrainFashionMnist {
  final case class Args(kvstore: String = "local", epochs: Int = 5, batchSize: Long = 64, lr: Double = 0.02,
                        momentum: Double = 0.9, seed: Long = 1, threads: Int = 0, data: Option[String] = None)

  private val usage =
    "usage: TrainFashionMnist [--kvstore local|dist_sync|dist_async|none] [--epochs N]\n" +
      "         [--batch-size N] [--lr X] [--momentum X] [--seed N] [--threads N] [--data DIR]"

  def parse(argv: List[String], a: Args = Args()): Either[String, Args] = argv match {
    case Nil => Right(a)
    case "--kvstore" :: v :: rest => parse(rest, a.copy(kvstore = v))
    case "--epochs" :: v :: rest => parse(rest, a.copy(epochs = v.toInt))
    case "--batch-size" :: v :: rest => parse(rest, a.copy(batchSize = v.toLong))
    case "--lr" :: v :: rest => parse(rest, a.copy(lr = v.toDouble))
    case "--momentum" :: v :: rest => parse(rest, a.copy(momentum = v.toDouble))
    case "--seed" :: v :: rest => parse(rest, a.copy(seed = v.toLong))
    case "--threads" :: v :: rest => parse(rest, a.copy(threads = v.toInt))
    case "--data" :: v :: rest => parse(rest, a.copy(data = Some(v)))
    case flag :: _ => Left(s"unknown option or missing value: $flag")
  }

  def main(argv: Array[String]): Unit = {
    val args = try parse(argv.toList) catch { case e: NumberFormatException => Left(e.getMessage) }
    args match {
      case Left(problem) =>
        System.err.println(s"error: $problem\n$usage")
        sys.exit(2)
      case Right(a) =>
        try {
          // As an MXNet program on import: launched as the job's scheduler or
          // a server (DMLC_ROLE, ...), serve the job until it ends, then exit 0.
          if (Node.role != org.disttrain.Role.WORKER) {
            Node.run()
            sys.exit(0)
          }
          train(a)
        } catch {
          case e: org.disttrain.DtException =>
            System.err.println(s"error: ${e.status().description()}: ${e.getMessage}")
            sys.exit(1)
        }
    }
  }

  def train(a: Args): Unit = scoped { s =>
    val cpu = s(Context.cpu.setNumThreads(a.threads))
    val net = s(Net(cpu, "lenet").initialize(a.seed))
    val kv = if (a.kvstore == "none") None else Some(s(KVStore(a.kvstore, KVStore.options)))
    val rank = kv.map(_.rank()).getOrElse(0)
    val workers = kv.map(_.numWorkers()).getOrElse(1)
    // The synchronous distributed stores sum the workers' gradients.
    val sums = kv.exists(k => Set("dist_sync", "dist_sync_device", "allreduce", "dist_nccl")(k.`type`()))
    val lr = if (sums) a.lr / workers else a.lr
    val sgd = s(Optimizer("sgd", "learning_rate" -> lr, "momentum" -> a.momentum))
    // Split sampler: every worker trains on its own part of the data.
    val trainSet = s(DataLoader.mnist("train", DataLoader.options.batchSize(a.batchSize).seed(a.seed).part(rank, workers), a.data))
    val testSet = s(DataLoader.mnist("t10k", DataLoader.options.batchSize(1000).shuffle(false), a.data))
    val trainer = s(Trainer(net, sgd, kv))
    if (rank == 0) {
      println(f"training lenet on Fashion-MNIST: ${a.epochs}%d epochs, $workers%d worker(s) x batch ${a.batchSize}%d, " +
        f"SGD lr $lr%g momentum ${a.momentum}%g, kvstore ${a.kvstore}")
    }
    for (epoch <- 0 until a.epochs) {
      val started = System.nanoTime()
      var lossSum = 0.0
      var correct = 0L
      var samples = 0L
      trainSet.foreachBatch(epoch) { batch =>
        val n = batch.labels().size()
        val r = trainer.trainBatch(batch.data(), batch.labels())
        lossSum += r.loss * n
        correct += r.correct
        samples += n
      }
      val seconds = (System.nanoTime() - started) / 1e9
      if (rank == 0) {
        val (accuracy, _) = trainer.evaluateOn(testSet)
        println(f"epoch ${epoch + 1}%d: loss ${lossSum / samples}%.4f train_accuracy ${correct.toDouble / samples}%.4f " +
          f"test_accuracy $accuracy%.4f (${samples / seconds}%.0f images/s, $seconds%.1f s)")
      }
    }
    if (rank == 0) println(f"test_accuracy=${trainer.evaluateOn(testSet)._1}%.4f")
  }
}
