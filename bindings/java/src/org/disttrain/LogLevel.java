package org.disttrain;

/** How much the library says, mirroring {@code dt_log_level}; each level includes the ones before it. */
public enum LogLevel {
  NONE(0),
  ERROR(1),
  WARNING(2),
  /** Joins, losses, the job's layout: the default. */
  INFO(3),
  /** Connections, node tables (PS_VERBOSE=1). */
  DEBUG(4),
  /** Every message (PS_VERBOSE=2). */
  TRACE(5);

  private final int code;

  LogLevel(int code) {
    this.code = code;
  }

  /** The {@code dt_log_level} value. */
  public int code() {
    return code;
  }

  static LogLevel fromCode(int code) {
    for (LogLevel level : values()) {
      if (level.code == code) return level;
    }
    return TRACE;
  }
}
