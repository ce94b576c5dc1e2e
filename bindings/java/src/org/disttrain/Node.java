package org.disttrain;

/** The calls a parameter-server job's processes make about their role. */
public final class Node {
  private Node() {}

  /** This process's role from DMLC_ROLE (WORKER when unset); INVALID_ARGUMENT for an unknown value. */
  public static Role role() {
    int[] out = new int[1];
    disttrain.dt_node_role(out);
    return Role.fromCode(out[0]);
  }

  /**
   * Runs this process as the scheduler or a server of the job described by
   * the DMLC_* environment until the job shuts down; options may be null.
   * A worker's role is INVALID_ARGUMENT: workers create a dist KVStore.
   */
  public static void run(KVStore.Options options) {
    if (options == null) {
      disttrain.dt_node_run(null);
      return;
    }
    dt_kvstore_options o = options.toNative();
    try {
      disttrain.dtj_node_run(o, options.schedulerHost);
    } finally {
      o.delete();
    }
  }
}
