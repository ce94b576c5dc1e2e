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
   * This worker's place among the worker processes of its host, {local rank, local size}: the GPU
   * a program that trains on one GPU per worker uses (torchrun's LOCAL_RANK). From DT_LOCAL_RANK /
   * DT_LOCAL_SIZE (dtrun), LOCAL_RANK / LOCAL_WORLD_SIZE (torchrun), Open MPI's, MPICH's or srun's
   * variables; {0, 1} when none is set, a size of 0 when the launcher does not say (srun).
   * INVALID_ARGUMENT names a malformed variable.
   */
  public static int[] localRank() {
    int[] rank = new int[1];
    int[] size = new int[1];
    disttrain.dt_node_local_rank(rank, size);
    return new int[] {rank[0], size[0]};
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
