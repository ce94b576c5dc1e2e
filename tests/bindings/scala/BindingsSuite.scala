package org.disttrain.scalatests

import org.disttrain.scala._

/**
 * The Scala layer's tests, run by `scala` as a program: every check prints
 * its name and PASS or FAIL, and the process exits 1 when any failed.
 * (Debian ships no Scala test runner for 2.11; a plain program keeps the
 * sources valid for 2.11, 2.12 and 2.13.)
 */
object BindingsSuite {
  private var failures = List.empty[String]

  private def check(name: String)(body: => Unit): Unit = {
    val started = System.nanoTime()
    try {
      body
      println(f"PASS $name (${(System.nanoTime() - started) / 1e9}%.1f s)")
    } catch {
      case t: Throwable =>
        failures = name :: failures
        println(s"FAIL $name: $t")
        t.printStackTrace(System.out)
    }
  }

  private def expect(condition: Boolean, what: => String): Unit =
    if (!condition) throw new AssertionError(what)

  private def statusAndMessage(f: => Any): (Option[Status], String) =
    try {
      f
      (None, "")
    } catch { case e: org.disttrain.DtException => (Some(e.status()), e.getMessage) }

  private def statusOf(f: => Any): Option[Status] = statusAndMessage(f)._1

  private def expectStatus(status: Status)(f: => Any): Unit = {
    val got = statusOf(f)
    expect(got == Some(status), s"expected DtException($status), got $got")
  }

