package org.disttrain;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Loads libdisttrain and the JNI glue (libdisttrain_java), then checks that
 * the three agree on the version: the Java classes (generated from the
 * header), the glue (compiled against the header) and the library actually
 * loaded. A mismatch would otherwise show up later as wrong struct layouts or
 * missing symbols.
 *
 * <p>Where the libraries come from, first match wins:
 * <ol>
 *   <li>the directory named by the system property {@value #PATH_PROPERTY};
 *   <li>a directory on {@code java.library.path} that holds the glue (an
 *       installed copy, or the build tree in the project's own tests);
 *   <li>the jar itself: the Maven artifact carries both libraries under
 *       {@value #RESOURCE_ROOT}/&lt;platform&gt;/, listed in load order in
 *       its {@value #INDEX} file. They are copied into a private temporary
 *       directory, loaded, and deleted again (a loaded library stays mapped).
 * </ol>
 * libdisttrain is loaded before the glue, from the same place, so that the
 * glue binds to that copy by soname whatever its run path says.
 */
final class NativeLibrary {
  static final String LIBRARY = "disttrain";
  static final String GLUE = "disttrain_java";
  static final String PATH_PROPERTY = "disttrain.library.path";
  static final String RESOURCE_ROOT = "/org/disttrain/native";
  static final String INDEX = "libraries";

  /** The glue file that was loaded: written once, by load(), under the JNI class's initialization. */
  private static volatile String loadedGlue;

  private NativeLibrary() {}

  static void load() {
    String override = System.getProperty(PATH_PROPERTY);
    if (override != null && !override.isEmpty()) {
      Path dir = Paths.get(override).toAbsolutePath();
      if (!Files.isRegularFile(dir.resolve(System.mapLibraryName(GLUE)))) {
        throw new UnsatisfiedLinkError("disttrain: -D" + PATH_PROPERTY + "=" + override
            + " has no " + System.mapLibraryName(GLUE));
      }
      loadFromDirectory(dir, "-D" + PATH_PROPERTY);
      return;
    }
    String libraryPath = System.getProperty("java.library.path", "");
    for (String entry : libraryPath.split(File.pathSeparator)) {
      if (entry.isEmpty()) continue;
      Path dir = Paths.get(entry).toAbsolutePath();
      if (Files.isRegularFile(dir.resolve(System.mapLibraryName(GLUE)))) {
        loadFromDirectory(dir, "java.library.path");
        return;
      }
    }
    String platform = platform();
    String resources = RESOURCE_ROOT + "/" + platform;
    List<String> files = bundledLibraries(resources);
    if (files.isEmpty()) {
      throw new UnsatisfiedLinkError("disttrain: cannot find " + System.mapLibraryName(GLUE)
          + ": -D" + PATH_PROPERTY + " is not set, no directory on java.library.path (" + libraryPath
          + ") holds it, and this jar carries no native libraries for " + platform
          + " (the org.disttrain:disttrain Maven artifact does for linux-x86_64)");
    }
    loadBundled(resources, files);
  }

  /** Absolute path of the loaded JNI glue (for the jar's copy: its temporary, already deleted, file). */
  static String loadedPath() {
    return loadedGlue;
  }

  private static void loadFromDirectory(Path dir, String source) {
    Path library = dir.resolve(System.mapLibraryName(LIBRARY));
    Path glue = dir.resolve(System.mapLibraryName(GLUE));
    try {
      // Installed layouts may ship only libdisttrain.so.N beside the glue;
      // the glue's run path ($ORIGIN) finds it then.
      if (Files.exists(library)) System.load(library.toString());
      System.load(glue.toString());
    } catch (UnsatisfiedLinkError e) {
      UnsatisfiedLinkError error = new UnsatisfiedLinkError(
          "disttrain: cannot load " + glue + " (found through " + source + "): " + e.getMessage());
      error.initCause(e);
      throw error;
    }
    loadedGlue = glue.toString();
  }

  private static void loadBundled(String resources, List<String> files) {
    Path dir;
    try {
      // Owner-only permissions on POSIX, so no other user can swap a file
      // between the copy and the load.
      dir = Files.createTempDirectory("disttrain-");
    } catch (IOException e) {
      throw linkError("cannot create a temporary directory for the jar's native libraries (set -D"
          + PATH_PROPERTY + " to an installed copy instead)", e);
    }
    List<Path> copies = new ArrayList<>();
    try {
      for (String name : files) {
        Path copy = dir.resolve(name);
        try (InputStream in = NativeLibrary.class.getResourceAsStream(resources + "/" + name)) {
          if (in == null) throw new IOException(resources + "/" + name + " is listed but missing");
          Files.copy(in, copy);
        }
        copies.add(copy);
      }
      Path glue = dir.resolve(System.mapLibraryName(GLUE));
      if (!copies.contains(glue)) throw new IOException(resources + "/" + INDEX + " does not list " + glue.getFileName());
      for (Path copy : copies) System.load(copy.toString());
      loadedGlue = glue.toString();
    } catch (IOException e) {
      throw linkError("cannot copy the jar's native libraries into " + dir + " (set -D"
          + PATH_PROPERTY + " to an installed copy instead)", e);
    } catch (UnsatisfiedLinkError e) {
      throw linkError("cannot load the jar's native libraries for " + platform()
          + " (their dependencies, e.g. oneDNN, OpenBLAS and nng, must be installed; or set -D"
          + PATH_PROPERTY + " to an installed copy)", e);
    } finally {
      for (Path copy : copies) copy.toFile().delete();
      dir.toFile().delete();
    }
  }

  /** The names listed in the jar's index for this platform, in load order; empty without one. */
  private static List<String> bundledLibraries(String resources) {
    List<String> names = new ArrayList<>();
    try (InputStream in = NativeLibrary.class.getResourceAsStream(resources + "/" + INDEX)) {
      if (in == null) return names;
      BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
      for (String line = reader.readLine(); line != null; line = reader.readLine()) {
        String name = line.trim();
        // Plain file names only: the index must not lead the copy out of its directory.
        if (!name.isEmpty() && !name.contains("/") && !name.startsWith(".")) names.add(name);
      }
    } catch (IOException e) {
      throw linkError("cannot read " + resources + "/" + INDEX + " from the jar", e);
    }
    return names;
  }

  /** "linux-x86_64" and the like: the directory name the artifact's libraries live under. */
  static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]", "");
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    if (arch.equals("amd64") || arch.equals("x8664")) arch = "x86_64";
    if (arch.equals("arm64")) arch = "aarch64";
    return os + "-" + arch;
  }

  private static UnsatisfiedLinkError linkError(String message, Throwable cause) {
    UnsatisfiedLinkError error = new UnsatisfiedLinkError("disttrain: " + message + ": " + cause.getMessage());
    error.initCause(cause);
    return error;
  }

  /** Throws UnsatisfiedLinkError naming the versions unless all three agree. */
  static void checkVersion(long generated, long glue, long loaded) {
    String problem = versionProblem(generated, glue, loaded);
    if (problem != null) throw new UnsatisfiedLinkError(problem);
  }

  /** The mismatch message, or null when the versions agree. */
  static String versionProblem(long generated, long glue, long loaded) {
    if (generated == glue && glue == loaded) return null;
    return "disttrain: version mismatch: the Java binding was generated for libdisttrain "
        + format(generated) + ", its JNI glue (" + System.mapLibraryName(GLUE) + ") was built for "
        + format(glue) + ", and the loaded " + System.mapLibraryName(LIBRARY) + " is "
        + format(loaded) + "; use the disttrain.jar and native libraries of one release";
  }

  static String format(long number) {
    return (number / 10000) + "." + (number / 100 % 100) + "." + (number % 100);
  }
}
