package org.disttrain;

/** Element types, mirroring {@code dt_dtype}; names are safetensors' dtype strings. */
public enum DType {
  FLOAT32(0, 4, "F32"),
  FLOAT16(1, 2, "F16"),
  BFLOAT16(2, 2, "BF16"),
  FLOAT64(3, 8, "F64"),
  INT32(4, 4, "I32"),
  INT64(5, 8, "I64"),
  UINT8(6, 1, "U8");

  private final int code;
  private final int size;
  private final String safetensorsName;

  DType(int code, int size, String safetensorsName) {
    this.code = code;
    this.size = size;
    this.safetensorsName = safetensorsName;
  }

  /** The {@code dt_dtype} value. */
  public int code() {
    return code;
  }

  /** Bytes per element. */
  public int size() {
    return size;
  }

  /** "F32", "I64", ... */
  public String safetensorsName() {
    return safetensorsName;
  }

  static DType fromCode(int code) {
    for (DType t : values()) {
      if (t.code == code) return t;
    }
    throw new DtException(Status.NOT_SUPPORTED, "dtype value " + code + " is newer than this binding");
  }
}
