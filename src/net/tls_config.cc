#include "net/tls_config.h"

#include <utility>
#include <vector>

#include "core/error.h"
#include "core/file_bytes.h"
#include "net/nng_check.h"

namespace dt::net {

using core::Error;
using core::ErrorCode;

namespace {

constexpr char kTcp[] = "tcp://";
constexpr char kTlsTcp[] = "tls+tcp://";

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The file as text, checked for the PEM block `kind` names: a DER file, an
// empty one or the key where the certificate belongs is caught here, by
// name, instead of as mbedTLS's "crypto error" later.
std::string read_pem(const std::string& path, const std::string& name, const char* marker, const char* kind) {
  std::vector<uint8_t> bytes;
  try {
    bytes = core::read_file_bytes(path, "TLS " + name);
  } catch (const Error& e) {
    throw Error(ErrorCode::kInvalidArgument, e.what());
  }
  std::string text(bytes.begin(), bytes.end());
  if (text.find(marker) == std::string::npos) {
    throw Error(ErrorCode::kInvalidArgument, "TLS " + name + " " + path + ": not a PEM " + kind + " (no '" + marker +
                                                 "' line)");
  }
  return text;
}

}  // namespace

void check_tls_files_complete(const TlsFiles& files, const TlsFileNames& names) {
  if (!files.enabled()) return;
  std::string missing;
  const auto note = [&](const std::string& value, const std::string& name) {
    if (value.empty()) missing += (missing.empty() ? "" : ", ") + name;
  };
  note(files.cert_file, names.cert);
  note(files.key_file, names.key);
  note(files.ca_file, names.ca);
  if (!missing.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "TLS needs all three of " + names.cert + ", " + names.key + " and " +
                                                 names.ca + "; " + missing + " not set");
  }
}

TlsConfig::TlsConfig(TlsRole role, const TlsFiles& files, const TlsFileNames& names) {
  check_tls_files_complete(files, names);
  if (!files.enabled()) throw Error(ErrorCode::kInvalidArgument, "TLS: no certificate, key or CA file given");
  const std::string cert = read_pem(files.cert_file, names.cert, "-----BEGIN CERTIFICATE-----", "certificate");
  const std::string key = read_pem(files.key_file, names.key, "PRIVATE KEY-----", "private key");
  const std::string ca = read_pem(files.ca_file, names.ca, "-----BEGIN CERTIFICATE-----", "CA certificate");
  int rv = nng_tls_config_alloc(&config_, role == TlsRole::kServer ? NNG_TLS_MODE_SERVER : NNG_TLS_MODE_CLIENT);
  if (rv == NNG_ENOTSUP) {
    throw Error(ErrorCode::kNotSupported, "TLS: the nng library in use was built without TLS (NNG_ENABLE_TLS)");
  }
  if (rv != 0) throw_nng_error(rv, "nng_tls_config_alloc");
  try {
    rv = nng_tls_config_ca_chain(config_, ca.c_str(), nullptr);
    if (rv != 0) {
      throw Error(ErrorCode::kInvalidArgument, "TLS " + names.ca + " " + files.ca_file +
                                                   ": mbedTLS cannot use it as a CA certificate (" + nng_strerror(rv) +
                                                   ")");
    }
    rv = nng_tls_config_own_cert(config_, cert.c_str(), key.c_str(), nullptr);
    if (rv != 0) {
      throw Error(ErrorCode::kInvalidArgument, "TLS " + names.cert + " " + files.cert_file + " with " + names.key +
                                                   " " + files.key_file +
                                                   ": mbedTLS cannot use them as a certificate and its unencrypted "
                                                   "private key (" + nng_strerror(rv) + ")");
    }
    // Mutual: a server asks every client for its certificate too.
    rv = nng_tls_config_auth_mode(config_, NNG_TLS_AUTH_MODE_REQUIRED);
    if (rv != 0) throw_nng_error(rv, "nng_tls_config_auth_mode");
  } catch (...) {
    nng_tls_config_free(config_);
    config_ = nullptr;
    throw;
  }
}

TlsConfig::~TlsConfig() {
  if (config_ != nullptr) nng_tls_config_free(config_);
}

TlsConfig::TlsConfig(TlsConfig&& other) noexcept : config_(std::exchange(other.config_, nullptr)) {}

TlsConfig& TlsConfig::operator=(TlsConfig&& other) noexcept {
  if (this != &other) {
    if (config_ != nullptr) nng_tls_config_free(config_);
    config_ = std::exchange(other.config_, nullptr);
  }
  return *this;
}

void TlsConfig::apply(nng_listener listener, const std::string& url) const {
  const int rv = nng_listener_set_ptr(listener, NNG_OPT_TLS_CONFIG, config_);
  if (rv != 0) throw_nng_error(rv, "TLS configuration for listener " + url);
}

void TlsConfig::apply(nng_dialer dialer, const std::string& url) const {
  const int rv = nng_dialer_set_ptr(dialer, NNG_OPT_TLS_CONFIG, config_);
  if (rv != 0) throw_nng_error(rv, "TLS configuration for dialer " + url);
}

void TlsConfig::apply(nng_stream_listener* listener, const std::string& url) const {
  const int rv = nng_stream_listener_set_ptr(listener, NNG_OPT_TLS_CONFIG, config_);
  if (rv != 0) throw_nng_error(rv, "TLS configuration for listener " + url);
}

void TlsConfig::apply(nng_stream_dialer* dialer, const std::string& url) const {
  const int rv = nng_stream_dialer_set_ptr(dialer, NNG_OPT_TLS_CONFIG, config_);
  if (rv != 0) throw_nng_error(rv, "TLS configuration for dialer " + url);
}

std::string url_for_transport(const std::string& url, const TlsFiles& tls) {
  if (tls.enabled() && starts_with(url, kTcp)) return kTlsTcp + url.substr(sizeof kTcp - 1);
  if (!tls.enabled() && starts_with(url, kTlsTcp)) {
    throw Error(ErrorCode::kInvalidArgument,
                url + ": tls+tcp:// needs this node's TLS files (DT_TLS_CERT_FILE, DT_TLS_KEY_FILE, DT_TLS_CA_FILE)");
  }
  return url;
}

bool is_tcp_url(const std::string& url) { return starts_with(url, kTcp) || starts_with(url, kTlsTcp); }

bool is_tls_url(const std::string& url) { return starts_with(url, kTlsTcp); }

}  // namespace dt::net
