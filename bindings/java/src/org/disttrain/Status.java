package org.disttrain;

/** The causes of failure, mirroring {@code dt_status} value for value. */
public enum Status {
  OK(0),
  INVALID_ARGUMENT(1),
  OUT_OF_MEMORY(2),
  NOT_SUPPORTED(3),
  BAD_STATE(4),
  TIMED_OUT(5),
  CLOSED(6),
  NETWORK(7),
  REMOTE(8),
  PROTOCOL(9),
  CUDA(10),
  NCCL(11),
  IO(12),
  INTERNAL(13),
  INVALID_HANDLE(14),
  SHAPE_MISMATCH(15),
  DTYPE_MISMATCH(16),
  NO_DEVICE(17),
  NOT_FOUND(18),
  PEER_LOST(19),
  UNAUTHENTICATED(20),
  /** A value this binding does not know: the library is newer (statuses are append-only). */
  UNKNOWN(-1);

  private final int code;

  Status(int code) {
    this.code = code;
  }

  /** The {@code dt_status} value. */
  public int code() {
    return code;
  }

  /** The constant for a {@code dt_status} value; {@link #UNKNOWN} for one added after this binding. */
  public static Status fromCode(int code) {
    for (Status s : values()) {
      if (s.code == code) return s;
    }
    return UNKNOWN;
  }

  /** The library's static text for this status ("invalid argument", ...). */
  public String description() {
    return disttrain.dt_status_string(code);
  }
}
