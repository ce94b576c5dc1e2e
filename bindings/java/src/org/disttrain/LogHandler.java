package org.disttrain;

import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Receives one line of the library's log (see {@link Disttrain#setLogHandler}): its level, facility
 * (who speaks: "scheduler", "server 1", "worker 0", "allreduce", "trainer"; "" for the job as a
 * whole) and message. It runs on the library's threads, one line at a time, and must not call into
 * disttrain; what it throws is dropped.
 */
@FunctionalInterface
public interface LogHandler {
  void log(LogLevel level, String facility, String message);

  /**
   * A handler that hands each line to a java.util.logging logger (and through it to SLF4J, Log4j
   * or whatever bridge the service installs): ERROR as SEVERE, WARNING as WARNING, INFO as INFO,
   * DEBUG as FINE, TRACE as FINER, the facility before the message.
   */
  static LogHandler toLogger(Logger logger) {
    return (level, facility, message) -> {
      Level julLevel;
      switch (level) {
        case ERROR:
          julLevel = Level.SEVERE;
          break;
        case WARNING:
          julLevel = Level.WARNING;
          break;
        case INFO:
          julLevel = Level.INFO;
          break;
        case DEBUG:
          julLevel = Level.FINE;
          break;
        default:
          julLevel = Level.FINER;
          break;
      }
      logger.log(julLevel, facility.isEmpty() ? message : facility + ": " + message);
    };
  }
}
