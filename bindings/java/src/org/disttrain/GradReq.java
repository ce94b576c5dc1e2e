package org.disttrain;

/** What backward does with a parameter's gradient, mirroring {@code dt_grad_req}. */
public enum GradReq {
  NULL(0),
  WRITE(1),
  ADD(2);

  private final int code;

  GradReq(int code) {
    this.code = code;
  }

  public int code() {
    return code;
  }
}
