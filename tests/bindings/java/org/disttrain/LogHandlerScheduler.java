package org.disttrain;

import java.util.ArrayList;
import java.util.List;

/**
 * The process LogTest starts: a scheduler of a job whose nodes never come, with a Java log
 * handler. The job's lines (its layout, the warning that it has no secret) come once per process,
 * hence a JVM of its own. Prints what the handler got, one "LOG level|facility|message" line each.
 */
public final class LogHandlerScheduler {
  private LogHandlerScheduler() {}

  public static void main(String[] args) {
    List<String> lines = new ArrayList<>();
    Disttrain.setLogHandler(
        LogLevel.INFO,
        (level, facility, message) -> {
          synchronized (lines) {
            lines.add(level + "|" + facility + "|" + message);
          }
        });
    KVStore.Options options =
        new KVStore.Options()
            .startupTimeout(0.3)
            .heartbeatInterval(0.1)
            .heartbeatTimeout(0.3)
            .shutdownTimeout(0.3)
            .role(Role.SCHEDULER)
            .numServers(1)
            .numWorkers(1)
            .scheduler("127.0.0.1", 0);
    try {
      Node.run(options);
      System.out.println("FAIL: a scheduler without nodes returned");
      System.exit(1);
    } catch (DtException e) {
      if (e.status() != Status.TIMED_OUT) {
        System.out.println("FAIL: " + e);
        System.exit(1);
      }
    }
    Disttrain.setLogHandler(LogLevel.INFO, null);
    synchronized (lines) {
      for (String line : lines) System.out.println("LOG " + line);
    }
  }
}
