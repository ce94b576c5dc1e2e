package org.disttrain;

/**
 * How a trainer's step keeps the workers of a distributed job together, mirroring {@code dt_sync_mode}:
 * SINGA DistOpt's four steps (see dt_c_api.h for each one's rules and errors).
 */
public enum SyncMode {
  /** backward_and_update: the gradients are reduced in full (the default). */
  FULL(0),
  /** backward_and_update_half: the gradients travel as float16. */
  HALF(1),
  /** backward_and_partial_update: local updates, then one rotating chunk of weights averaged per step. */
  PARTIAL(2),
  /** backward_and_sparse_update: only significant gradient elements travel (threshold or top-K). */
  SPARSE(3);

  private final int code;

  SyncMode(int code) {
    this.code = code;
  }

  public int code() {
    return code;
  }
}
