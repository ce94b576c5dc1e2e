package org.disttrain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Disttrain.setLogHandler: the library's real lines reach a Java handler, not stderr. */
@Timeout(120)
class LogTest {
  private static String classPathOf(Class<?> c) throws Exception {
    return new File(c.getProtectionDomain().getCodeSource().getLocation().toURI()).getPath();
  }

  private static String readAll(InputStream in) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buffer = new byte[8192];
    for (int n; (n = in.read(buffer)) > 0; ) out.write(buffer, 0, n);
    return out.toString(StandardCharsets.UTF_8.name());
  }

  @Test
  void aSchedulersLinesReachTheHandler() throws Exception {
    String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    String classPath =
        classPathOf(Disttrain.class) + File.pathSeparator + classPathOf(LogHandlerScheduler.class);
    ProcessBuilder builder =
        new ProcessBuilder(
            java,
            "-Djava.library.path=" + System.getProperty("java.library.path"),
            "-cp",
            classPath,
            "org.disttrain.LogHandlerScheduler");
    for (String name :
        new String[] {"DMLC_ROLE", "DT_JOB_SECRET", "DT_JOB_SECRET_FILE", "DT_LOG_LEVEL", "PS_VERBOSE"}) {
      builder.environment().remove(name);
    }
    builder.environment().put("DMLC_PS_ROOT_PORT", "0");
    File errors = File.createTempFile("disttrain-log-test", ".err");
    errors.deleteOnExit();
    builder.redirectError(errors);
    Process process = builder.start();
    String out = readAll(process.getInputStream());
    assertTrue(process.waitFor(60, TimeUnit.SECONDS), "the scheduler process did not end");
    String err = new String(Files.readAllBytes(errors.toPath()), StandardCharsets.UTF_8);
    assertEquals(0, process.exitValue(), out + err);
    assertTrue(out.contains("LOG WARNING||no job secret"), out);
    assertTrue(out.contains("LOG INFO||job layout"), out);
    assertFalse(err.contains("no job secret"), "a line reached stderr despite the handler: " + err);
  }

  @Test
  void toLoggerMapsLevelsOntoJavaUtilLogging() {
    Logger logger = Logger.getLogger("disttrain.test");
    logger.setUseParentHandlers(false);
    logger.setLevel(Level.ALL);
    List<LogRecord> records = new ArrayList<>();
    Handler collect =
        new Handler() {
          @Override
          public void publish(LogRecord record) {
            records.add(record);
          }

          @Override
          public void flush() {}

          @Override
          public void close() {}
        };
    logger.addHandler(collect);
    LogHandler handler = LogHandler.toLogger(logger);
    handler.log(LogLevel.WARNING, "server 1", "lost");
    handler.log(LogLevel.DEBUG, "", "node table");
    logger.removeHandler(collect);
    assertEquals(2, records.size());
    assertEquals(Level.WARNING, records.get(0).getLevel());
    assertEquals("server 1: lost", records.get(0).getMessage());
    assertEquals(Level.FINE, records.get(1).getLevel());
    assertEquals("node table", records.get(1).getMessage());
  }
}
