/*
 * TrainFashionMnist: trains LeNet (or an MLP) on Fashion-MNIST through the Scala layer
 * (org.disttrain.scala), the Scala twin of examples/java/TrainFashionMnist.java.
 *
 *   scala -Djava.library.path=<dir of libdisttrain*.so> \
 *     -cp disttrain.jar:disttrain-scala.jar:disttrain-scala-examples.jar \
 *     TrainFashionMnist [--kvstore local|dist_sync|dist_async|none] [--epochs N]
 *                       [--batch-size N] [--lr X] [--momentum X] [--seed N]
 *                       [--threads N] [--data DIR] [--model lenet|mlp]
 *                       [--gpus LIST | --cpus N] [--precision fp32|fp16|bf16]
 *
 * Prints per-epoch progress; the last line is test_accuracy=<fraction>.
 * --gpus, --cpus and --precision mean what they mean for the Java example
 * (examples/java/DeviceFlags.java): one replica per listed GPU (0,0: two on
 * GPU 0; local: the local rank's GPU), every batch split across them, the
 * kvstore "device" by default for several GPUs; --cpus N replicas on the
 * CPU; a GPU the machine lacks, or fp16/bf16 on the CPU, exits with status 2.
 * Under dtrun with dist_sync or dist_async every worker trains on its
 * rank-th part of the data and rank 0 evaluates and prints; with dist_sync
 * the trainer gets lr / num_workers (the servers sum the workers' gradients).
 */
import org.disttrain.{DType, DeviceType}
import org.disttrain.scala._

object TrainFashionMnist {
  final case class Args(kvstore: Option[String] = None, epochs: Int = 5, batchSize: Long = 64, lr: Double = 0.02,
                        momentum: Double = 0.9, seed: Long = 1, threads: Int = 0, data: Option[String] = None,
                        gpus: String = "", cpus: Option[Int] = None, precision: String = "fp32",
                        model: String = "lenet")

  /** Where the replicas train: one context per id, the net computing in dtype. */
  final case class Devices(device: DeviceType, ids: Seq[Int], fromLocalRank: Boolean, dtype: DType, precision: String) {
    def names: String = ids.map(id => if (device == DeviceType.GPU) s"gpu($id)" else s"cpu($id)").mkString(",")
    /** The store given, else "device" for several GPUs (the library's "device" reduces on a GPU), else "local". */
    def kvstore(given: Option[String]): String =
      given.getOrElse(if (ids.size > 1 && device == DeviceType.GPU) "device" else "local")
  }

  private val usage =
    "usage: TrainFashionMnist [--kvstore local|dist_sync|dist_async|none] [--epochs N]\n" +
      "         [--batch-size N] [--lr X] [--momentum X] [--seed N] [--threads N] [--data DIR] [--model lenet|mlp]\n" +
      "         [--gpus LIST | --cpus N] [--precision fp32|fp16|bf16]"

  private val gpuId = "[0-9]{1,9}".r

  /** --gpus, --cpus and --precision read strictly. */
  def devices(a: Args): Either[String, Devices] = {
    val dtype = a.precision match {
      case "fp32" => Some(DType.FLOAT32)
      case "fp16" => Some(DType.FLOAT16)
      case "bf16" => Some(DType.BFLOAT16)
      case _ => None
    }
    if (dtype.isEmpty) Left("--precision must be fp32, fp16 or bf16, not \"" + a.precision + "\"")
    else if (a.gpus.isEmpty) {
      val n = a.cpus.getOrElse(1)
      if (n < 1) Left(s"--cpus must be at least 1, not $n")
      else if (dtype.get != DType.FLOAT32)
        Left(s"--precision ${a.precision}: the CPU computes in fp32 only; fp16 and bf16 need --gpus")
      else Right(Devices(DeviceType.CPU, Seq.fill(n)(0), fromLocalRank = false, dtype.get, a.precision))
    } else if (a.cpus.isDefined) Left("--cpus and --gpus exclude each other: replicas go on the CPU or on GPUs")
    else if (a.gpus == "local") {
      try Right(Devices(DeviceType.GPU, Seq(Node.localRank._1), fromLocalRank = true, dtype.get, a.precision))
      catch { case e: org.disttrain.DtException => Left(s"--gpus local: ${e.getMessage}") }
    } else {
      // split with -1 keeps trailing empty items, which are errors.
      val items = a.gpus.split(",", -1).toSeq
      if (items.forall(gpuId.pattern.matcher(_).matches))
        Right(Devices(DeviceType.GPU, items.map(_.toInt), fromLocalRank = false, dtype.get, a.precision))
      else
        Left("--gpus takes GPU ids such as 0,1 or 0,0 ('' for the CPU, local for the local rank's GPU), not \"" +
          a.gpus + "\"")
    }
  }

