// dtrun --timeline's merge (timeline_merge.h): the processes' files become
// one trace with a row per role and rank, shifted onto the scheduler's clock.
#include "timeline_merge.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace dt::dtrun {
namespace {

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string part(const char* role, int rank, long long offset, long long ts) {
  return std::string("{\"traceEvents\":[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":9,\"tid\":0,\"args\":{\"name\":\"x\"}},"
                     "{\"name\":\"sum\",\"cat\":\"server\",\"ph\":\"X\",\"ts\":") +
         std::to_string(ts) + ",\"dur\":3,\"pid\":9,\"tid\":1,\"args\":{\"round\":1}}],\"displayTimeUnit\":\"ms\"," +
         "\"otherData\":{\"role\":\"" + role + "\",\"rank\":" + std::to_string(rank) +
         ",\"clock_offset_us\":" + std::to_string(offset) + ",\"dropped_events\":2}}";
}

TEST(DtrunTimelineMerge, OneRowPerProcessOnTheSchedulersClock) {
  const std::string base = testing::TempDir() + "merge_test_" + std::to_string(::getpid()) + ".json";
  write(base + ".worker.0.json", part("worker", 0, 100, 1000));
  write(base + ".server.0.json", part("server", 0, -50, 2000));
  write(base + ".scheduler.json", part("scheduler", -1, 0, 3000));
  write(base + ".server.1.json", "{not json");
  const TimelineMerge m = merge_timeline(base, 2, 2);
  EXPECT_EQ(m.events, 3u);
  EXPECT_EQ(m.dropped, 6u);
  ASSERT_EQ(m.missing.size(), 1u);  // worker 1
  EXPECT_NE(m.missing[0].find(".worker.1.json"), std::string::npos);
  ASSERT_EQ(m.unreadable.size(), 1u);  // server 1, kept for a look
  std::ifstream in(base);
  const auto doc = nlohmann::json::parse(in);
  std::map<int, std::string> names;
  std::map<int, long long> ts;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") names[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "X") ts[e["pid"]] = e["ts"];
  }
  // Workers first, then servers, then the scheduler.
  EXPECT_EQ(names[1], "worker 0");
  EXPECT_EQ(names[3], "server 0");
  EXPECT_EQ(names[5], "scheduler");
  EXPECT_EQ(ts[1], 1100);
  EXPECT_EQ(ts[3], 1950);
  EXPECT_EQ(ts[5], 3000);
  // The merged parts are gone; the unreadable one stays.
  EXPECT_FALSE(std::ifstream(base + ".worker.0.json").good());
  EXPECT_TRUE(std::ifstream(base + ".server.1.json").good());
  std::remove((base + ".server.1.json").c_str());
  std::remove(base.c_str());
}

}  // namespace
}  // namespace dt::dtrun
