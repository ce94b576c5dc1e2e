package org.disttrain

import org.disttrain.{
  Context => JContext,
  DataLoader => JDataLoader,
  KVStore => JKVStore,
  NDArray => JNDArray,
  NamedArrays => JNamedArrays,
  Net => JNet,
  Optimizer => JOptimizer,
  Trainer => JTrainer
}

/**
 * The Scala layer over the Java binding (org.disttrain): the Java classes
 * under their own names, companion constructors, Seq/Array conversions,
 * Option where a value may be absent, and a loan pattern (`using`, `scoped`)
 * that works on Scala 2.11, 2.12 and 2.13 (scala.util.Using is 2.13 only).
 *
 * {{{
 * import org.disttrain.scala._
 * scoped { s =>
 *   val ctx = s(Context.cpu)
 *   val a = s(NDArray(ctx, Array(1f, 2f, 3f), 3))
 *   a.toSeq            // Vector(1.0, 2.0, 3.0)
 * }
 * }}}
 *
 * Errors are org.disttrain.DtException, as in Java.
 */
package object scala {
  type Context = JContext
  type NDArray = JNDArray
  type NamedArrays = JNamedArrays
  type Net = JNet
  type Optimizer = JOptimizer
  type KVStore = JKVStore
  type DataLoader = JDataLoader
  type Batch = JDataLoader.Batch
  type LossScalingOptions = JNet.LossScalingOptions
  type Trainer = JTrainer
  type DtException = org.disttrain.DtException
  type Status = org.disttrain.Status
  type DType = org.disttrain.DType
  type DeviceType = org.disttrain.DeviceType
  type GradReq = org.disttrain.GradReq
  type LastBatch = org.disttrain.LastBatch
  type SyncMode = org.disttrain.SyncMode
  type Role = org.disttrain.Role

  // ---- loan pattern ------------------------------------------------------

  /** Runs f on the resource and closes it afterwards, also when f throws. */
  def using[R <: AutoCloseable, A](resource: R)(f: R => A): A = {
    var primary: Throwable = null
    try f(resource)
    catch {
      case t: Throwable =>
        primary = t
        throw t
    } finally closeAfter(resource, primary)
  }

  private[scala] def closeAfter(resource: AutoCloseable, primary: Throwable): Unit = {
    if (resource != null) {
      if (primary == null) resource.close()
      else
        try resource.close()
        catch { case t: Throwable => primary.addSuppressed(t) }
    }
  }

  /** Collects resources and closes them in reverse order when the block ends. */
  final class Scope private[scala] () {
    private var resources: List[AutoCloseable] = Nil

    /** Registers a resource to close with the scope, and returns it. */
    def apply[R <: AutoCloseable](resource: R): R = {
      resources = resource :: resources
      resource
    }

    private[scala] def closeAll(primary: Throwable): Unit = {
      var first = primary
      resources.foreach { r =>
        try r.close()
        catch {
          case t: Throwable =>
            if (first == null) first = t else first.addSuppressed(t)
        }
      }
      resources = Nil
      if (primary == null && first != null) throw first
    }
  }

  /** Runs f with a Scope; everything registered in it is closed when f returns or throws. */
  def scoped[A](f: Scope => A): A = {
    val scope = new Scope
    var primary: Throwable = null
    try f(scope)
    catch {
      case t: Throwable =>
        primary = t
        throw t
    } finally scope.closeAll(primary)
  }

  /** The status of a DtException thrown by f, if any: `statusOf(kv.pull(1, out))`. */
  def statusOf(f: => Any): Option[Status] =
    try {
      f
      None
    } catch { case e: org.disttrain.DtException => Some(e.status()) }

  private def optionally[A](f: => A): Option[A] =
    try Some(f)
    catch {
      case e: org.disttrain.DtException if e.status() == org.disttrain.Status.NOT_FOUND => None
    }

  // ---- companions ---------------------------------------------------------

  object Context {
    def cpu: Context = JContext.cpu()
    def gpu(id: Int): Context = JContext.gpu(id)
    def apply(deviceType: DeviceType, id: Int = 0): Context = JContext.create(deviceType, id)
  }

  object NDArray {
    /** A zero-filled array of dtype. */
    def apply(ctx: Context, dtype: DType, shape: Long*): NDArray = JNDArray.create(ctx, dtype, shape.toArray: _*)
    /** A float32 array holding data. */
    def apply(ctx: Context, data: Array[Float], shape: Long*): NDArray = JNDArray.fromArray(ctx, data, shape.toArray: _*)
    def apply(ctx: Context, data: Seq[Float], shape: Long*): NDArray = JNDArray.fromArray(ctx, data.toArray, shape.toArray: _*)
    def zeros(ctx: Context, shape: Long*): NDArray = JNDArray.zeros(ctx, shape.toArray: _*)
    /** Writes the arrays, in order, to a safetensors file. */
    def save(path: String, arrays: Seq[(String, NDArray)]): Unit =
      JNDArray.save(path, arrays.map(_._1).toArray, arrays.map(_._2).toArray)
  }

  object NamedArrays {
    def load(ctx: Context, path: String): NamedArrays = JNamedArrays.load(ctx, path)
  }

  object Net {
    def apply(ctx: Context, builder: String, options: Option[String] = None): Net =
      JNet.create(ctx, builder, options.orNull)
    def fromJson(ctx: Context, json: String): Net = JNet.fromJson(ctx, json)
    /**
     * The library's loss-scaling defaults, to adjust and pass to setLossScaling:
     * `net.setComputeDtype(DType.FLOAT16).setLossScaling(Net.lossScaling.initScale(1024).growthInterval(500))`.
     */
    def lossScaling: JNet.LossScalingOptions = new JNet.LossScalingOptions()
  }

  object Optimizer {
    /**
     * An optimizer with hyper-parameters set by their Scala type:
     * `Optimizer("sgd", "learning_rate" -> 0.1, "momentum" -> 0.9, "nesterov" -> true)`.
     */
    def apply(name: String, params: (String, Any)*): Optimizer = {
      val opt = JOptimizer.create(name)
      try {
        params.foreach {
          case (k, v: Double) => opt.setDouble(k, v)
          case (k, v: Float) => opt.setDouble(k, v.toDouble)
          case (k, v: Int) => opt.setInt(k, v.toLong)
          case (k, v: Long) => opt.setInt(k, v)
          case (k, v: Boolean) => opt.setBool(k, v)
          case (k, v: String) => opt.setString(k, v)
          case (k, v: Seq[_]) => opt.setIntList(k, v.map(x => x.asInstanceOf[Number].longValue).toArray: _*)
          case (k, v) =>
            throw new org.disttrain.DtException(org.disttrain.Status.INVALID_ARGUMENT,
              s"Optimizer: no setter for $k of type ${if (v == null) "null" else v.getClass.getName}")
        }
        opt
      } catch {
        case t: Throwable =>
          opt.close()
          throw t
      }
    }
    def fromJson(json: String): Optimizer = JOptimizer.fromJson(json)
  }

  object KVStore {
    def apply(kvType: String): KVStore = JKVStore.create(kvType)
    def apply(kvType: String, options: JKVStore.Options): KVStore = JKVStore.create(kvType, options)
    def options: JKVStore.Options = new JKVStore.Options()
  }

  object DataLoader {
    def options: JDataLoader.Options = new JDataLoader.Options()
    /** Fashion-MNIST (or MNIST) split "train" or "t10k"; dir None: the Debian dataset's directory. */
    def mnist(split: String, options: JDataLoader.Options = new JDataLoader.Options(), dir: Option[String] = None): DataLoader =
      JDataLoader.mnist(dir.orNull, split, options)
    def apply(images: String, labels: String, options: JDataLoader.Options): DataLoader =
      JDataLoader.create(images, labels, options)
  }

  object Trainer {
    def apply(net: Net, optimizer: Optimizer, kvstore: Option[KVStore] = None,
              options: JTrainer.Options = new JTrainer.Options()): Trainer =
      JTrainer.create(net, optimizer, kvstore.orNull, options)
    /** Trainer options, e.g. Trainer.options.partial(100000) for SINGA's partial update. */
    def options: JTrainer.Options = new JTrainer.Options()
    def fitOptions: JTrainer.FitOptions = new JTrainer.FitOptions()
  }

  /** SINGA DistOpt's steps (org.disttrain.SyncMode): SyncMode.Partial, ... */
  object SyncMode {
    val Full: SyncMode = org.disttrain.SyncMode.FULL
    val Half: SyncMode = org.disttrain.SyncMode.HALF
    val Partial: SyncMode = org.disttrain.SyncMode.PARTIAL
    val Sparse: SyncMode = org.disttrain.SyncMode.SPARSE
  }

  // ---- enrichments ----------------------------------------------------------

  implicit class RichNDArray(val array: NDArray) extends AnyVal {
    def shapeSeq: IndexedSeq[Long] = array.shape().toVector
    /** The elements of a float32 array. */
    def toSeq: IndexedSeq[Float] = array.toFloatArray().toVector
    def :=(data: Array[Float]): NDArray = array.copyFrom(data)
    def :=(data: Seq[Float]): NDArray = array.copyFrom(data.toArray)
  }

  implicit class RichNamedArrays(val list: NamedArrays) extends AnyVal {
    def nameSeq: IndexedSeq[String] = (0 until list.size()).map(list.name)
    /** A new handle to the named entry, or None; the caller closes it. */
    def find(name: String): Option[NDArray] = optionally(list.get(name))
  }

  implicit class RichNet(val net: Net) extends AnyVal {
    def paramNames: IndexedSeq[String] = (0 until net.numParams()).map(i => net.paramName(i))
    def paramIndex(name: String): Option[Int] = optionally(net.findParam(name))
    def forward(train: Boolean, inputs: Seq[NDArray]): Unit = net.forward(train, inputs: _*)
    /** The loss scaler's options, or None without loss scaling. */
    def lossScalingOption: Option[JNet.LossScalingOptions] = Some(net.lossScaling()).filter(_.enabled)
  }

  implicit class RichKVStore(val kv: KVStore) extends AnyVal {
    def init(entries: (Long, NDArray)*): Unit =
      kv.init(entries.map(_._1).toArray, entries.map(_._2).toArray)
    def push(keys: Seq[Long], values: Seq[NDArray], priority: Int): Unit =
      kv.push(keys.toArray, values.toArray, priority)
    def pull(keys: Seq[Long], outs: Seq[NDArray], priority: Int): Unit =
      kv.pull(keys.toArray, outs.toArray, priority)
    def pushPull(keys: Seq[Long], values: Seq[NDArray], outs: Seq[NDArray], priority: Int = 0): Unit =
      kv.pushPull(keys.toArray, values.toArray, outs.toArray, priority)
  }

  implicit class RichDataLoader(val loader: DataLoader) extends AnyVal {
    /** The next batch, or None at the end of the epoch. */
    def nextOption(): Option[Batch] = Option(loader.next())
    /** Runs f on every batch of an epoch and closes each batch after it. */
    def foreachBatch(epoch: Int)(f: Batch => Unit): Unit = {
      loader.startEpoch(epoch)
      var batch = loader.next()
      while (batch != null) {
        using(batch)(f)
        batch = loader.next()
      }
    }
  }

  implicit class RichTrainer(val trainer: Trainer) extends AnyVal {
    def kvstoreOption: Option[KVStore] = Option(trainer.kvstore())
    /** (accuracy, mean loss) over one epoch of loader. */
    def evaluateOn(loader: DataLoader): (Double, Double) = {
      val e = trainer.evaluate(loader)
      (e.accuracy, e.loss)
    }
  }

  object Node {
    def role: Role = org.disttrain.Node.role()
    def run(options: Option[JKVStore.Options] = None): Unit = org.disttrain.Node.run(options.orNull)
    /** (local rank, local size): this worker's place among its host's workers, the GPU it trains on. */
    def localRank: (Int, Int) = {
      val r = org.disttrain.Node.localRank()
      (r(0), r(1))
    }
  }

  object Disttrain {
    def version: Int = org.disttrain.Disttrain.version()
    def versionString: String = org.disttrain.Disttrain.versionString()
    def buildInfo: org.disttrain.BuildInfo = org.disttrain.Disttrain.buildInfo()
    /** GPUs visible to this process; 0 without CUDA. */
    def gpuCount: Int = org.disttrain.Disttrain.gpuCount()
  }
}
