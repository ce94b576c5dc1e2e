package org.disttrain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The timeline through the binding: a data loader's waits are recorded while it runs, not after. */
@Timeout(120)
class ProfilerTest {
  static int count(String text, String name) {
    Matcher m = Pattern.compile("\"name\":\"" + Pattern.quote(name) + "\",\"cat\":\"train\",\"ph\":\"X\"").matcher(text);
    int n = 0;
    while (m.find()) ++n;
    return n;
  }

  static void nextBatches(DataLoader loader, int batches) {
    for (int i = 0; i < batches; ++i) {
      try (DataLoader.Batch b = loader.next()) {
        assertTrue(b != null);
      }
    }
  }

  @Test
  void recordsDataWaitsWhileStarted(@TempDir Path dir) throws Exception {
    try (DataLoader loader = DataLoader.mnist(null, "t10k", new DataLoader.Options().batchSize(100).shuffle(false))) {
      loader.startEpoch(0);
      Path before = dir.resolve("before.json");
      Profiler.dump(before.toString());
      int already = count(Files.readString(before, StandardCharsets.UTF_8), "data wait");
      Profiler.start();
      nextBatches(loader, 3);
      Profiler.stop();
      nextBatches(loader, 2);
      Path after = dir.resolve("after.json");
      Profiler.dump(after.toString());
      String text = Files.readString(after, StandardCharsets.UTF_8);
      assertTrue(text.startsWith("{\"traceEvents\":["), text.substring(0, Math.min(80, text.length())));
      assertEquals(already + 3, count(text, "data wait"));
    }
    DtException e = assertThrows(DtException.class, () -> Profiler.dump(""));
    assertEquals(Status.INVALID_ARGUMENT, e.status());
    e = assertThrows(DtException.class, () -> Profiler.dump(dir.resolve("no/such/dir/x.json").toString()));
    assertEquals(Status.IO, e.status());
  }
}
