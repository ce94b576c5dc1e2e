// The hierarchical all-reduce through HostCommunicator: thread ranks given
// places ("hosts") of their own, linked over ipc:// within a place and
// tcp:// loopback between places, as on real hosts.
#include <gtest/gtest.h>

#include "host_communicator_test_util.h"

namespace dt::collective::host {
namespace {

using namespace host_communicator_test;

// hosts x per_host ranks; "cycle": rank r on host r % hosts, else blocks.
std::vector<std::string> places_for(int hosts, int per_host, bool cycle) {
  std::vector<std::string> places;
  for (int r = 0; r < hosts * per_host; ++r) places.push_back("host" + std::to_string(cycle ? r % hosts : r / per_host));
  return places;
}

class HostHierarchyTest : public HostCommunicatorTest {
 protected:
  // One communicator per place, each rank with its own options.
  Comms create_at(const std::vector<std::string>& places, HostCommunicatorOptions o,
                  const std::function<void(int, HostCommunicatorOptions&)>& adjust = {}) {
    const int n = static_cast<int>(places.size());
    InProcessExchange exchange(n);
    Comms comms(static_cast<size_t>(n));
    rethrow_any(run_ranks(n, [&](int r) {
      HostCommunicatorOptions mine = o;
      mine.place = places[static_cast<size_t>(r)];
      if (adjust) adjust(r, mine);
      comms[static_cast<size_t>(r)] = HostCommunicator::create(r, n, exchange.for_rank(r), mine);
    }));
    return comms;
  }
};

struct Arrangement {
  int hosts;
  int per_host;
  bool cycle;
};

class HostHierarchyShapes : public HostHierarchyTest, public ::testing::WithParamInterface<Arrangement> {};

TEST_P(HostHierarchyShapes, SumsAreExactForEveryCount) {
  HostCommunicatorOptions o = options();
  o.small_bytes = 0;     // every count takes the hierarchy, even 1 (most segments empty)
  o.chunk_bytes = 4096;  // the large case pipelines many chunks per segment
  Comms comms = create_at(places_for(GetParam().hosts, GetParam().per_host, GetParam().cycle), o);
  for (const auto& c : comms) EXPECT_TRUE(c->hierarchical());
  for (size_t count : {size_t{1}, size_t{3}, size_t{5}, size_t{256}, size_t{100003}}) {
    SCOPED_TRACE("count " + std::to_string(count));
    expect_exact_sums(comms, count);
  }
}

INSTANTIATE_TEST_SUITE_P(HostsAndPlacements, HostHierarchyShapes,
                         ::testing::Values(Arrangement{2, 2, true}, Arrangement{2, 2, false}, Arrangement{3, 2, false},
                                           Arrangement{2, 3, true}, Arrangement{3, 3, true}),
                         [](const ::testing::TestParamInfo<Arrangement>& info) {
                           return std::to_string(info.param.hosts) + "hostsOf" + std::to_string(info.param.per_host) +
                                  (info.param.cycle ? "Alternating" : "InBlocks");
                         });

TEST_F(HostHierarchyTest, RandomFloatsAreBitIdenticalAcrossRanksAndRuns) {
  HostCommunicatorOptions o = options();
  o.small_bytes = 4096;
  o.chunk_bytes = 2048;
  Comms comms = create_at(places_for(2, 2, true), o);
  const int n = 4;
  const size_t count = 50001;
  const auto inputs = random_inputs(n, count);
  const auto first = expect_bit_identical_twice(comms, inputs);
  // Close to the exact sum (the order differs from a flat ring's).
  for (size_t i = 0; i < count; i += 997) {
    double exact = 0;
    for (int r = 0; r < n; ++r) exact += inputs[static_cast<size_t>(r)][i];
    EXPECT_NEAR(first[0][i], exact, 1e-5 * std::abs(exact) + 1e-3) << "element " << i;
  }
}

TEST_F(HostHierarchyTest, SixteenBitFloatsAndIntegersAreSummed) {
  HostCommunicatorOptions o = options();
  o.small_bytes = 0;
  Comms comms = create_at(places_for(2, 2, false), o);
  const size_t count = 1001;
  std::vector<std::vector<int64_t>> ints(4, std::vector<int64_t>(count));
  std::vector<std::vector<uint16_t>> halves(4, std::vector<uint16_t>(count));
  for (int r = 0; r < 4; ++r) {
    for (size_t i = 0; i < count; ++i) {
      ints[static_cast<size_t>(r)][i] = (int64_t{1} << 40) * r + static_cast<int64_t>(i);
      halves[static_cast<size_t>(r)][i] = 0x3c00;  // float16 1.0
    }
  }
  rethrow_any(run_ranks(4, [&](int r) {
    comms[static_cast<size_t>(r)]->all_reduce_sum(ints[static_cast<size_t>(r)].data(), count, DType::kInt64);
    comms[static_cast<size_t>(r)]->all_reduce_sum(halves[static_cast<size_t>(r)].data(), count, DType::kFloat16);
  }));
  for (int r = 0; r < 4; ++r) {
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(ints[static_cast<size_t>(r)][i], (int64_t{1} << 40) * 6 + 4 * static_cast<int64_t>(i));
      ASSERT_EQ(halves[static_cast<size_t>(r)][i], 0x4400) << "float16 4.0";
    }
  }
}

// Bytes that cross between hosts, over every rank, in arrays.
double arrays_between_hosts(const Comms& comms, size_t array_bytes) {
  double sent = 0;
  for (const auto& c : comms) sent += static_cast<double>(c->traffic_between_hosts().bytes_sent);
  return sent / static_cast<double>(array_bytes);
}

// What the hierarchy is for, with ranks alternating between two hosts: each
// rank sends half an array across (its 1/2 segment, both ways of a two-host
// ring), 2 arrays in all. The flat ring, ordered by host (0, 2, 1, 3),
// crosses twice, each crossing 2 (n-1)/n = 1.5 arrays: 3 in all. In rank
// order it would cross at every link: 6.
TEST_F(HostHierarchyTest, SendsTwoThirdsOfTheFlatRingsBytesBetweenHosts) {
  const size_t count = 1 << 20;  // 4 MiB of float32
  for (bool hierarchical : {true, false}) {
    HostCommunicatorOptions o = options();
    o.hierarchical = hierarchical;
    Comms comms = create_at(places_for(2, 2, true), o);
    for (const auto& c : comms) EXPECT_EQ(c->hierarchical(), hierarchical);
    expect_exact_sums(comms, count);
    EXPECT_NEAR(arrays_between_hosts(comms, count * sizeof(float)), hierarchical ? 2.0 : 3.0, 0.02);
    for (const auto& c : comms) {
      // Every rank sends 1.5 arrays in all, the hierarchy's other half within its host.
      EXPECT_NEAR(static_cast<double>(c->traffic().bytes_sent) / (count * sizeof(float)), 1.5, 0.01) << c->rank();
    }
  }
}

// Hosts of different sizes keep the flat ring, ordered by host: 5 ranks
// alternating between two hosts cross twice (4 -> 1, 3 -> 0) instead of at
// four of the five links, each crossing 2 (n-1)/n = 1.6 arrays.
TEST_F(HostHierarchyTest, TheFlatRingCrossesBetweenHostsOncePerHost) {
  const size_t count = 1 << 20;
  HostCommunicatorOptions o = options();
  Comms comms = create_at({"a", "b", "a", "b", "a"}, o);
  for (const auto& c : comms) EXPECT_FALSE(c->hierarchical()) << "rank " << c->rank();
  expect_exact_sums(comms, count);
  EXPECT_NEAR(arrays_between_hosts(comms, count * sizeof(float)), 3.2, 0.02);
}

TEST_F(HostHierarchyTest, OneRankThatTurnsItOffKeepsEveryRankFlat) {
  HostCommunicatorOptions o = options();
  o.small_bytes = 0;
  Comms comms = create_at(places_for(2, 2, true), o, [](int r, HostCommunicatorOptions& mine) {
    if (r == 2) mine.hierarchical = false;
  });
  for (const auto& c : comms) EXPECT_FALSE(c->hierarchical()) << "rank " << c->rank();
  expect_exact_sums(comms, 100003);
}

TEST_F(HostHierarchyTest, HostsOfDifferentSizesUseTheFlatRing) {
  HostCommunicatorOptions o = options();
  o.small_bytes = 0;
  Comms comms = create_at({"a", "b", "a", "b", "a"}, o);
  for (const auto& c : comms) EXPECT_FALSE(c->hierarchical()) << "rank " << c->rank();
  expect_exact_sums(comms, 100003);
}

TEST_F(HostHierarchyTest, AMultiLinePlaceIsRefused) {
  HostCommunicatorOptions o = options();
  o.place = "host\nrank";
  try {
    HostCommunicator::create(0, 2, [](const std::vector<uint8_t>&) { return std::vector<std::vector<uint8_t>>{}; }, o);
    FAIL() << "a place with a newline was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("place"), std::string::npos) << e.what();
  }
}

// A peer's published address is checked before anything is dialled: an
// older format (without place and shape), a shape that is not 0 or 1, text.
TEST_F(HostHierarchyTest, AMalformedPublishedAddressIsAProtocolErrorNamingTheRank) {
  const std::vector<std::string> bad = {
      "dt-host-mesh 1\n1\nhost\n\ntcp://127.0.0.1:9\n",
      "dt-host-mesh 2\n1\nhost\nplace\nyes\n\ntcp://127.0.0.1:9\n",
      "dt-host-mesh 2\n1\nhost\nplace\n1\n\ntcp://127.0.0.1:9",
      "hello",
  };
  for (const std::string& theirs : bad) {
    SCOPED_TRACE(theirs);
    const Exchange exchange = [&](const std::vector<uint8_t>& mine) {
      return std::vector<std::vector<uint8_t>>{mine, std::vector<uint8_t>(theirs.begin(), theirs.end())};
    };
    try {
      HostCommunicator::create(0, 2, exchange, options());
      FAIL() << "a malformed address was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kProtocol);
      EXPECT_NE(std::string(e.what()).find("rank 1 published a malformed address"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dt::collective::host
