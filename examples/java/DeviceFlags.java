/*
 * DeviceFlags: the --gpus, --cpus and --precision flags of the Java training
 * example, with MXNet's meaning. --gpus 0,1 trains one replica on each
 * listed GPU (ids may repeat: 0,0 is two replicas on GPU 0), the trainer
 * splitting every batch across them as split_and_load does; no --gpus (or an
 * empty list) is the CPU, --cpus N replicas there (MXNet's
 * ctx=[mx.cpu(i) for i in range(N)], here N contexts on cpu(0), the only CPU
 * context the library has); --gpus local is the GPU numbered by the
 * process's local rank. --precision fp16 (with dynamic loss scaling) or bf16
 * is mixed precision, which the library runs on GPUs only.
 *
 * Every problem with these flags is an IllegalArgumentException, which the
 * example turns into exit status 2 before anything trains.
 */
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.disttrain.Context;
import org.disttrain.DType;
import org.disttrain.DeviceType;
import org.disttrain.Disttrain;
import org.disttrain.DtException;
import org.disttrain.Node;

final class DeviceFlags {
  static final String USAGE = "[--gpus LIST | --cpus N] [--precision fp32|fp16|bf16]";
  private static final Pattern GPU_ID = Pattern.compile("[0-9]{1,9}");

  private String gpus = "";
  private int cpus = 1;
  private boolean cpusGiven;
  private String precision = "fp32";

  // What validate() makes of them.
  private DeviceType device;
  private int[] ids;
  private boolean fromLocalRank;
  private DType dtype;

  /** Takes flag and its value if it is one of these flags; false otherwise. */
  boolean accept(String flag, String value) {
    switch (flag) {
      case "--gpus": gpus = value; return true;
      case "--cpus": cpus = Integer.parseInt(value); cpusGiven = true; return true;
      case "--precision": precision = value; return true;
      default: return false;
    }
  }

  /** Reads the flags strictly; IllegalArgumentException names what is wrong. */
  void validate() {
    switch (precision) {
      case "fp32": dtype = DType.FLOAT32; break;
      case "fp16": dtype = DType.FLOAT16; break;
      case "bf16": dtype = DType.BFLOAT16; break;
      default: throw new IllegalArgumentException("--precision must be fp32, fp16 or bf16, not \"" + precision + "\"");
    }
    if (gpus.isEmpty()) {
      if (cpus < 1) throw new IllegalArgumentException("--cpus must be at least 1, not " + cpus);
      device = DeviceType.CPU;
      ids = new int[cpus];
      if (dtype != DType.FLOAT32) {
        throw new IllegalArgumentException(
            "--precision " + precision + ": the CPU computes in fp32 only; fp16 and bf16 need --gpus");
      }
      return;
    }
    if (cpusGiven) {
      throw new IllegalArgumentException("--cpus and --gpus exclude each other: replicas go on the CPU or on GPUs");
    }
    device = DeviceType.GPU;
    if (gpus.equals("local")) {
      try {
        ids = new int[] {Node.localRank()[0]};
      } catch (DtException e) {
        throw new IllegalArgumentException("--gpus local: " + e.getMessage(), e);
      }
      fromLocalRank = true;
      return;
    }
    // split with -1 keeps trailing empty items, which are errors.
    String[] items = gpus.split(",", -1);
    ids = new int[items.length];
    for (int i = 0; i < items.length; ++i) {
      if (!GPU_ID.matcher(items[i]).matches()) {
        throw new IllegalArgumentException("--gpus takes GPU ids such as 0,1 or 0,0 ('' for the CPU, local for the "
            + "local rank's GPU), not \"" + gpus + "\"");
      }
      ids[i] = Integer.parseInt(items[i]);
    }
  }

  /** Fails naming the first GPU asked for that this process does not see (0 without CUDA). */
  void checkMachine() {
    if (device != DeviceType.GPU) return;
    int count = Disttrain.gpuCount();
    for (int id : ids) {
      if (id >= count) {
        throw new IllegalArgumentException("--gpus: GPU " + id + " was asked for, but this machine has " + count
            + " GPU(s)" + (fromLocalRank ? " (--gpus local: this process's local rank)" : ""));
      }
    }
  }

  /** One context per replica, threads CPU threads each; the caller closes them. */
  Context[] open(int threads) {
    List<Context> contexts = new ArrayList<>();
    try {
      for (int id : ids) {
        Context ctx = Context.create(device, id);
        contexts.add(ctx);
        ctx.setNumThreads(threads);
      }
    } catch (RuntimeException e) {
      for (Context c : contexts) c.close();
      throw e;
    }
    return contexts.toArray(new Context[0]);
  }

  /**
   * The kvstore: the one given, else "device" for several GPU replicas (Gluon's default there; the
   * library's "device" store reduces on a GPU, so CPU replicas keep "local"), else fallback.
   */
  String kvstore(String given, boolean kvstoreGiven, String fallback) {
    if (kvstoreGiven) return given;
    return ids.length > 1 && device == DeviceType.GPU ? "device" : fallback;
  }

  DType dtype() {
    return dtype;
  }

  String precision() {
    return precision;
  }

  /** The replicas' contexts: "cpu(0)", "gpu(0),gpu(0)". */
  String contextNames() {
    StringBuilder names = new StringBuilder();
    for (int id : ids) {
      if (names.length() > 0) names.append(',');
      names.append(device == DeviceType.GPU ? "gpu(" : "cpu(").append(id).append(')');
    }
    return names.toString();
  }
}
