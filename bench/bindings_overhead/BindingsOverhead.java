/*
 * BindingsOverhead (Java): the time of one small KVStore.pushPull (one key,
 * `elements` float32 values, "local" kvstore) through the Java binding, the
 * same call bindings_overhead.c times in C. run.sh prints the ratio.
 *
 *   java -Djava.library.path=<dir> -cp disttrain.jar:bindings-overhead.jar BindingsOverhead \
 *     [--elements N] [--iterations N] [--repeats N]
 */
import org.disttrain.Context;
import org.disttrain.KVStore;
import org.disttrain.NDArray;

public final class BindingsOverhead {
  private BindingsOverhead() {}

  public static void main(String[] args) {
    long elements = 256;
    long iterations = 200000;
    long repeats = 5;
    for (int i = 0; i + 1 < args.length; i += 2) {
      long v = Long.parseLong(args[i + 1]);
      switch (args[i]) {
        case "--elements": elements = v; break;
        case "--iterations": iterations = v; break;
        case "--repeats": repeats = v; break;
        default:
          System.err.println("usage: BindingsOverhead [--elements N] [--iterations N] [--repeats N]");
          System.exit(2);
      }
    }
    final long key = 3;
    double best = -1;
    try (Context ctx = Context.cpu();
        KVStore kv = KVStore.create("local");
        NDArray value = NDArray.zeros(ctx, elements);
        NDArray out = NDArray.zeros(ctx, elements)) {
      value.fill(1.0);
      kv.init(key, value);
      // Warm-up: the JIT compiles the call path before timing starts.
      for (long k = 0; k < iterations / 10 + 20000; ++k) kv.pushPull(key, value, out);
      for (long r = 0; r < repeats; ++r) {
        long start = System.nanoTime();
        for (long k = 0; k < iterations; ++k) kv.pushPull(key, value, out);
        double perCall = (System.nanoTime() - start) / (double) iterations;
        if (best < 0 || perCall < best) best = perCall;
      }
    }
    System.out.printf("java: kvstore_pushpull of %d float32: %.1f ns per call (best of %d x %d)%n",
        elements, best, repeats, iterations);
    System.out.printf("{\"bench\":\"bindings_overhead\",\"lang\":\"java\",\"op\":\"kvstore_pushpull\",\"elements\":%d,"
        + "\"iterations\":%d,\"repeats\":%d,\"ns_per_call\":%.1f}%n", elements, iterations, repeats, best);
  }
}
