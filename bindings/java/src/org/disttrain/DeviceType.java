package org.disttrain;

/** Device kinds, mirroring {@code dt_device_type}. */
public enum DeviceType {
  CPU(1),
  GPU(2);

  private final int code;

  DeviceType(int code) {
    this.code = code;
  }

  public int code() {
    return code;
  }

  static DeviceType fromCode(int code) {
    for (DeviceType t : values()) {
      if (t.code == code) return t;
    }
    throw new DtException(Status.NOT_SUPPORTED, "device type value " + code + " is newer than this binding");
  }
}