  def main(args: Array[String]): Unit = {
    check("create and close every handle; close is idempotent") {
      val ctx = Context.cpu
      val a = NDArray.zeros(ctx, 2, 2)
      val net = Net(ctx, "mlp", Some("""{"input_shape": [1, 28, 28], "hidden": [8], "classes": 10}"""))
      val opt = Optimizer("sgd", "learning_rate" -> 0.1, "momentum" -> 0.9)
      val kv = KVStore("local")
      val trainer = Trainer(net.initialize(1), opt, Some(kv))
      val loader = DataLoader.mnist("t10k", DataLoader.options.batchSize(500))
      val all: Seq[AutoCloseable] = Seq(trainer, loader, kv, opt, net, a, ctx)
      all.foreach(_.close())
      all.foreach(_.close())
      expect(trainer.isClosed && loader.isClosed && ctx.isClosed, "not closed")
    }

    check("a closed handle is INVALID_HANDLE, never a crash") {
      val ctx = Context.cpu
      val a = NDArray.zeros(ctx, 3)
      a.close()
      expectStatus(org.disttrain.Status.INVALID_HANDLE)(a.toSeq)
      ctx.close()
      expectStatus(org.disttrain.Status.INVALID_HANDLE)(NDArray.zeros(ctx, 3))
    }

    check("error paths carry the C status") {
      using(Context.cpu) { ctx =>
        expectStatus(org.disttrain.Status.INVALID_ARGUMENT)(NDArray.zeros(ctx, 2, -1))
        expectStatus(org.disttrain.Status.INVALID_ARGUMENT)(KVStore("nope"))
        expectStatus(org.disttrain.Status.INVALID_ARGUMENT)(Optimizer("sgd", "no_such_key" -> 1.0))
        expectStatus(org.disttrain.Status.INVALID_ARGUMENT)(Net(ctx, "vgg16"))
        expectStatus(org.disttrain.Status.NOT_FOUND)(DataLoader.mnist("t10k", dir = Some("/nonexistent/dt-scala")))
        using(NDArray.zeros(ctx, 2, 3)) { a =>
          expectStatus(org.disttrain.Status.SHAPE_MISMATCH)(a := Array(1f, 2f))
        }
      }
    }

    check("gpuCount bounds the GPU contexts; localRank is the launcher's") {
      val n = Disttrain.gpuCount
      expect(n >= 0, s"gpuCount $n")
      val refused = statusOf(Context.gpu(n).close())
      val allowed = if (n > 0) Set(org.disttrain.Status.NO_DEVICE)
                    else Set(org.disttrain.Status.NO_DEVICE, org.disttrain.Status.NOT_SUPPORTED)
      expect(refused.exists(allowed), s"Context.gpu($n) with $n GPU(s): $refused")
      val (rank, size) = Node.localRank
      val java = org.disttrain.Node.localRank()
      expect(rank == java(0) && size == java(1), s"localRank ($rank, $size), Java's (${java(0)}, ${java(1)})")
      expect(rank >= 0 && (size == 0 || rank < size), s"localRank ($rank, $size)")
    }

    check("a CPU net computes in float32 and refuses 16 bits") {
      scoped { s =>
        val ctx = s(Context.cpu)
        val net = s(Net(ctx, "lenet"))
        expect(net.computeDtype() == org.disttrain.DType.FLOAT32, s"compute dtype ${net.computeDtype()}")
        expect(net.lossScale() == 1.0, s"loss scale ${net.lossScale()}")
        // Mixed precision is a GPU feature.
        expectStatus(org.disttrain.Status.NOT_SUPPORTED)(net.setComputeDtype(org.disttrain.DType.FLOAT16))
        expectStatus(org.disttrain.Status.NOT_SUPPORTED)(net.setComputeDtype(org.disttrain.DType.BFLOAT16))
        expectStatus(org.disttrain.Status.INVALID_ARGUMENT)(net.setComputeDtype(org.disttrain.DType.INT64))
        expect(net.computeDtype() == org.disttrain.DType.FLOAT32, s"after the refusals ${net.computeDtype()}")
        net.setComputeDtype(org.disttrain.DType.FLOAT32)
      }
    }

    check("loss scaling: the defaults, bad values by name, a float32 net has none") {
      scoped { s =>
        val defaults = Net.lossScaling
        expect(defaults.enabled && defaults.initScale == 65536.0 && defaults.growthFactor == 2.0 &&
          defaults.backoffFactor == 0.5 && defaults.growthInterval == 2000L, s"defaults $defaults")
        val ctx = s(Context.cpu)
        val net = s(Net(ctx, "lenet"))
        expect(net.lossScalingOption.isEmpty, s"a float32 net scales: ${net.lossScalingOption}")
        expectStatus(org.disttrain.Status.INVALID_ARGUMENT)(net.setLossScaling(Net.lossScaling))
        val bad = statusAndMessage(net.setLossScaling(Net.lossScaling.backoffFactor(2.0)))
        expect(bad._1 == Some(org.disttrain.Status.INVALID_ARGUMENT) && bad._2.contains("backoff_factor"),
          s"backoffFactor 2: $bad")
        expectStatus(org.disttrain.Status.INVALID_ARGUMENT)(net.setLossScaling(Net.lossScaling.growthInterval(0L)))
        net.setLossScaling(Net.lossScaling.enabled(false))
        expect(net.lossScalingOption.isEmpty && net.lossScale() == 1.0, s"loss scale ${net.lossScale()}")
      }
    }

    check("data round-trips through arrays, Seq and views") {
      scoped { s =>
        val ctx = s(Context.cpu)
        val a = s(NDArray(ctx, Array(1f, 2f, 3f, 4f, 5f, 6f), 2, 3))
        expect(a.shapeSeq == Vector(2L, 3L), s"shape ${a.shapeSeq}")
        expect(a.toSeq == Vector(1f, 2f, 3f, 4f, 5f, 6f), s"values ${a.toSeq}")
        val row = s(a.slice(1, 2))
        row := Seq(7f, 8f, 9f)
        expect(a.toSeq == Vector(1f, 2f, 3f, 7f, 8f, 9f), s"after the view write ${a.toSeq}")
        val ids = s(NDArray(ctx, org.disttrain.DType.INT64, 3))
        ids.copyFrom(Array(1L, -2L, Long.MaxValue))
        expect(ids.toLongArray().toVector == Vector(1L, -2L, Long.MaxValue), "int64 values")
      }
    }

    check("named arrays: Option for a missing name") {
      val file = java.nio.file.Files.createTempFile("dt-scala", ".safetensors")
      try scoped { s =>
        val ctx = s(Context.cpu)
        NDArray.save(file.toString, Seq("w" -> s(NDArray(ctx, Seq(1f, 2f), 2))))
        val list = s(NamedArrays.load(ctx, file.toString))
        expect(list.nameSeq == Vector("w"), s"names ${list.nameSeq}")
        expect(list.find("missing").isEmpty, "found a missing entry")
        val w = s(list.find("w").get)
        expect(w.toSeq == Vector(1f, 2f), "w")
      } finally java.nio.file.Files.deleteIfExists(file)
    }

    check("local kvstore sums pushes") {
      scoped { s =>
        val ctx = s(Context.cpu)
        val kv = s(KVStore("local"))
        val a = s(NDArray(ctx, Seq(1f, 2f), 2))
        val b = s(NDArray(ctx, Seq(10f, 20f), 2))
        val out = s(NDArray.zeros(ctx, 2))
        kv.init(1L -> a)
        kv.push(Seq(1L, 1L), Seq(a, b), 0)
        kv.pull(Seq(1L), Seq(out), 0)
        expect(out.toSeq == Vector(11f, 22f), s"pulled ${out.toSeq}")
      }
    }

    check("sync modes: the options reach the trainer, refusals carry their status") {
      scoped { s =>
        val ctx = s(Context.cpu.setNumThreads(1))
        val net = s(Net(ctx, "mlp", Some("""{"input_shape": [1, 28, 28], "hidden": [8], "classes": 10}""")).initialize(1))
        val opt = s(Optimizer("sgd", "learning_rate" -> 0.1))
        val kv = s(KVStore("local"))
        s(Trainer(net, opt, Some(kv), Trainer.options.syncMode(SyncMode.Full)))
        expectStatus(org.disttrain.Status.INVALID_ARGUMENT)(Trainer(net, opt, None, Trainer.options.partial(1000)).close())
        val (status, message) = statusAndMessage(Trainer(net, opt, Some(kv), Trainer.options.partial(1000)).close())
        expect(status == Some(org.disttrain.Status.NOT_SUPPORTED) && message.contains("allreduce"), s"$status: $message")
        expectStatus(org.disttrain.Status.NOT_SUPPORTED)(
          Trainer(net, opt, Some(kv), Trainer.options.syncMode(SyncMode.Half)).close())
        expectStatus(org.disttrain.Status.INVALID_ARGUMENT)(
          Trainer(net, opt, Some(kv), Trainer.options.sparseThreshold(-1.0, true)).close())
      }
    }

    check("a short local training run lowers the loss") {
      scoped { s =>
        val ctx = s(Context.cpu.setNumThreads(1))
        val net = s(Net(ctx, "mlp", Some("""{"input_shape": [1, 28, 28], "hidden": [64], "classes": 10}""")).initialize(7))
        val opt = s(Optimizer("sgd", "learning_rate" -> 0.1, "momentum" -> 0.9))
        val trainer = s(Trainer(net, opt, Some(s(KVStore("local")))))
        // 600 samples: part 0 of 100 of the training set.
        val train = s(DataLoader.mnist("train", DataLoader.options.batchSize(32).seed(3).part(0, 100)))
        def epochLoss(epoch: Int): Double = {
          var sum = 0.0
          var n = 0
          train.foreachBatch(epoch) { b =>
            sum += trainer.trainBatch(b.data(), b.labels()).loss
            n += 1
          }
          sum / n
        }
        val first = epochLoss(0)
        val last = (1 until 4).map(epochLoss).last
        expect(last < 0.9 * first, s"loss went from $first to $last")
        // float32 has no loss scaling: no step is ever skipped.
        expect(trainer.skippedSteps() == 0L, s"${trainer.skippedSteps()} steps skipped")
        expect(net.lossScale() == 1.0, s"loss scale ${net.lossScale()}")
        expectStatus(org.disttrain.Status.BAD_STATE)(net.setComputeDtype(org.disttrain.DType.FLOAT32))
        val test = s(DataLoader.mnist("t10k", DataLoader.options.batchSize(1000).shuffle(false)))
        val (accuracy, _) = trainer.evaluateOn(test)
        expect(accuracy > 0.5, s"test accuracy $accuracy")
      }
    }

    check("create and close 10,000 arrays: RSS grows < 8 MiB") {
      // 4 KiB per array: 10,000 leaked arrays would be over 40 MiB. The JVM
      // runs with a fixed, pre-touched heap so heap resizing does not move RSS.
      def rss: Long = {
        val statm = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get("/proc/self/statm")))
        statm.trim.split("\\s+")(1).toLong * 4096L
      }
      using(Context.cpu) { ctx =>
        val data = new Array[Float](1024)
        def churn(): Unit = (0 until 10000).foreach { _ => using(NDArray.zeros(ctx, 1024))(_ := data) }
        churn()
        System.gc()
        val before = rss
        churn()
        System.gc()
        val growth = rss - before
        println(s"  RSS growth $growth bytes")
        expect(growth < (8L << 20), s"RSS grew by $growth bytes")
      }
    }

    if (failures.nonEmpty) {
      println(s"${failures.size} check(s) failed: ${failures.reverse.mkString(", ")}")
      sys.exit(1)
    }
    println("all checks passed")
  }
}
