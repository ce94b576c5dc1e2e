// The host communicator's mesh over tls+tcp (net/tls_config.h):
// ranks as threads, meeting through the shared in-process all-gather
// (host_communicator_test_util.h), linked by
// TLS streams on loopback. A rank with another CA's certificate cannot link.
#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "collective/host/host_communicator.h"
#include "core/dtype.h"
#include "core/error.h"
#include "host_communicator_test_util.h"
#include "tls_test_certs.h"

namespace dt::collective::host {
namespace {

using core::Error;
using host_communicator_test::Comms;
using host_communicator_test::run_ranks;
using Gather = host_communicator_test::InProcessExchange;

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
