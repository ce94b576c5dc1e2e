#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "ps/key_placement.h"

namespace dt::ps {
namespace {

TEST(PsDataPlacement, SmallKeysGoToTheLeastLoadedServer) {
  KeyPlacement placement(3, 1000);
  EXPECT_EQ(placement.place(7, 100, 4).at(0).server, 0);  // 400 / 0 / 0
  EXPECT_EQ(placement.place(1, 10, 4).at(0).server, 1);   // 400 / 40 / 0
  EXPECT_EQ(placement.place(2, 50, 4).at(0).server, 2);   // 400 / 40 / 200
  EXPECT_EQ(placement.place(3, 20, 4).at(0).server, 1);   // 400 / 120 / 200
  EXPECT_EQ(placement.server_bytes(0), 400u);
  EXPECT_EQ(placement.server_bytes(1), 120u);
  EXPECT_EQ(placement.server_bytes(2), 200u);
}

TEST(PsDataPlacement, BigKeysAreSplitEvenlyAcrossAllServers) {
  KeyPlacement placement(3, 1000);
  const auto& parts = placement.place(9, 1001, 4);
  ASSERT_EQ(parts.size(), 3u);
  int64_t expected_begin = 0;
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(parts[s].server, s);
    EXPECT_EQ(parts[s].begin, expected_begin);
    EXPECT_GE(parts[s].end - parts[s].begin, 333);
    EXPECT_LE(parts[s].end - parts[s].begin, 334);
    expected_begin = parts[s].end;
  }
  EXPECT_EQ(expected_begin, 1001);
}

TEST(PsDataPlacement, LargeRangesAreCutIntoBoundedParts) {
  KeyPlacement placement(1, 1000, 4096);
  const auto& parts = placement.place(1, 2500, 4);  // 10000 bytes -> 3 parts of <= 1024 elements
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts.front().begin, 0);
  EXPECT_EQ(parts.back().end, 2500);
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_LE(parts[i].end - parts[i].begin, 1024);
    if (i > 0) {
      EXPECT_EQ(parts[i].begin, parts[i - 1].end);
    }
  }
}

TEST(PsDataPlacement, SameInitsGiveTheSamePlacementEverywhere) {
  const std::vector<std::pair<uint64_t, int64_t>> inits = {{5, 10}, {3, 2000}, {8, 7}, {1, 400}, {2, 300}};
  KeyPlacement a(2, 4000), b(2, 4000);
  for (const auto& [key, numel] : inits) {
    const auto& pa = a.place(key, numel, 4);
    const auto& pb = b.place(key, numel, 4);
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i) {
      EXPECT_EQ(pa[i].server, pb[i].server);
      EXPECT_EQ(pa[i].begin, pb[i].begin);
      EXPECT_EQ(pa[i].end, pb[i].end);
    }
  }
}

TEST(PsDataPlacement, ReplacingAKeyKeepsItsPlacementAndChecksItsSize) {
  KeyPlacement placement(2, 1000);
  const int server = placement.place(4, 10, 4).at(0).server;
  placement.place(5, 10, 4);
  EXPECT_EQ(placement.place(4, 10, 4).at(0).server, server);
  EXPECT_EQ(placement.server_bytes(0) + placement.server_bytes(1), 80u);
  try {
    placement.place(4, 11, 4);
    FAIL() << "a size change must be rejected";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kShapeMismatch);
  }
  EXPECT_EQ(placement.find(6), nullptr);
  EXPECT_THROW(KeyPlacement(0, 1000), core::Error);
}

// Holders written as {server, original}.
using Holders = std::vector<PartHolder>;
ServerChange lost(int server) { return {server, false}; }
ServerChange rejoined(int server) { return {server, true}; }

TEST(PsDataPlacement, APartsHoldersAreTheFirstTwoServersLeftGoingRoundFromItsOwn) {
  EXPECT_EQ(part_holders(0, 3, {}), (Holders{{0, true}, {1, true}}));
  EXPECT_EQ(part_holders(2, 3, {}), (Holders{{2, true}, {0, true}}));
  // Server 1 lost: its own parts are on 2 and get a new copy on 0; server
  // 0's parts keep 0 and get a new copy on 2.
  EXPECT_EQ(part_holders(1, 3, {lost(1)}), (Holders{{2, true}, {0, false}}));
  EXPECT_EQ(part_holders(0, 3, {lost(1)}), (Holders{{0, true}, {2, false}}));
  EXPECT_EQ(part_holders(2, 3, {lost(1)}), (Holders{{2, true}, {0, true}}));
  EXPECT_EQ(part_holders(1, 4, {lost(1), lost(2)}), (Holders{{3, false}, {0, false}}));
  EXPECT_EQ(part_holders(1, 4, {lost(2), lost(1)}), (Holders{{3, false}, {0, false}}));
  EXPECT_EQ(part_holders(0, 2, {lost(0)}), (Holders{{1, true}}));
  EXPECT_EQ(part_holders(0, 2, {lost(0), lost(1)}), Holders{});
  EXPECT_EQ(part_holders(0, 1, {}), (Holders{{0, true}}));
}

TEST(PsDataPlacement, ARejoinedServerTakesNewCopiesOfThePartsLeftWithOneHolder) {
  // Two servers: the one started again holds every part again, as a new
  // copy after the holder that kept them, which serves their pulls.
  EXPECT_EQ(part_holders(0, 2, {lost(1), rejoined(1)}), (Holders{{0, true}, {1, false}}));
  EXPECT_EQ(part_holders(1, 2, {lost(1), rejoined(1)}), (Holders{{0, true}, {1, false}}));
  // ... and the other may go next: the rejoined one is left with them all.
  EXPECT_EQ(part_holders(0, 2, {lost(1), rejoined(1), lost(0)}), (Holders{{1, false}}));
  EXPECT_EQ(part_holders(1, 2, {lost(1), rejoined(1), lost(0), rejoined(0)}), (Holders{{1, false}, {0, false}}));
  // Three servers: the new copies were made at the loss, so the rejoined
  // server holds nothing; it is a server for the new copies of a later loss.
  EXPECT_EQ(part_holders(1, 3, {lost(1), rejoined(1)}), (Holders{{2, true}, {0, false}}));
  EXPECT_EQ(part_holders(0, 3, {lost(1), rejoined(1)}), (Holders{{0, true}, {2, false}}));
  EXPECT_EQ(part_holders(1, 3, {lost(1), rejoined(1), lost(2)}), (Holders{{0, false}, {1, false}}));
  EXPECT_EQ(part_holders(2, 3, {lost(1), rejoined(1), lost(2)}), (Holders{{0, true}, {1, false}}));
  // Never a server that was lost and has not come back.
  EXPECT_EQ(part_holders(0, 3, {lost(1), lost(2)}), (Holders{{0, true}}));
  EXPECT_EQ(part_holders(0, 3, {lost(1), lost(2), rejoined(2)}), (Holders{{0, true}, {2, false}}));
}

}  // namespace
}  // namespace dt::ps
