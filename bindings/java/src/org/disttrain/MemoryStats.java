package org.disttrain;

/**
 * What a context's allocator holds ({@code dt_memory_stats}): sizes as the allocator reserved
 * them, rounded up. {@code cachedBytes} is 0 on the CPU, whose freed memory goes straight back.
 */
public final class MemoryStats {
  /** In arrays and scratch space now. */
  public final long inUseBytes;
  /** The most {@code inUseBytes} has been since the context was made or its peak was reset. */
  public final long peakBytes;
  /** Freed blocks kept for reuse (GPU caching allocator). */
  public final long cachedBytes;
  /** Allocations served since the context was made. */
  public final long allocations;

  MemoryStats(dt_memory_stats s) {
    inUseBytes = s.getIn_use_bytes();
    peakBytes = s.getPeak_bytes();
    cachedBytes = s.getCached_bytes();
    allocations = s.getAllocations();
  }

  @Override
  public String toString() {
    return "MemoryStats(inUse=" + inUseBytes + ", peak=" + peakBytes + ", cached=" + cachedBytes
        + ", allocations=" + allocations + ")";
  }
}
