#include "ps/job/hostlist.h"

#include <cerrno>
#include <cstdlib>

#include "core/error.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

[[noreturn]] void fail(const std::string& text, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, "host list \"" + text + "\": " + why);
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

unsigned long to_number(const std::string& list, const std::string& digits) {
  errno = 0;
  const unsigned long v = std::strtoul(digits.c_str(), nullptr, 10);
  if (errno != 0 || digits.size() > 18) fail(list, "number \"" + digits + "\" is too large");
  return v;
}

// "01-03,7" as {"01", "02", "03", "7"}.
std::vector<std::string> expand_bracket(const std::string& list, const std::string& body) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = body.find(',', start);
    const std::string item = body.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t dash = item.find('-');
    const std::string lo_text = item.substr(0, dash);
    const std::string hi_text = dash == std::string::npos ? lo_text : item.substr(dash + 1);
    if (!all_digits(lo_text) || !all_digits(hi_text)) {
      fail(list, "\"[" + body + "]\" holds \"" + item + "\", which is not a number or a range lo-hi");
    }
    const unsigned long lo = to_number(list, lo_text);
    const unsigned long hi = to_number(list, hi_text);
    if (hi < lo) fail(list, "range \"" + item + "\" runs backwards");
    if (hi - lo >= kMaxHostlistHosts || out.size() + (hi - lo + 1) > kMaxHostlistHosts) {
      fail(list, "expands to more than " + std::to_string(kMaxHostlistHosts) + " hosts");
    }
    // Slurm pads to the width of the lower bound when it has leading zeros.
    const size_t width = lo_text.size() > 1 && lo_text[0] == '0' ? lo_text.size() : 0;
    for (unsigned long v = lo; v <= hi; ++v) {
      std::string n = std::to_string(v);
      if (n.size() < width) n.insert(0, width - n.size(), '0');
      out.push_back(std::move(n));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// One top-level name, e.g. "rack[1-2]-n[01-02]", appended to hosts.
void expand_name(const std::string& list, const std::string& name, std::vector<std::string>& hosts) {
  if (name.empty()) fail(list, "has an empty host name");
  std::vector<std::string> partial{""};
  size_t i = 0;
  while (i < name.size()) {
    const size_t open = name.find('[', i);
    const std::string literal = name.substr(i, open == std::string::npos ? std::string::npos : open - i);
    if (literal.find(']') != std::string::npos) fail(list, "has a ']' without '['");
    for (std::string& p : partial) p += literal;
    if (open == std::string::npos) break;
    const size_t close = name.find(']', open);
    if (close == std::string::npos) fail(list, "has a '[' without ']'");
    const std::string body = name.substr(open + 1, close - open - 1);
    if (body.find('[') != std::string::npos) fail(list, "has nested '['");
    const std::vector<std::string> numbers = expand_bracket(list, body);
    if (partial.size() * numbers.size() + hosts.size() > kMaxHostlistHosts) {
      fail(list, "expands to more than " + std::to_string(kMaxHostlistHosts) + " hosts");
    }
    std::vector<std::string> next;
    next.reserve(partial.size() * numbers.size());
    for (const std::string& p : partial) {
      for (const std::string& n : numbers) next.push_back(p + n);
    }
    partial = std::move(next);
    i = close + 1;
  }
  for (std::string& p : partial) hosts.push_back(std::move(p));
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& text) {
  if (text.empty()) fail(text, "is empty");
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') fail(text, "holds whitespace");
  }
  std::vector<std::string> hosts;
  size_t start = 0;
  int depth = 0;
  // Commas inside brackets separate numbers, not names.
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] == '[') ++depth;
    if (i < text.size() && text[i] == ']') --depth;
    if (depth < 0) fail(text, "has a ']' without '['");
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      expand_name(text, text.substr(start, i - start), hosts);
      start = i + 1;
    }
  }
  return hosts;
}

}  // namespace dt::ps
