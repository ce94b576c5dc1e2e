// The host communicator's mesh over tls+tcp (net/tls_config.h):
// ranks as threads, meeting through an in-process all-gather, linked by
// TLS streams on loopback. A rank with another CA's certificate cannot link.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collective/host/host_communicator.h"
#include "core/dtype.h"
#include "core/error.h"
#include "tls_test_certs.h"

namespace dt::collective::host {
namespace {

using core::Error;
using Comms = std::vector<std::unique_ptr<HostCommunicator>>;

class Gather {
 public:
  explicit Gather(int n) : blobs_(static_cast<size_t>(n)) {}
  Exchange for_rank(int rank) {
    return [this, rank](const std::vector<uint8_t>& mine) {
      std::unique_lock<std::mutex> lock(mu_);
      blobs_[static_cast<size_t>(rank)] = mine;
      ++arrived_;
      cv_.notify_all();
      if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return arrived_ == static_cast<int>(blobs_.size()); })) {
        throw Error(core::ErrorCode::kTimedOut, "test exchange: not every rank arrived");
      }
      return blobs_;
    };
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<uint8_t>> blobs_;
  int arrived_ = 0;
};

std::vector<std::exception_ptr> run_ranks(int n, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

class HostCommunicatorTls : public ::testing::Test {
 protected:
  void SetUp() override {
    certs_.make_ca("job-ca");
    certs_.make_ca("other-ca");
    job_ = certs_.make_node("node", "job-ca");
    stranger_ = certs_.make_node("stranger", "other-ca");
  }
  HostCommunicatorOptions options(const net::TlsFiles& tls) const {
    HostCommunicatorOptions o;
    o.timeout_s = 5;
    o.use_ipc = false;  // every link over tcp, hence TLS
    o.security.tls = tls;
    return o;
  }

  test::TlsTestCerts certs_;
  net::TlsFiles job_, stranger_;
};

TEST_F(HostCommunicatorTls, RanksSumExactlyOverTls) {
  constexpr int n = 3;
  constexpr size_t count = 10000;
  Gather gather(n);
  Comms comms(n);
  const auto created = run_ranks(n, [&](int r) {
    comms[static_cast<size_t>(r)] = HostCommunicator::create(r, n, gather.for_rank(r), options(job_));
  });
  for (const auto& e : created) ASSERT_FALSE(e);
  std::vector<std::vector<float>> data(n, std::vector<float>(count));
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) data[static_cast<size_t>(r)][i] = static_cast<float>(r + 1) * float(i % 17);
  }
  const auto summed = run_ranks(n, [&](int r) {
    comms[static_cast<size_t>(r)]->all_reduce_sum(data[static_cast<size_t>(r)].data(), count, core::DType::kFloat32);
  });
  for (const auto& e : summed) ASSERT_FALSE(e);
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(data[static_cast<size_t>(r)][i], 6.0f * float(i % 17));
  }
}

TEST_F(HostCommunicatorTls, ARankWithAnotherCasCertificateCannotLink) {
  constexpr int n = 2;
  Gather gather(n);
  Comms comms(n);
  const auto errors = run_ranks(n, [&](int r) {
    comms[static_cast<size_t>(r)] =
        HostCommunicator::create(r, n, gather.for_rank(r), options(r == 1 ? stranger_ : job_));
  });
  int failed = 0;
  for (const auto& e : errors) failed += e ? 1 : 0;
  EXPECT_EQ(failed, 2) << "a rank linked to a rank of another CA";
}

}  // namespace
}  // namespace dt::collective::host
