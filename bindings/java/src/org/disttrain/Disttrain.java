package org.disttrain;

/** Library-wide facts: versions, build information, GPUs. */
public final class Disttrain {
  private Disttrain() {}

  /** DT_VERSION_NUMBER of the loaded library (major * 10000 + minor * 100 + patch). */
  public static int version() {
    return (int) disttrain.dt_version();
  }

  /** "MAJOR.MINOR.PATCH" of the loaded library. */
  public static String versionString() {
    return disttrain.dt_version_string();
  }

  /** The DT_VERSION_NUMBER this binding was generated for. */
  public static int bindingVersion() {
    return disttrainConstants.DT_VERSION_NUMBER;
  }

  /**
   * Absolute path of the JNI glue (libdisttrain_java.so) this process loaded,
   * loading it first if nothing has yet: from the directory of the system
   * property {@code disttrain.library.path}, else from java.library.path,
   * else the copy the jar carries, unpacked to a private temporary directory
   * (this path then names that copy, deleted once loaded).
   */
  public static String nativeLibraryPath() {
    disttrain.dt_version();
    return NativeLibrary.loadedPath();
  }

  /** GPUs visible to this process; 0 without CUDA. */
  public static int gpuCount() {
    int[] out = new int[1];
    disttrain.dt_gpu_count(out);
    return out[0];
  }

  public static BuildInfo buildInfo() {
    return BuildInfo.get();
  }
}
