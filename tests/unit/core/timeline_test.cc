// The timeline's parts (core/timeline/): the ring keeps the newest events and
// counts what it dropped; the writer's JSON parses whatever the names hold;
// the clock offset is NTP's; the process-wide recorder records only while on.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/timeline/clock_offset.h"
#include "core/timeline/event_ring.h"
#include "core/timeline/timeline.h"
#include "core/timeline/trace_writer.h"
#include "error_code_of.h"

namespace dt::core::timeline {
namespace {

TraceEvent event_at(int64_t start_us, const std::string& name = "e") {
  TraceEvent e;
  e.set_name(name);
  e.category = "test";
  e.start_us = start_us;
  e.duration_us = 1;
  return e;
}

TEST(TimelineRing, KeepsEventsOldestFirst) {
  EventRing ring(4);
  for (int i = 0; i < 3; ++i) ring.push(event_at(i));
  const auto events = ring.snapshot();
  ASSERT_EQ(events.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(events[i].start_us, i);
  EXPECT_EQ(ring.dropped(), 0u);
}

TEST(TimelineRing, WrapAroundDropsTheOldestAndCountsThem) {
  EventRing ring(4);
  for (int i = 0; i < 11; ++i) ring.push(event_at(i));
  const auto events = ring.snapshot();
  ASSERT_EQ(events.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(events[i].start_us, 7 + i);
  EXPECT_EQ(ring.dropped(), 7u);
  ring.clear();
  EXPECT_TRUE(ring.snapshot().empty());
  EXPECT_EQ(ring.dropped(), 0u);
}

// docs/profiling.md and DT_TIMELINE_EVENTS's line state the size of an event.
TEST(TimelineRing, AnEventIs144Bytes) { EXPECT_EQ(sizeof(TraceEvent), 144u); }

TEST(TimelineRing, RefusesNoRoom) { EXPECT_EQ(test_support::code_of([] { EventRing ring(0); }), ErrorCode::kInvalidArgument); }

TEST(TimelineEvent, LongNamesAreCutOnACharacterBoundary) {
  TraceEvent e;
  // 46 ASCII bytes, then a 3-byte character that does not fit in the 47 left.
  e.set_name(std::string(46, 'a') + "\xE2\x82\xAC" + "tail");
  EXPECT_EQ(std::string(e.name), std::string(46, 'a'));
}

TEST(TimelineWriter, EscapesQuotesControlsAndInvalidUtf8) {
  EXPECT_EQ(json_escape("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(json_escape("tab\there\nnl"), "tab\\u0009here\\u000anl");
  EXPECT_EQ(json_escape("caf\xC3\xA9"), "caf\xC3\xA9");  // valid UTF-8 stays
  EXPECT_EQ(json_escape("bad\xFF"), "bad\\ufffd");
  EXPECT_EQ(json_escape("cut\xE2\x82"), "cut\\ufffd\\ufffd");
}

TEST(TimelineWriter, WritesTraceEventJsonThatParses) {
  std::vector<TraceEvent> events{event_at(10, "conv \"1\"\n\x01"), event_at(20, "pull")};
  events[1].args[0] = {"key", 3};
  events[1].args[1] = {"round", -1};
  ProcessLabel label;
  label.role = "worker";
  label.rank = 1;
  label.clock_offset_us = -42;
  label.clock_measured = true;
  const auto doc = nlohmann::json::parse(trace_json(label, 777, events, 5));
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
  const auto& list = doc["traceEvents"];
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0]["ph"], "M");
  EXPECT_EQ(list[0]["args"]["name"], "worker 1");
  EXPECT_EQ(list[1]["name"], "conv \"1\"\n\x01");
  EXPECT_EQ(list[1]["ph"], "X");
  EXPECT_EQ(list[1]["ts"], 10);
  EXPECT_EQ(list[1]["pid"], 777);
  EXPECT_FALSE(list[1].contains("args"));
  EXPECT_EQ(list[2]["args"]["key"], 3);
  EXPECT_EQ(list[2]["args"]["round"], -1);
  EXPECT_EQ(doc["otherData"]["clock_offset_us"], -42);
  EXPECT_EQ(doc["otherData"]["dropped_events"], 5);
  EXPECT_EQ(doc["otherData"]["rank"], 1);
}

TEST(TimelineWriter, NamesProcessesAndTheirFiles) {
  ProcessLabel scheduler{"scheduler", -1, 0, true};
  ProcessLabel server{"server", 1, 0, true};
  ProcessLabel alone;
  EXPECT_EQ(scheduler.name(1), "scheduler");
  EXPECT_EQ(server.name(1), "server 1");
  EXPECT_EQ(alone.name(99), "process 99");
  EXPECT_EQ(process_file("/t/run.json", scheduler), "/t/run.json.scheduler.json");
  EXPECT_EQ(process_file("/t/run.json", server), "/t/run.json.server.1.json");
  EXPECT_EQ(process_file("/t/run.json", alone), "/t/run.json");
}

TEST(TimelineWriter, AFileItCannotWriteIsAnIoError) {
  EXPECT_EQ(test_support::code_of([] { write_text_file("/nonexistent-dir/x.json", "{}"); }), ErrorCode::kIo);
}

TEST(TimelineClock, RegistrationTakesTheReplysStampLessItsArrival) {
  // The node's clock runs 1000 us behind the scheduler's; the reply takes 50 us.
  const int64_t t2 = 5000000;
  EXPECT_EQ(clock_offset_us(t2, t2 - 1000 + 50), 950);
  // One clock (one host): the offset is the reply's delivery time, negated.
  EXPECT_EQ(clock_offset_us(9000, 9040), -40);
}

TEST(TimelineClock, HeartbeatsTakeTheMidpointOfTheRoundTrip) {
  // The node's clock runs 1000 us behind; 40 us each way.
  const int64_t t0 = 7000001;
  const int64_t t2 = t0 + 40 + 1000;
  EXPECT_EQ(clock_offset_us(t0, t2, t2 - 1000 + 40), 1000);
  // Large clocks never overflow; the half microsecond of an odd round trip is dropped.
  EXPECT_EQ(clock_offset_us(int64_t{1} << 62, (int64_t{1} << 62) + 10, (int64_t{1} << 62) + 21), 0);
}

TEST(TimelineClock, ThisHostHasABootId) { EXPECT_EQ(boot_id().size(), 36u); }

TEST(TimelineRecorder, RecordsOnlyWhileStartedAndDumpsWhatItHolds) {
  stop();
  { const Span ignored("test", "while-off"); }
  start();
  {
    Span span("test", "while-on", {"key", 7});
    span.set_arg(1, {"round", 2});
  }
  // One clock read: two in the argument list run in either order, and a
  // slow (sanitizer) build saw a microsecond pass between them.
  const int64_t at = now_us();
  record("test", "recorded", at, at + 5);
  stop();
  { const Span ignored("test", "after-stop"); }
  const std::string path = testing::TempDir() + "timeline_test_" + std::to_string(::getpid()) + ".json";
  dump(path);
  std::ifstream in(path);
  const auto doc = nlohmann::json::parse(in);
  std::remove(path.c_str());
  int on = 0, off = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const std::string name = e["name"];
    if (name == "while-on") {
      ++on;
      EXPECT_EQ(e["args"]["key"], 7);
      EXPECT_EQ(e["args"]["round"], 2);
      EXPECT_EQ(e["tid"], static_cast<int64_t>(::gettid()));
    }
    if (name == "recorded") EXPECT_EQ(e["dur"], 5);
    if (name == "while-off" || name == "after-stop") ++off;
  }
  EXPECT_EQ(on, 1);
  EXPECT_EQ(off, 0);
  EXPECT_EQ(test_support::code_of([] { dump(""); }), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace dt::core::timeline
