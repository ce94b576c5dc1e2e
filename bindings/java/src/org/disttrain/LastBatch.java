package org.disttrain;

/** What a data loader does with an incomplete last batch, mirroring {@code dt_last_batch}. */
public enum LastBatch {
  KEEP(0),
  DISCARD(1),
  ROLLOVER(2);

  private final int code;

  LastBatch(int code) {
    this.code = code;
  }

  public int code() {
    return code;
  }

  static LastBatch fromCode(int code) {
    for (LastBatch b : values()) {
      if (b.code == code) return b;
    }
    throw new DtException(Status.NOT_SUPPORTED, "last-batch value " + code + " is newer than this binding");
  }
}
