package org.disttrain;

/**
 * A non-OK {@code dt_status}: the status and the message that
 * {@code dt_last_error()} held on the calling thread when the native call
 * failed. Unchecked, like {@link IllegalArgumentException}: most callers let
 * it propagate, and checked exceptions do not compose with Scala or lambdas.
 */
public class DtException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int code;

  /** Called from the JNI glue with the raw status value. */
  DtException(int code, String message) {
    super(message);
    this.code = code;
  }

  public DtException(Status status, String message) {
    this(status.code(), message);
  }

  public Status status() {
    return Status.fromCode(code);
  }

  /** The raw {@code dt_status} value (meaningful even when {@link #status()} is UNKNOWN). */
  public int statusCode() {
    return code;
  }

  @Override
  public String toString() {
    return "DtException(" + status() + "): " + getMessage();
  }
}
