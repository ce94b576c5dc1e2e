package org.disttrain;

/** A process's role in a parameter-server job, mirroring {@code dt_role}. */
public enum Role {
  WORKER(0),
  SERVER(1),
  SCHEDULER(2);

  private final int code;

  Role(int code) {
    this.code = code;
  }

  public int code() {
    return code;
  }

  static Role fromCode(int code) {
    for (Role r : values()) {
      if (r.code == code) return r;
    }
    throw new DtException(Status.NOT_SUPPORTED, "role value " + code + " is newer than this binding");
  }
}
