// Optional TLS for a job's tcp connections (issue 18): an owner of one
// nng_tls_config built from the node's TlsFiles, and the URL rule that puts
// every tcp connection of a TLS job on tls+tcp://.
//
// Both ends present a certificate and both require the other's to chain to
// the job's CA (mutual TLS): a process without a certificate from that CA
// can neither reach a node nor pose as one. ipc:// and inproc:// stay as
// they are: they never leave the host, and the socket file's permissions or
// the process boundary protect them.
//
// No server name is checked, only the chain. Every node of a job is an equal
// peer (a worker talks to every server, a rank to every other rank), so the
// question TLS answers here is "is the peer a member of this job", which the
// job's own CA answers; "is it the host at this address" adds nothing the
// job relies on. Nodes are also addressed by IP, and mbedTLS 2.28 (what
// Debian's nng uses) matches names against DNS SANs only, never IP SANs, so
// a name check would need certificates naming made-up DNS names. Hence: the
// CA must be dedicated to the job (dtrun --tls makes a throw-away one per
// job); a site-wide CA would admit every certificate it ever signed.
#pragma once

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include <string>

#include "net/transport_security.h"

namespace dt::net {

enum class TlsRole { kServer, kClient };

// How error messages name the three files: where they came from.
struct TlsFileNames {
  std::string cert = "cert_file";
  std::string key = "key_file";
  std::string ca = "ca_file";
};

class TlsConfig {
 public:
  // Reads the three PEM files (the certificate, its private key, unencrypted,
  // and the CA's certificate) and requires the peer's certificate.
  // Error(kInvalidArgument) naming the file for one that is missing,
  // unreadable or not PEM of the right kind, naming the fields when only
  // some are set, and for PEM that mbedTLS cannot parse. A key that parses
  // but is not the certificate's is not caught here: its handshakes fail.
  // Error(kNotSupported) when nng was built without TLS.
  TlsConfig(TlsRole role, const TlsFiles& files, const TlsFileNames& names = TlsFileNames());
  ~TlsConfig();
  TlsConfig(TlsConfig&& other) noexcept;
  TlsConfig& operator=(TlsConfig&& other) noexcept;
  TlsConfig(const TlsConfig&) = delete;
  TlsConfig& operator=(const TlsConfig&) = delete;

  // Attach the configuration to a tls+tcp:// endpoint before it starts (nng
  // keeps its own reference: this object may go first). `url` is for the
  // error text. Error(kNetwork/kInvalidArgument) naming the URL on failure.
  void apply(nng_listener listener, const std::string& url) const;
  void apply(nng_dialer dialer, const std::string& url) const;
  void apply(nng_stream_listener* listener, const std::string& url) const;
  void apply(nng_stream_dialer* dialer, const std::string& url) const;

  nng_tls_config* get() const { return config_; }

 private:
  nng_tls_config* config_ = nullptr;
};

// Error(kInvalidArgument) unless all three files are set or none is.
void check_tls_files_complete(const TlsFiles& files, const TlsFileNames& names);

// The URL to listen on or dial: with TLS on, tcp://h:p becomes tls+tcp://h:p;
// every other URL is returned unchanged. A tls+tcp:// URL without TLS files
// is Error(kInvalidArgument): it cannot work and must not fall back to
// plain tcp.
std::string url_for_transport(const std::string& url, const TlsFiles& tls);

// tcp:// or tls+tcp://: a URL that leaves the host.
bool is_tcp_url(const std::string& url);
bool is_tls_url(const std::string& url);

}  // namespace dt::net
