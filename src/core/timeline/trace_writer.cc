#include "core/timeline/trace_writer.h"

#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/error.h"

namespace dt::core::timeline {
namespace {

// The length of the valid UTF-8 sequence at text[i], or 0.
size_t utf8_sequence(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  size_t n = 0;
  uint32_t min = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  uint32_t code = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return n;
}

// async_id: 0 for a complete event, else the id of its "b"/"e" pair.
void append_event(std::string& out, const TraceEvent& e, int64_t pid, uint64_t async_id) {
  out += "{\"name\":\"";
  out += json_escape(e.name);
  out += "\",\"cat\":\"";
  out += json_escape(e.category);
  const std::string where = ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(e.thread);
  if (async_id == 0) {
    out += "\",\"ph\":\"X\",\"ts\":" + std::to_string(e.start_us) + ",\"dur\":" + std::to_string(e.duration_us) +
           where;
  } else {
    out += "\",\"ph\":\"b\",\"ts\":" + std::to_string(e.start_us) + where + ",\"id\":" + std::to_string(async_id);
  }
  bool first = true;
  for (const TraceArg& a : e.args) {
    if (a.name == nullptr) continue;
    out += first ? ",\"args\":{\"" : ",\"";
    first = false;
    out += json_escape(a.name);
    out += "\":" + std::to_string(a.value);
  }
  if (!first) out += '}';
  out += '}';
  if (async_id != 0) {
    out += ",\n{\"name\":\"";
    out += json_escape(e.name);
    out += "\",\"cat\":\"";
    out += json_escape(e.category);
    out += "\",\"ph\":\"e\",\"ts\":" + std::to_string(e.start_us + e.duration_us) + where +
           ",\"id\":" + std::to_string(async_id) + "}";
  }
}

void append_metadata(std::string& out, const char* name, int64_t pid, const std::string& arg_json) {
  out += "{\"name\":\"";
  out += name;
  out += "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":0,\"args\":" + arg_json + "}";
}

}  // namespace

std::string ProcessLabel::name(int64_t pid) const {
  if (role == "scheduler") return role;
  if (rank < 0) return role + " " + std::to_string(pid);
  return role + " " + std::to_string(rank);
}

std::string json_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      const size_t n = utf8_sequence(text, i);
      if (n == 0) {
        out += "\\ufffd";
        ++i;
        continue;
      }
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    ++i;
  }
  return out;
}

std::string trace_json(const ProcessLabel& label, int64_t pid, const std::vector<TraceEvent>& events,
                       uint64_t dropped) {
  std::string out = "{\"traceEvents\":[\n";
  append_metadata(out, "process_name", pid, "{\"name\":\"" + json_escape(label.name(pid)) + "\"}");
  // Async ids unique across the processes of a host (pid in the high bits),
  // so a merged file's pairs never match another process's.
  uint64_t next_id = static_cast<uint64_t>(pid) << 32;
  for (const TraceEvent& e : events) {
    out += ",\n";
    append_event(out, e, pid, e.async ? ++next_id : 0);
  }
  out += "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"role\":\"" + json_escape(label.role) +
         "\",\"rank\":" + std::to_string(label.rank) + ",\"clock_offset_us\":" +
         std::to_string(label.clock_offset_us) + ",\"clock_measured\":" + (label.clock_measured ? "true" : "false") +
         ",\"dropped_events\":" + std::to_string(dropped) + "}}\n";
  return out;
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file) throw Error(ErrorCode::kIo, "cannot write the timeline " + temporary + ": " + std::strerror(errno));
    file.write(text.data(), static_cast<std::streamsize>(text.size()));
    file.close();
    if (!file) throw Error(ErrorCode::kIo, "cannot write the timeline " + temporary + ": " + std::strerror(errno));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temporary.c_str());
    throw Error(ErrorCode::kIo, "cannot write the timeline " + path + ": " + reason);
  }
}

}  // namespace dt::core::timeline
