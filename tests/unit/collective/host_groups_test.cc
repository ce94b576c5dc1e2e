// host_groups: which arrangements of ranks on hosts take the hierarchical
// all-reduce, the local and cross groups each rank gets, and the flat
// ring's order by host.
#include "collective/host/host_groups.h"

#include <gtest/gtest.h>

namespace dt::collective::host {
namespace {

using Ranks = std::vector<int>;

TEST(HostGroups, OneHostHasNoHierarchy) { EXPECT_FALSE(host_groups({"a", "a", "a", "a"}, 0)); }

TEST(HostGroups, OneRankPerHostHasNoHierarchy) { EXPECT_FALSE(host_groups({"a", "b", "c"}, 1)); }

TEST(HostGroups, HostsOfDifferentSizesHaveNoHierarchy) {
  // E.g. two hosts of two after one worker was lost.
  for (int r = 0; r < 3; ++r) EXPECT_FALSE(host_groups({"a", "b", "a"}, r)) << "rank " << r;
}

TEST(HostGroups, ARankOutsideThePlacesHasNone) {
  EXPECT_FALSE(host_groups({"a", "a", "b", "b"}, 4));
  EXPECT_FALSE(host_groups({"a", "a", "b", "b"}, -1));
  EXPECT_FALSE(host_groups({}, 0));
}

TEST(HostGroups, BlocksOfRanks) {
  const std::vector<std::string> places = {"a", "a", "b", "b", "c", "c"};
  const auto g = host_groups(places, 3);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->local, (Ranks{2, 3}));
  EXPECT_EQ(g->local_index, 1);
  EXPECT_EQ(g->cross, (Ranks{1, 3, 5}));
  EXPECT_EQ(g->host_index, 1);
}

TEST(HostGroups, RanksAlternatingHosts) {
  // Rank r on host r % 2, as the ssh launcher places workers.
  const std::vector<std::string> places = {"a", "b", "a", "b", "a", "b"};
  const auto g0 = host_groups(places, 0);
  const auto g3 = host_groups(places, 3);
  const auto g4 = host_groups(places, 4);
  ASSERT_TRUE(g0 && g3 && g4);
  EXPECT_EQ(g0->local, (Ranks{0, 2, 4}));
  EXPECT_EQ(g0->cross, (Ranks{0, 1}));
  EXPECT_EQ(g3->local, (Ranks{1, 3, 5}));
  EXPECT_EQ(g3->local_index, 1);
  EXPECT_EQ(g3->cross, (Ranks{2, 3}));
  EXPECT_EQ(g3->host_index, 1);
  EXPECT_EQ(g4->local_index, 2);
  EXPECT_EQ(g4->cross, (Ranks{4, 5}));
  EXPECT_EQ(g4->host_index, 0);
}

TEST(HostGroups, EveryRankIsInExactlyOneCrossGroupAtItsOwnHost) {
  // Hosts ordered by their lowest rank whatever the strings are.
  const std::vector<std::string> places = {"z", "m", "m", "z", "a", "a"};
  std::vector<int> seen(places.size(), 0);
  for (int r = 0; r < static_cast<int>(places.size()); ++r) {
    const auto g = host_groups(places, r);
    ASSERT_TRUE(g) << "rank " << r;
    ASSERT_EQ(g->cross.size(), 3u);
    EXPECT_EQ(g->cross[static_cast<size_t>(g->host_index)], r);
    EXPECT_EQ(g->local[static_cast<size_t>(g->local_index)], r);
    for (size_t h = 0; h < g->cross.size(); ++h) {
      // cross[h] is on host h: "z" (ranks 0, 3), "m" (1, 2), "a" (4, 5).
      const std::vector<std::string> order = {"z", "m", "a"};
      EXPECT_EQ(places[static_cast<size_t>(g->cross[h])], order[h]);
    }
    ++seen[static_cast<size_t>(r)];
  }
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(HostGroups, TheFlatRingVisitsEachHostsRanksTogether) {
  EXPECT_EQ(ring_order({"a", "a", "a"}), (Ranks{0, 1, 2}));
  EXPECT_EQ(ring_order({"a", "a", "b", "b"}), (Ranks{0, 1, 2, 3}));
  EXPECT_EQ(ring_order({"a", "b", "a", "b"}), (Ranks{0, 2, 1, 3}));
  EXPECT_EQ(ring_order({"a", "b", "a", "b", "a"}), (Ranks{0, 2, 4, 1, 3}));
  EXPECT_EQ(ring_order({"z", "m", "m", "z", "a", "a"}), (Ranks{0, 3, 1, 2, 4, 5}));
  EXPECT_EQ(ring_order({"solo"}), (Ranks{0}));
}

}  // namespace
}  // namespace dt::collective::host
