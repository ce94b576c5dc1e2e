package org.disttrain;

/** The JNI glue's way in: the native log handler calls {@link #line} for each line. */
final class LogDispatch {
  private LogDispatch() {}

  static volatile LogHandler handler;

  /** Called from the glue on the library's thread. */
  static void line(int level, String facility, String message) {
    LogHandler h = handler;
    if (h == null) return;
    try {
      h.log(LogLevel.fromCode(level), facility, message);
    } catch (Throwable t) {
      // A handler's failure must not unwind into the library's thread.
    }
  }
}
