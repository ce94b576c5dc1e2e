package org.disttrain.scalatests

import org.disttrain.scala._

/**
 * One worker of a dist_sync job started by dtrun: pushes rank-dependent
 * values and checks that the pulled result is the sum over all workers.
 * Exits 1 on a mismatch, so dtrun and the test fail.
 */
object DistSyncWorker {
  def main(args: Array[String]): Unit = {
    val n = 500
    val code =
      try scoped { s =>
        val ctx = s(Context.cpu)
        val kv = s(KVStore("dist_sync", KVStore.options.requestTimeout(60)))
        val workers = kv.numWorkers()
        val rank = kv.rank()
        if (workers != 2) throw new AssertionError(s"expected 2 workers, got $workers")
        val value = s(NDArray.zeros(ctx, n))
        val out = s(NDArray.zeros(ctx, n))
        kv.init(11L -> value)
        for (round <- 1 to 3) {
          def contribution(r: Int): IndexedSeq[Float] = (0 until n).map(i => round * (r + 1) + i.toFloat)
          val expected = (0 until workers).map(contribution).transpose.map(_.sum)
          value := contribution(rank)
          kv.pushPull(Seq(11L), Seq(value), Seq(out))
          val got = out.toSeq
          val bad = got.indices.find(i => math.abs(got(i) - expected(i)) > 1e-3f * math.max(1f, expected(i)))
          bad.foreach(i => throw new AssertionError(s"round $round: element $i is ${got(i)}, expected ${expected(i)}"))
        }
        kv.barrier()
        println(s"scala worker $rank of $workers: dist_sync pushpull sums OK")
        0
      } catch {
        case t: Throwable =>
          t.printStackTrace()
          1
      }
    sys.exit(code)
  }
}