  /** The first GPU asked for that this process does not see (0 without CUDA), named. */
  def missingGpu(d: Devices): Option[String] =
    if (d.device != DeviceType.GPU) None
    else {
      val count = Disttrain.gpuCount
      d.ids.find(_ >= count).map { id =>
        s"--gpus: GPU $id was asked for, but this machine has $count GPU(s)" +
          (if (d.fromLocalRank) " (--gpus local: this process's local rank)" else "")
      }
    }

  def parse(argv: List[String], a: Args = Args()): Either[String, Args] = argv match {
    case Nil => Right(a)
    case "--kvstore" :: v :: rest => parse(rest, a.copy(kvstore = Some(v)))
    case "--gpus" :: v :: rest => parse(rest, a.copy(gpus = v))
    case "--cpus" :: v :: rest => parse(rest, a.copy(cpus = Some(v.toInt)))
    case "--precision" :: v :: rest => parse(rest, a.copy(precision = v))
    case "--epochs" :: v :: rest => parse(rest, a.copy(epochs = v.toInt))
    case "--batch-size" :: v :: rest => parse(rest, a.copy(batchSize = v.toLong))
    case "--lr" :: v :: rest => parse(rest, a.copy(lr = v.toDouble))
    case "--momentum" :: v :: rest => parse(rest, a.copy(momentum = v.toDouble))
    case "--seed" :: v :: rest => parse(rest, a.copy(seed = v.toLong))
    case "--threads" :: v :: rest => parse(rest, a.copy(threads = v.toInt))
    case "--data" :: v :: rest => parse(rest, a.copy(data = Some(v)))
    case "--model" :: v :: rest => parse(rest, a.copy(model = v))
    case flag :: _ => Left(s"unknown option or missing value: $flag")
  }

  def main(argv: Array[String]): Unit = {
    val args = try parse(argv.toList) catch { case e: NumberFormatException => Left(e.getMessage) }
    val parsed = args.right.flatMap(a => devices(a).right.map(d => (a, d)))
    parsed match {
      case Left(problem) =>
        System.err.println(s"error: $problem\n$usage")
        sys.exit(2)
      case Right((a, d)) =>
        try {
          // As an MXNet program on import: launched as the job's scheduler or
          // a server (DMLC_ROLE, ...), serve the job until it ends, then exit 0.
          if (Node.role != org.disttrain.Role.WORKER) {
            Node.run()
            sys.exit(0)
          }
          // Every GPU asked for must exist before anything trains.
          missingGpu(d).foreach { problem =>
            System.err.println(s"error: $problem")
            sys.exit(2)
          }
          train(a, d)
        } catch {
          case e: org.disttrain.DtException =>
            System.err.println(s"error: ${e.status().description()}: ${e.getMessage}")
            sys.exit(1)
        }
    }
  }

  def train(a: Args, d: Devices): Unit = scoped { s =>
    // The net lives on the first context; the trainer replicates it onto the
    // others and splits every batch across all of them.
    val contexts = d.ids.map(id => s(Context(d.device, id).setNumThreads(a.threads)))
    val net = s(Net(contexts.head, a.model).initialize(a.seed).setComputeDtype(d.dtype))
    val kvstore = d.kvstore(a.kvstore)
    val kv = if (kvstore == "none") None else Some(s(KVStore(kvstore, KVStore.options)))
    val rank = kv.map(_.rank()).getOrElse(0)
    val workers = kv.map(_.numWorkers()).getOrElse(1)
    // The synchronous distributed stores sum the workers' gradients.
    val sums = kv.exists(k => Set("dist_sync", "dist_sync_device", "allreduce", "dist_nccl")(k.`type`()))
    val lr = if (sums) a.lr / workers else a.lr
    val sgd = s(Optimizer("sgd", "learning_rate" -> lr, "momentum" -> a.momentum))
    // Split sampler: every worker trains on its own part of the data.
    val trainSet = s(DataLoader.mnist("train", DataLoader.options.batchSize(a.batchSize).seed(a.seed).part(rank, workers), a.data))
    val testSet = s(DataLoader.mnist("t10k", DataLoader.options.batchSize(1000).shuffle(false), a.data))
    val trainer = s(Trainer(net, sgd, kv, Trainer.options.extraContexts(contexts.tail: _*)))
    if (rank == 0) {
      println(f"training ${a.model} on Fashion-MNIST: ${a.epochs}%d epochs, $workers%d worker(s) x batch ${a.batchSize}%d, " +
        f"SGD lr $lr%g momentum ${a.momentum}%g, kvstore $kvstore, contexts ${d.names}, precision ${d.precision}")
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
