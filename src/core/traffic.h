// Bytes a node moved over the network, as whole messages (headers included):
// what compression and fused keys save, counted where messages leave and
// arrive. Counters only grow; a reader takes differences (per epoch, say).
#pragma once

#include <atomic>
#include <cstdint>

namespace dt::core {

struct Traffic {
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;

  Traffic& operator+=(const Traffic& other) {
    bytes_sent += other.bytes_sent;
    bytes_received += other.bytes_received;
    return *this;
  }
  Traffic operator-(const Traffic& earlier) const {
    return Traffic{bytes_sent - earlier.bytes_sent, bytes_received - earlier.bytes_received};
  }
};

// Counted from transport threads; read from any thread.
class TrafficCounter {
 public:
  void sent(uint64_t bytes) { sent_.fetch_add(bytes, std::memory_order_relaxed); }
  void received(uint64_t bytes) { received_.fetch_add(bytes, std::memory_order_relaxed); }
  Traffic read() const {
    return Traffic{sent_.load(std::memory_order_relaxed), received_.load(std::memory_order_relaxed)};
  }

 private:
  std::atomic<uint64_t> sent_{0};
  std::atomic<uint64_t> received_{0};
};

}  // namespace dt::core
