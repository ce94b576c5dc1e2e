#include "collective/host/host_communicator.h"

#include <atomic>
#include <mutex>
#include <optional>

#include "collective/host/call_header.h"
#include "collective/host/hierarchical_allreduce.h"
#include "collective/host/mesh_rendezvous.h"
#include "collective/host/peer_stream.h"
#include "collective/host/recursive_doubling.h"
#include "collective/host/ring_allreduce.h"
#include "core/error.h"
#include "ops/cpu/tensor_math.h"

namespace dt::collective::host {

using core::DType;
using core::Error;
using core::ErrorCode;

namespace {

// Grow-only scratch memory: reused from call to call, so that a steady
// training loop touches no fresh pages (a fresh 64 MiB buffer costs ~28 ms of
// page faults). uint64_t storage keeps every dtype aligned.
class Scratch {
 public:
  void* get(size_t bytes) {
    const size_t words = (bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t);
    if (words > words_.size()) words_.resize(words);
    return words_.data();
  }

 private:
  std::vector<uint64_t> words_;
};

class HostCommunicatorImpl final : public HostCommunicator {
 public:
  HostCommunicatorImpl(int rank, int size, const Exchange& exchange, const HostCommunicatorOptions& options)
      : rank_(rank), size_(size), options_(options), watch_(options.link_watch.get()) {
    Mesh mesh = connect_mesh(rank, size, noted(exchange), options);
    streams_ = std::move(mesh.streams);
    places_ = std::move(mesh.places);
    for (auto& s : streams_) {
      links_.push_back(s.get());
      if (s) s->set_link_watch(watch_);
    }
    if (mesh.hierarchical) groups_ = host_groups(places_, rank);
    const std::vector<int> order = ring_order(places_);
    for (size_t i = 0; i < order.size(); ++i) {
      ring_links_.push_back(links_[static_cast<size_t>(order[i])]);
      if (order[i] == rank) ring_position_ = static_cast<int>(i);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce_sum(void* data, size_t count, DType dtype, uint64_t tag) override {
    if (dtype != DType::kFloat32 && dtype != DType::kFloat16 && dtype != DType::kBFloat16 &&
        dtype != DType::kInt32 && dtype != DType::kInt64) {
      throw Error(ErrorCode::kNotSupported, std::string("host communicator: all_reduce_sum of ") +
                                                core::dtype_name(dtype) +
                                                " arrays (float32, float16, bfloat16, int32, int64 only)");
    }
    if (count > 0 && data == nullptr) throw Error(ErrorCode::kInvalidArgument, "host communicator: all_reduce_sum of null data");
    check_usable("all_reduce_sum");
    const uint64_t seq = ++seq_;
    if (size_ == 1) return;
    const bool widen = dtype == DType::kFloat16 || dtype == DType::kBFloat16;
    const DType work_dtype = widen ? DType::kFloat32 : dtype;
    const size_t es = core::dtype_size(work_dtype);
    CallHeader header;
    header.kind = count * core::dtype_size(dtype) <= options_.small_bytes ? CallKind::kAllReduceDoubling
                  : groups_                                                ? CallKind::kAllReduceHierarchical
                                                                           : CallKind::kAllReduceRing;
    header.dtype = dtype;
    header.seq = seq;
    header.count = count;
    header.tag = tag;
    if (watch_ != nullptr) watch_->call_started(header);
    guarded([&] {
      void* work = data;
      if (widen) {
        work = widened_.get(count * es);
        ops::cpu::cast(DType::kFloat32, work, dtype, data, count);
      }
      const size_t chunk_elems = std::max<size_t>(1, options_.chunk_bytes / es);
      if (header.kind == CallKind::kAllReduceDoubling) {
        all_reduce_recursive_doubling(links_, rank_, header, work, count, work_dtype, scratch_.get(count * es));
      } else if (header.kind == CallKind::kAllReduceHierarchical) {
        all_reduce_hierarchical(links_, *groups_, header, work, count, work_dtype, chunk_elems,
                                scratch_.get(2 * chunk_elems * es));
      } else {
        all_reduce_ring(ring_links_, ring_position_, header, work, count, work_dtype, chunk_elems,
                        scratch_.get(2 * chunk_elems * es));
      }
      if (widen) ops::cpu::cast(dtype, data, DType::kFloat32, work, count);
    });
  }

  void broadcast(void* data, size_t bytes, int root) override {
    if (root < 0 || root >= size_) {
      throw Error(ErrorCode::kInvalidArgument, "host communicator: broadcast from rank " + std::to_string(root) +
                                                   " of " + std::to_string(size_));
    }
    if (bytes > 0 && data == nullptr) throw Error(ErrorCode::kInvalidArgument, "host communicator: broadcast of null data");
    check_usable("broadcast");
    const uint64_t seq = ++seq_;
    if (size_ == 1) return;
    CallHeader header;
    header.kind = CallKind::kBroadcast;
    header.root = root;
    header.seq = seq;
    header.count = bytes;
    if (watch_ != nullptr) watch_->call_started(header);
    guarded([&] { binomial_broadcast(header, data, bytes, root); });
  }

  void barrier() override {
    check_usable("barrier");
    const uint64_t seq = ++seq_;
    if (size_ == 1) return;
    CallHeader header;
    header.kind = CallKind::kBarrier;
    header.seq = seq;
    if (watch_ != nullptr) watch_->call_started(header);
    guarded([&] { dissemination_barrier(header); });
  }

  core::Traffic traffic() const override {
    core::Traffic total;
    for (const auto& s : streams_) {
      if (s) total += s->traffic();
    }
    return total;
  }

  core::Traffic traffic_between_hosts() const override {
    core::Traffic total;
    for (size_t p = 0; p < streams_.size(); ++p) {
      if (streams_[p] && places_[p] != places_[static_cast<size_t>(rank_)]) total += streams_[p]->traffic();
    }
    return total;
  }

  bool hierarchical() const override { return groups_.has_value(); }

  void abort(const std::string& why) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (aborted_) return;
      aborted_ = true;
      abort_why_ = why;
      if (failure_.empty()) failure_ = "aborted: " + why;
    }
    for (auto& s : streams_) {
      if (s) s->close();
    }
  }

