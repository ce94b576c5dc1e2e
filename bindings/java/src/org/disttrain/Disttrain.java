package org.disttrain;

/** Library-wide facts and settings: versions, build information, GPUs, the log handler. */
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

  /**
   * Routes the library's log lines up to {@code maxLevel} to {@code handler}, for the whole
   * process; without one they go to stderr at the level DT_LOG_LEVEL or PS_VERBOSE set. A null
   * handler sends them to stderr again, at {@code maxLevel}. When this returns, the previous
   * handler is not running and is never called again. For java.util.logging: {@code
   * Disttrain.setLogHandler(LogLevel.INFO, LogHandler.toLogger(Logger.getLogger("disttrain")))}.
   */
  public static synchronized void setLogHandler(LogLevel maxLevel, LogHandler handler) {
    if (maxLevel == null) throw new NullPointerException("disttrain: null log level");
    if (handler != null) LogDispatch.handler = handler;
    disttrainJNI.logSetHandler(maxLevel.code(), handler != null);
    if (handler == null) LogDispatch.handler = null;
  }
}
