#include "ps/job/security_environment.h"

#include <sys/stat.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "net/hmac.h"
#include "ps/job/tls_environment.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

// 64 hex digits -> 32 bytes; the text is never echoed (it is the secret).
net::JobSecret parse_secret(const std::string& text, const std::string& source) {
  const auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    const int lower = std::tolower(static_cast<unsigned char>(c));
    if (lower >= 'a' && lower <= 'f') return lower - 'a' + 10;
    return -1;
  };
  net::JobSecret secret{};
  bool ok = text.size() == 2 * secret.size();
  for (size_t i = 0; ok && i < secret.size(); ++i) {
    const int high = value(text[2 * i]);
    const int low = value(text[2 * i + 1]);
    ok = high >= 0 && low >= 0;
    if (ok) secret[i] = static_cast<uint8_t>(high * 16 + low);
  }
  if (!ok) {
    throw Error(ErrorCode::kInvalidArgument,
                source + " must be 64 hex digits (256 bits), e.g. from `openssl rand -hex 32`; it has " +
                    std::to_string(text.size()) + " characters (value not shown)");
  }
  return secret;
}

std::string trimmed(const std::string& s) {
  size_t begin = 0;
  size_t end = s.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(s[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(s[end - 1]))) --end;
  return s.substr(begin, end - begin);
}

net::JobSecret secret_from_file(const std::string& path) {
  const std::string source = "DT_JOB_SECRET_FILE=" + path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(ErrorCode::kInvalidArgument, source + ": no such file");
  if (!S_ISREG(st.st_mode)) throw Error(ErrorCode::kInvalidArgument, source + ": not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw Error(ErrorCode::kInvalidArgument, source + ": readable by others (mode " + mode + "); `chmod 600 " +
                                                 path + "` so that only its owner can read the job's secret");
  }
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kInvalidArgument, source + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_secret(trimmed(text.str()), source);
}

}  // namespace

net::TransportSecurity security_from(const EnvLookup& env) {
  net::TransportSecurity security;
  const auto non_empty = [&](const char* name) -> std::optional<std::string> {
    auto v = env(name);
    if (v && !v->empty()) return v;
    return std::nullopt;
  };
  const auto inline_secret = non_empty("DT_JOB_SECRET");
  const auto secret_file = non_empty("DT_JOB_SECRET_FILE");
  if (inline_secret && secret_file) {
    throw Error(ErrorCode::kInvalidArgument, "both DT_JOB_SECRET and DT_JOB_SECRET_FILE are set: set one");
  }
  if (inline_secret) security.secret = parse_secret(trimmed(*inline_secret), "DT_JOB_SECRET");
  if (secret_file) security.secret = secret_from_file(*secret_file);
  security.tls = tls_files_from(env);
  return security;
}

std::string new_job_secret_hex() {
  net::JobSecret secret{};
  net::random_bytes(secret.data(), secret.size());
  std::string hex;
  for (uint8_t b : secret) {
    hex += kHexDigits[b >> 4];
    hex += kHexDigits[b & 15];
  }
  return hex;
}

}  // namespace dt::ps