 private:
  void check_usable(const char* op) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.empty()) {
      throw Error(ErrorCode::kBadState, std::string("host communicator: ") + op + " on rank " +
                                            std::to_string(rank_) + " after a failed collective (" + failure_ + ")");
    }
  }

  // The exchange, noted as the rendezvous while it waits for the other ranks.
  Exchange noted(const Exchange& exchange) const {
    if (watch_ == nullptr || !exchange) return exchange;
    LinkWatch* watch = watch_;
    return [watch, exchange](const std::vector<uint8_t>& mine) {
      const LinkWatch::Scope noted(watch, -1, "rendezvous (meeting the other ranks)");
      return exchange(mine);
    };
  }

  // Runs a collective; on any failure the links close (peers then fail at
  // once instead of at their timeout) and the communicator stays unusable.
  template <typename Fn>
  void guarded(Fn&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      std::string why;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (failure_.empty()) failure_ = e.what();
        why = aborted_ ? abort_why_ : std::string();
      }
      for (auto& s : streams_) {
        if (s) s->close();
      }
      if (aborted_) throw Error(ErrorCode::kPeerLost, "host communicator: rank " + std::to_string(rank_) + " aborted: " + why);
      throw;
    }
  }

  // Binomial tree rooted at root: log2(n) rounds, whole message per edge.
  void binomial_broadcast(const CallHeader& header, void* data, size_t bytes, int root) {
    static constexpr const char* kWhat = "broadcast";
    const int vrank = (rank_ - root + size_) % size_;
    const auto real = [&](int v) { return (v + root) % size_; };
    const EncodedCallHeader mine = encode(header);
    int mask = 1;
    while (mask < size_) {
      if (vrank & mask) {
        PeerStream& parent = *links_[static_cast<size_t>(real(vrank - mask))];
        EncodedCallHeader theirs{};
        parent.recv(theirs.data(), theirs.size(), kWhat);
        check_call_header(theirs, header, parent.peer());
        parent.recv(data, bytes, kWhat);
        break;
      }
      mask <<= 1;
    }
    std::vector<PeerStream*> children;
    for (mask >>= 1; mask > 0; mask >>= 1) {
      if (vrank + mask < size_) children.push_back(links_[static_cast<size_t>(real(vrank + mask))]);
    }
    for (PeerStream* child : children) child->start_send(mine.data(), mine.size(), data, bytes);
    for (PeerStream* child : children) child->wait_send(kWhat);
  }

  // Round k: a header to rank + 2^k, one from rank - 2^k; after ceil(log2 n)
  // rounds every rank has heard, indirectly, from all.
  void dissemination_barrier(const CallHeader& header) {
    static constexpr const char* kWhat = "barrier";
    const EncodedCallHeader mine = encode(header);
    for (int k = 1; k < size_; k <<= 1) {
      PeerStream& to = *links_[static_cast<size_t>((rank_ + k) % size_)];
      PeerStream& from = *links_[static_cast<size_t>((rank_ - k + size_) % size_)];
      EncodedCallHeader theirs{};
      to.start_send(mine.data(), mine.size(), nullptr, 0);
      from.recv(theirs.data(), theirs.size(), kWhat);
      check_call_header(theirs, header, from.peer());
      to.wait_send(kWhat);
    }
  }

  const int rank_;
  const int size_;
  const HostCommunicatorOptions options_;
  LinkWatch* const watch_;  // options_'s; null: nothing noted
  std::vector<std::unique_ptr<PeerStream>> streams_;
  Links links_;
  std::vector<std::string> places_;   // every rank's, indexed by rank
  std::optional<HostGroups> groups_;  // set: large all-reduces go hierarchical
  Links ring_links_;                  // links_ in the flat ring's order (ring_order)
  int ring_position_ = 0;             // this rank's index in that order
  uint64_t seq_ = 0;
  Scratch widened_;
  Scratch scratch_;

  std::mutex mu_;
  std::atomic<bool> aborted_{false};
  std::string abort_why_;
  std::string failure_;  // the first failure; non-empty: unusable
};

}  // namespace

std::unique_ptr<HostCommunicator> HostCommunicator::create(int rank, int size, const Exchange& exchange,
                                                           const HostCommunicatorOptions& options) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error(ErrorCode::kInvalidArgument, "host communicator: rank " + std::to_string(rank) + " of size " +
                                                 std::to_string(size));
  }
  if (!(options.timeout_s > 0)) throw Error(ErrorCode::kInvalidArgument, "host communicator: timeout_s must be positive");
  if (size > 1 && !exchange) throw Error(ErrorCode::kInvalidArgument, "host communicator: no exchange function");
  if (options.place.find('\n') != std::string::npos) {
    throw Error(ErrorCode::kInvalidArgument, "host communicator: a place is one line (no newline)");
  }
  return std::make_unique<HostCommunicatorImpl>(rank, size, exchange, options);
}

}  // namespace dt::collective::host
