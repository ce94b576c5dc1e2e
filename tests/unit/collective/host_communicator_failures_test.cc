// HostCommunicator's refusals and failures: ranks prove the job secret,
// a destroyed rank is reported lost, a silent rank times out, abort ends
// the call in progress, count mismatches and bad arguments are refused.
#include <gtest/gtest.h>

#include "host_communicator_test_util.h"

namespace dt::collective::host {
namespace {

using namespace host_communicator_test;

net::JobSecret secret_filled_with(uint8_t v) {
  net::JobSecret s{};
  s.fill(v);
  return s;
}

// Issue 18: with the job's secret, every stream proves both ends hold it
// before any collective; one rank with another secret stops the mesh with
// kUnauthenticated instead of joining it.
TEST_F(HostCommunicatorTest, RanksProveTheJobSecretBeforeTheFirstCollective) {
  for (bool ipc : {true, false}) {
    HostCommunicatorOptions o = options(ipc);
    o.security.secret = secret_filled_with(3);
    Comms comms = create(4, o);
    expect_exact_sums(comms, 1000);
  }
  HostCommunicatorOptions good = options();
  good.security.secret = secret_filled_with(3);
  HostCommunicatorOptions wrong = good;
  wrong.security.secret = secret_filled_with(4);
  wrong.timeout_s = good.timeout_s = 5;
  InProcessExchange exchange(3);
  Comms comms(3);
  const std::vector<std::exception_ptr> errors = run_ranks(3, [&](int r) {
    comms[static_cast<size_t>(r)] = HostCommunicator::create(r, 3, exchange.for_rank(r), r == 1 ? wrong : good);
  });
  int unauthenticated = 0;
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const Error& error) {
      if (error.code() == ErrorCode::kUnauthenticated) ++unauthenticated;
    }
  }
  // Ranks 0 and 2 see rank 1's proof fail, rank 1 sees theirs.
  EXPECT_EQ(unauthenticated, 3);
}

// A rank whose communicator is destroyed while the others are in an
// all-reduce: they fail with kPeerLost, long before the timeout.
TEST_F(HostCommunicatorTest, ADestroyedRankIsReportedAsLost) {
  for (int n : {2, 3}) {
    for (size_t count : {size_t{100}, size_t{1} << 20}) {
      HostCommunicatorOptions o = options();
      o.timeout_s = 20;
      Comms comms = create(n, o);
      const int victim = n - 1;
      std::vector<float> dummy(count, 1.0f);
      std::vector<std::vector<float>> data(static_cast<size_t>(n), dummy);
      const auto start = Clock::now();
      const auto errors = run_ranks(n, [&](int r) {
        if (r == victim) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          comms[static_cast<size_t>(r)].reset();
          return;
        }
        comms[static_cast<size_t>(r)]->all_reduce_sum(data[static_cast<size_t>(r)].data(), count, DType::kFloat32);
      });
      EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 5.0);
      bool named = false;
      for (int r = 0; r < victim; ++r) {
        const Outcome out = outcome_of(errors[static_cast<size_t>(r)]);
        ASSERT_TRUE(out.failed) << "rank " << r;
        EXPECT_EQ(out.code, ErrorCode::kPeerLost) << out.what;
        named = named || out.what.find("rank " + std::to_string(victim)) != std::string::npos;
        // Unusable afterwards.
        EXPECT_THROW(comms[static_cast<size_t>(r)]->barrier(), Error);
      }
      // A direct neighbour names it; with 3 ranks a rank may instead see its
      // other neighbour give up.
      EXPECT_TRUE(named) << n << " ranks, count " << count;
    }
  }
}

TEST_F(HostCommunicatorTest, ARankThatNeverCallsTimesOut) {
  for (size_t count : {size_t{10}, size_t{1} << 20}) {
    HostCommunicatorOptions o = options();
    o.timeout_s = 0.5;
    Comms comms = create(2, o);
    std::vector<float> data(count, 1.0f);
    const auto start = Clock::now();
    try {
      comms[0]->all_reduce_sum(data.data(), count, DType::kFloat32);
      FAIL() << "all_reduce_sum returned without its peer";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kTimedOut) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("all_reduce"), std::string::npos) << e.what();
    }
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_GE(waited, 0.4);
    EXPECT_LT(waited, 3.0);
  }
}

TEST_F(HostCommunicatorTest, AbortFailsTheCallInProgressAtOnce) {
  Comms comms = create(2, options());
  std::vector<float> data(1000, 1.0f);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    comms[0]->abort("the job is shutting down");
  });
  const auto start = Clock::now();
  try {
    comms[0]->all_reduce_sum(data.data(), data.size(), DType::kFloat32);
    ADD_FAILURE() << "all_reduce_sum survived abort()";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
    EXPECT_NE(std::string(e.what()).find("the job is shutting down"), std::string::npos) << e.what();
  }
  aborter.join();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0);
  try {
    comms[0]->barrier();
    ADD_FAILURE() << "barrier after abort()";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadState) << e.what();
  }
  comms[0]->abort("again");  // idempotent
  // The peer, making the same call, sees rank 0 gone.
  try {
    comms[1]->all_reduce_sum(data.data(), data.size(), DType::kFloat32);
    ADD_FAILURE() << "all_reduce_sum with an aborted peer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
}

TEST_F(HostCommunicatorTest, ACountMismatchIsAProtocolError) {
  for (int n : {2, 3}) {
    for (size_t base : {size_t{10}, size_t{100000}}) {
      Comms comms = create(n, options());
      std::vector<std::vector<float>> data(static_cast<size_t>(n), std::vector<float>(base + 1, 1.0f));
      const auto errors = run_ranks(n, [&](int r) {
        comms[static_cast<size_t>(r)]->all_reduce_sum(data[static_cast<size_t>(r)].data(), r == 1 ? base : base + 1,
                                                      DType::kFloat32);
      });
      bool protocol = false;
      for (int r = 0; r < n; ++r) {
        const Outcome out = outcome_of(errors[static_cast<size_t>(r)]);
        ASSERT_TRUE(out.failed) << n << " ranks, rank " << r << " did not fail";
        EXPECT_TRUE(out.code == ErrorCode::kProtocol || out.code == ErrorCode::kPeerLost) << out.what;
        protocol = protocol || out.code == ErrorCode::kProtocol;
        if (n == 2) {
          EXPECT_EQ(out.code, ErrorCode::kProtocol) << out.what;
          EXPECT_NE(out.what.find("rank " + std::to_string(1 - r)), std::string::npos) << out.what;
        }
      }
      EXPECT_TRUE(protocol);
    }
  }
}

TEST_F(HostCommunicatorTest, RejectsBadArguments) {
  EXPECT_THROW(HostCommunicator::create(-1, 2, nullptr, options()), Error);
  EXPECT_THROW(HostCommunicator::create(0, 0, nullptr, options()), Error);
  Comms comms = create(2, options());
  EXPECT_THROW(comms[0]->broadcast(nullptr, 0, 2), Error);
}

}  // namespace
}  // namespace dt::collective::host
