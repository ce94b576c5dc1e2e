#include "data/recordio_index.h"

#include <algorithm>
#include <cstddef>
#include <limits>

#include "core/error.h"
#include "core/file_bytes.h"

namespace dt::data {

namespace {

using core::Error;
using core::ErrorCode;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

}  // namespace

std::vector<int64_t> read_recordio_index(const std::string& path, int64_t rec_size) {
  const std::vector<uint8_t> bytes = core::read_file_bytes(path, "RecordIO index");
  const std::string text(bytes.begin(), bytes.end());
  std::vector<int64_t> offsets;
  size_t line_start = 0;
  for (int64_t line = 1; line_start < text.size(); ++line) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string::npos) line_end = text.size();
    const auto fail = [&](const std::string& why) {
      return Error(ErrorCode::kIo, "RecordIO index " + path + ", line " + std::to_string(line) +
                                       " (byte offset " + std::to_string(line_start) + "): " + why);
    };
    size_t at = line_start;
    while (at < line_end && is_space(text[at])) ++at;
    if (at == line_end) {  // blank
      line_start = line_end + 1;
      continue;
    }
    const size_t key_start = at;
    while (at < line_end && !is_space(text[at])) ++at;
    if (at == line_end) throw fail("expected \"<key>\\t<offset>\", found no offset after the key");
    while (at < line_end && is_space(text[at])) ++at;
    const size_t number_start = at;
    int64_t offset = 0;
    for (; at < line_end && text[at] >= '0' && text[at] <= '9'; ++at) {
      // Beyond the .rec's size is an error anyway: saturate, never overflow.
      if (offset > (std::numeric_limits<int64_t>::max() - 9) / 10) {
        offset = std::numeric_limits<int64_t>::max();
        continue;
      }
      offset = offset * 10 + (text[at] - '0');
    }
    const size_t number_end = at;
    while (at < line_end && is_space(text[at])) ++at;
    if (number_end == number_start || at != line_end) {
      throw fail("expected \"<key>\\t<offset>\" with a decimal offset, found \"" +
                 text.substr(key_start, std::min<size_t>(line_end - key_start, 80)) + "\"");
    }
    if (offset >= rec_size) {
      throw fail("offset " + text.substr(number_start, number_end - number_start) +
                 " lies beyond the RecordIO file's " + std::to_string(rec_size) + " bytes");
    }
    offsets.push_back(offset);
    line_start = line_end + 1;
  }
  if (offsets.empty()) throw Error(ErrorCode::kIo, "RecordIO index " + path + " lists no record");
  return offsets;
}

}  // namespace dt::data
