#include "timeline_merge.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace dt::dtrun {
namespace {

struct Part {
  std::string path;
  std::string name;  // "worker 0"
  int pid;           // its row in the merged file; sorted by this
};

std::vector<Part> expected_parts(const std::string& file, int num_servers, int num_workers) {
  std::vector<Part> parts;
  int pid = 1;
  for (int r = 0; r < num_workers; ++r) {
    parts.push_back({file + ".worker." + std::to_string(r) + ".json", "worker " + std::to_string(r), pid++});
  }
  for (int r = 0; r < num_servers; ++r) {
    parts.push_back({file + ".server." + std::to_string(r) + ".json", "server " + std::to_string(r), pid++});
  }
  parts.push_back({file + ".scheduler.json", "scheduler", pid});
  return parts;
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

nlohmann::json metadata(const char* name, int pid, nlohmann::json args) {
  return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", std::move(args)}};
}

}  // namespace

TimelineMerge merge_timeline(const std::string& file, int num_servers, int num_workers) {
  TimelineMerge report;
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json offsets = nlohmann::json::object();
  std::vector<std::string> merged_paths;
  for (const Part& part : expected_parts(file, num_servers, num_workers)) {
    if (!exists(part.path)) {
      report.missing.push_back(part.path);
      continue;
    }
    nlohmann::json doc;
    try {
      std::ifstream in(part.path);
      doc = nlohmann::json::parse(in);
      if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
        throw std::runtime_error("no traceEvents array");
      }
    } catch (const std::exception& e) {
      report.unreadable.push_back(part.path + ": " + e.what());
      continue;
    }
    const nlohmann::json other = doc.value("otherData", nlohmann::json::object());
    const long long offset = other.value("clock_offset_us", 0LL);
    report.dropped += other.value("dropped_events", 0ULL);
    offsets[part.name] = offset;
    events.push_back(metadata("process_name", part.pid, {{"name", part.name}}));
    events.push_back(metadata("process_sort_index", part.pid, {{"sort_index", part.pid}}));
    for (nlohmann::json& e : doc["traceEvents"]) {
      // Its own metadata is replaced above; spans are complete events or
      // async "b"/"e" pairs (counted once).
      const std::string phase = e.is_object() ? e.value("ph", "") : "";
      if (phase != "X" && phase != "b" && phase != "e") continue;
      e["pid"] = part.pid;
      e["ts"] = e.value("ts", 0LL) + offset;
      events.push_back(std::move(e));
      if (phase != "e") ++report.events;
    }
    report.merged.push_back(part.name);
    merged_paths.push_back(part.path);
  }
  nlohmann::json out = {{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ms"},
                        {"otherData",
                         {{"merged_by", "dtrun"}, {"dropped_events", report.dropped}, {"clock_offsets_us", offsets}}}};
  const std::string temporary = file + ".tmp";
  {
    std::ofstream f(temporary, std::ios::trunc);
    f << out.dump() << "\n";
    f.close();
    if (!f) throw std::runtime_error("cannot write the timeline " + temporary);
  }
  if (std::rename(temporary.c_str(), file.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw std::runtime_error("cannot write the timeline " + file);
  }
  for (const std::string& path : merged_paths) std::remove(path.c_str());
  return report;
}

}  // namespace dt::dtrun
