package org.disttrain;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

/**
 * Base of every class that owns a disttrain handle.
 *
 * {@link #close()} frees the handle and is idempotent; any later use throws
 * {@link DtException} with {@link Status#INVALID_HANDLE}, as the C API does for
 * a freed handle. A handle that becomes unreachable without being closed is
 * freed by a {@link Cleaner}, which also reports it on stderr: the cleaner is
 * a safety net, not the way to manage native memory (its timing is the
 * garbage collector's).
 *
 * A child object (an array on a context, a view of an array, a parameter of a
 * net, a trainer of a net) keeps a Java reference to its parent, so the
 * parent's handle is never freed by the cleaner first.
 */
public abstract class NativeHandle implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();
  private static final AtomicLong LEAKED = new AtomicLong();

  /**
   * Frees the handle once. It must not refer to the owner, or the owner
   * would never become unreachable and the cleaner would never run.
   */
  private static final class Release implements Runnable {
    private final String kind;
    private final LongConsumer free;
    private long handle;
    private boolean closed;

    Release(String kind, long handle, LongConsumer free) {
      this.kind = kind;
      this.handle = handle;
      this.free = free;
    }

    synchronized void markClosed() {
      closed = true;
    }

    @Override
    public void run() {
      long h;
      boolean leaked;
      synchronized (this) {
        h = handle;
        handle = 0;
        leaked = !closed;
      }
      if (h == 0) return;
      if (leaked) {
        LEAKED.incrementAndGet();
        System.err.println("disttrain: a " + kind + " was never closed; the cleaner freed it"
            + " (close it, e.g. with try-with-resources)");
      }
      free.accept(h);
    }
  }

  private final String kind;
  private final Object parent;
  private final Release release;
  private final Cleaner.Cleanable cleanable;
  private volatile long handle;

  NativeHandle(String kind, long handle, LongConsumer free, Object parent) {
    if (handle == 0) throw new DtException(Status.INTERNAL, kind + ": the library returned a null handle");
    this.kind = kind;
    this.handle = handle;
    this.parent = parent;
    this.release = new Release(kind, handle, free);
    this.cleanable = CLEANER.register(this, release);
  }

  /** The live handle; throws INVALID_HANDLE once closed. */
  final long handle() {
    long h = handle;
    if (h == 0) {
      throw new DtException(Status.INVALID_HANDLE, kind + " is closed: it was used after close()");
    }
    return h;
  }

  /** The live handle of an argument; a null argument is INVALID_ARGUMENT. */
  static long handleOf(NativeHandle object, String what) {
    if (object == null) throw new DtException(Status.INVALID_ARGUMENT, what + " must not be null");
    return object.handle();
  }

  /** Like {@link #handleOf} for an optional argument: null maps to a null handle. */
  static long handleOrNull(NativeHandle object) {
    return object == null ? 0 : object.handle();
  }

  static long[] handlesOf(NativeHandle[] objects, String what) {
    if (objects == null) throw new DtException(Status.INVALID_ARGUMENT, what + " must not be null");
    long[] handles = new long[objects.length];
    for (int i = 0; i < objects.length; ++i) handles[i] = handleOf(objects[i], what + "[" + i + "]");
    return handles;
  }

  /**
   * Keeps this object reachable up to this point. Every method that passes
   * handle() to native code calls it after the call, so the cleaner cannot
   * free the handle while C still uses it.
   */
  final void fence() {
    Reference.reachabilityFence(this);
  }

  /** fence() for an argument (null allowed); an array keeps its elements reachable too. */
  static void keepAlive(Object object) {
    Reference.reachabilityFence(object);
  }

  /** The object this one keeps alive (its context, source array, net, ...), or null. */
  Object parent() {
    return parent;
  }

  public final boolean isClosed() {
    return handle == 0;
  }

  /** Frees the native handle. Idempotent; safe to call from any thread. */
  @Override
  public final void close() {
    synchronized (this) {
      if (handle == 0) return;
      handle = 0;
    }
    release.markClosed();
    cleanable.clean();
  }

  /** Handles the cleaner has freed because their owners were never closed (in this process). */
  public static long leakedCount() {
    return LEAKED.get();
  }

  @Override
  public String toString() {
    return kind + (isClosed() ? "(closed)" : "");
  }
}
