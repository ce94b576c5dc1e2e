package org.disttrain;

/** What the loaded library was compiled with, from {@code dt_build_info_get}. */
public final class BuildInfo {
  public final int versionMajor;
  public final int versionMinor;
  public final int versionPatch;
  public final boolean withCuda;
  public final boolean withCudnn;
  public final boolean withNccl;
  public final boolean withOnednn;
  public final int cudaRuntimeVersion;
  public final int cudnnVersion;
  public final int ncclVersion;
  public final int onednnVersion;
  public final int gpuCount;

  private BuildInfo(dt_build_info i) {
    versionMajor = i.getVersion_major();
    versionMinor = i.getVersion_minor();
    versionPatch = i.getVersion_patch();
    withCuda = i.getWith_cuda() != 0;
    withCudnn = i.getWith_cudnn() != 0;
    withNccl = i.getWith_nccl() != 0;
    withOnednn = i.getWith_onednn() != 0;
    cudaRuntimeVersion = i.getCuda_runtime_version();
    cudnnVersion = i.getCudnn_version();
    ncclVersion = i.getNccl_version();
    onednnVersion = i.getOnednn_version();
    gpuCount = i.getGpu_count();
  }

  public static BuildInfo get() {
    dt_build_info info = new dt_build_info();
    try {
      disttrain.dt_build_info_init(info);
      disttrain.dt_build_info_get(info);
      return new BuildInfo(info);
    } finally {
      info.delete();
    }
  }

  @Override
  public String toString() {
    return "disttrain " + versionMajor + "." + versionMinor + "." + versionPatch + " (CUDA " + withCuda
        + ", cuDNN " + withCudnn + ", NCCL " + withNccl + ", oneDNN " + withOnednn + ", GPUs " + gpuCount + ")";
  }
}
