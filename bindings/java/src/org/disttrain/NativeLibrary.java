package org.disttrain;

/**
 * Loads libdisttrain and the JNI glue (libdisttrain_java) from
 * java.library.path, then checks that the three agree on the version: the
 * Java classes (generated from the header), the glue (compiled against the
 * header) and the library actually loaded. A mismatch would otherwise show up
 * later as wrong struct layouts or missing symbols.
 */
final class NativeLibrary {
  static final String LIBRARY = "disttrain";
  static final String GLUE = "disttrain_java";

  private NativeLibrary() {}

  static void load() {
    String path = System.getProperty("java.library.path");
    try {
      // Loading libdisttrain first lets the glue bind to it by soname even
      // when the glue's run path does not lead there.
      System.loadLibrary(LIBRARY);
    } catch (UnsatisfiedLinkError e) {
      // Installed layouts may ship only libdisttrain.so.N; the glue's run
      // path and the system loader find it then.
    }
    try {
      System.loadLibrary(GLUE);
    } catch (UnsatisfiedLinkError e) {
      UnsatisfiedLinkError error = new UnsatisfiedLinkError(
          "disttrain: cannot load " + System.mapLibraryName(GLUE) + " (and "
              + System.mapLibraryName(LIBRARY) + "): " + e.getMessage()
              + "; add their directory to -Djava.library.path (now: " + path + ")");
      error.initCause(e);
      throw error;
    }
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
