package org.disttrain;

/**
 * The process's timeline (MXNet's profiler): spans of what the library's threads do (a trainer's
 * data wait, forward, backward, optimizer and wait; each key part's push and pull; a server's
 * rounds; the scheduler's barriers), written as Chrome trace-event JSON that Perfetto and
 * chrome://tracing open. Process-wide, as the log handler is; DT_TIMELINE=FILE starts it without a
 * call. See docs/profiling.md.
 */
public final class Profiler {
  private Profiler() {}

  /** Starts recording (again; what was recorded stays). */
  public static void start() {
    disttrain.dt_profiler_start();
  }

  /** Stops recording; what was recorded stays. */
  public static void stop() {
    disttrain.dt_profiler_stop();
  }

  /** Writes what was recorded so far to {@code path} (IO when it cannot be written). */
  public static void dump(String path) {
    if (path == null) throw new NullPointerException("disttrain: null timeline path");
    disttrain.dt_profiler_dump(path);
  }
}
