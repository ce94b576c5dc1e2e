#include "collective/host/mesh_rendezvous.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

#include "core/error.h"
#include "core/parameter_table.h"
#include "net/auth_handshake.h"
#include "net/nng_check.h"
#include "net/tls_config.h"

namespace dt::collective::host {

using core::Error;
using core::ErrorCode;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kBlobMagic = "dt-host-mesh 2";
// "DTHM", the hello's format version, then the dialler's rank and the size.
constexpr uint32_t kHelloMagic = 0x4d485444;
constexpr uint32_t kHelloVersion = 1;
constexpr size_t kHelloBytes = 16;
// sizeof(sockaddr_un::sun_path) - 1 on Linux.
constexpr size_t kMaxIpcPath = 107;

struct ListenerFree {
  void operator()(nng_stream_listener* l) const { nng_stream_listener_free(l); }
};
struct DialerFree {
  void operator()(nng_stream_dialer* d) const { nng_stream_dialer_free(d); }
};
struct AioFree {
  void operator()(nng_aio* a) const { nng_aio_free(a); }
};
using Listener = std::unique_ptr<nng_stream_listener, ListenerFree>;
using Dialer = std::unique_ptr<nng_stream_dialer, DialerFree>;
using Aio = std::unique_ptr<nng_aio, AioFree>;

struct Published {
  std::string host;
  std::string place;
  bool hierarchical = false;  // this rank's options.hierarchical
  std::string ipc_url;  // empty: this rank takes no ipc connections
  std::string tcp_url;
};

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string ipc_path(int rank, const HostCommunicatorOptions& options) {
  std::string dir = options.ipc_dir;
  if (dir.empty()) {
    const char* tmp = core::read_parameter("TMPDIR");
    dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  std::random_device rd;
  char tail[64];
  std::snprintf(tail, sizeof tail, "/dt-hc-%ld-%d-%08x.sock", static_cast<long>(getpid()), rank, rd());
  std::string path = dir + tail;
  if (path.size() > kMaxIpcPath) {
    throw Error(ErrorCode::kInvalidArgument, "host communicator: ipc socket path " + path + " is longer than " +
                                                 std::to_string(kMaxIpcPath) +
                                                 " bytes; set a shorter ipc_dir (or TMPDIR)");
  }
  return path;
}

Listener listen(const std::string& url, const net::TlsFiles& tls) {
  nng_stream_listener* raw = nullptr;
  int rv = nng_stream_listener_alloc(&raw, url.c_str());
  if (rv != 0) net::throw_nng_error(rv, "host communicator: listener for " + url);
  Listener listener(raw);
  if (net::is_tls_url(url)) net::TlsConfig(net::TlsRole::kServer, tls).apply(raw, url);
  rv = nng_stream_listener_listen(raw);
  if (rv != 0) net::throw_nng_error(rv, "host communicator: listen on " + url);
  return listener;
}

Aio make_aio(Clock::time_point deadline) {
  nng_aio* raw = nullptr;
  const int rv = nng_aio_alloc(&raw, nullptr, nullptr);
  if (rv != 0) net::throw_nng_error(rv, "host communicator: nng_aio_alloc");
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  nng_aio_set_timeout(raw, static_cast<nng_duration>(std::max<int64_t>(1, std::min<int64_t>(ms, INT32_MAX))));
  return Aio(raw);
}

std::string timeout_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

std::vector<uint8_t> encode_blob(int rank, const Published& p) {
  const std::string text = std::string(kBlobMagic) + "\n" + std::to_string(rank) + "\n" + p.host + "\n" +
                           p.place + "\n" + (p.hierarchical ? "1" : "0") + "\n" + p.ipc_url + "\n" + p.tcp_url + "\n";
  return std::vector<uint8_t>(text.begin(), text.end());
}

Published decode_blob(const std::vector<uint8_t>& blob, int rank) {
  const std::string text(blob.begin(), blob.end());
  std::vector<std::string> fields;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    fields.push_back(text.substr(start, nl - start));
  }
  const auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kProtocol,
                 "host communicator: rank " + std::to_string(rank) + " published a malformed address (" + why + ")");
  };
  if (start != text.size() || fields.size() != 7 || fields[0] != kBlobMagic) throw bad("not a host mesh address");
  if (fields[1] != std::to_string(rank)) throw bad("it says rank " + fields[1]);
  if (fields[4] != "0" && fields[4] != "1") throw bad("hierarchical '" + fields[4] + "'");
  Published p{fields[2], fields[3], fields[4] == "1", fields[5], fields[6]};
  if (!net::is_tcp_url(p.tcp_url)) throw bad("tcp address '" + p.tcp_url + "'");
  if (!p.ipc_url.empty() && p.ipc_url.rfind("ipc://", 0) != 0) throw bad("ipc address '" + p.ipc_url + "'");
  return p;
}

std::array<uint8_t, kHelloBytes> encode_hello(int rank, int size) {
  std::array<uint8_t, kHelloBytes> out{};
  const uint32_t words[4] = {kHelloMagic, kHelloVersion, static_cast<uint32_t>(rank), static_cast<uint32_t>(size)};
  for (size_t w = 0; w < 4; ++w) {
    for (size_t b = 0; b < 4; ++b) out[w * 4 + b] = static_cast<uint8_t>(words[w] >> (8 * b));
  }
  return out;
}

uint32_t hello_word(const std::array<uint8_t, kHelloBytes>& hello, size_t w) {
  uint32_t v = 0;
  for (size_t b = 0; b < 4; ++b) v |= static_cast<uint32_t>(hello[w * 4 + b]) << (8 * b);
  return v;
}

std::unique_ptr<PeerStream> dial(int rank, int size, int peer, const std::string& url, Clock::time_point deadline,
                                 const HostCommunicatorOptions& options) {
  nng_stream_dialer* raw = nullptr;
  int rv = nng_stream_dialer_alloc(&raw, url.c_str());
  if (rv != 0) net::throw_nng_error(rv, "host communicator: dialer for rank " + std::to_string(peer) + " at " + url);
  Dialer dialer(raw);
  if (net::is_tls_url(url)) net::TlsConfig(net::TlsRole::kClient, options.security.tls).apply(raw, url);
  Aio aio = make_aio(deadline);
  nng_stream_dialer_dial(dialer.get(), aio.get());
  nng_aio_wait(aio.get());
  rv = nng_aio_result(aio.get());
  if (rv == NNG_ETIMEDOUT) {
    throw Error(ErrorCode::kTimedOut, "host communicator: connecting to rank " + std::to_string(peer) + " at " +
                                          url + " took longer than " + timeout_text(options.timeout_s));
  }
  if (rv != 0) {
    net::throw_nng_error(rv, "host communicator: connecting to rank " + std::to_string(peer) + " at " + url +
                                (url.rfind("ipc://", 0) == 0 ? " (use_ipc = false avoids ipc)" : ""));
  }
  auto stream = std::make_unique<PeerStream>(static_cast<nng_stream*>(nng_aio_get_output(aio.get(), 0)), peer,
                                             options.timeout_s);
  const auto hello = encode_hello(rank, size);
  stream->start_send(hello.data(), hello.size(), nullptr, 0);
  stream->wait_send("host communicator: hello");
  return stream;
}

// Accepts one connection on listener and reads its hello; the dialler must be
// a lower rank that has no stream yet.
void accept_one(nng_stream_listener* listener, const std::string& url, int rank, int size,
                Clock::time_point deadline, const HostCommunicatorOptions& options,
                std::vector<std::unique_ptr<PeerStream>>& streams) {
  Aio aio = make_aio(deadline);
  nng_stream_listener_accept(listener, aio.get());
  nng_aio_wait(aio.get());
  const int rv = nng_aio_result(aio.get());
  if (rv == NNG_ETIMEDOUT) {
    std::string missing;
    for (int p = 0; p < rank; ++p) {
      if (!streams[static_cast<size_t>(p)]) missing += (missing.empty() ? "" : ", ") + std::to_string(p);
    }
    throw Error(ErrorCode::kTimedOut, "host communicator: rank(s) " + missing + " did not connect to rank " +
                                          std::to_string(rank) + " at " + url + " within " +
                                          timeout_text(options.timeout_s));
  }
  if (rv != 0) net::throw_nng_error(rv, "host communicator: accepting on " + url);
  auto stream = std::make_unique<PeerStream>(static_cast<nng_stream*>(nng_aio_get_output(aio.get(), 0)), -1,
                                             options.timeout_s);
  std::array<uint8_t, kHelloBytes> hello{};
  stream->recv(hello.data(), hello.size(), "host communicator: hello");
  const int peer = static_cast<int>(hello_word(hello, 2));
  if (hello_word(hello, 0) != kHelloMagic || hello_word(hello, 1) != kHelloVersion) {
    throw Error(ErrorCode::kProtocol, "host communicator: a connection to " + url + " is not from a host communicator");
  }
  if (static_cast<int>(hello_word(hello, 3)) != size) {
    throw Error(ErrorCode::kProtocol, "host communicator: rank " + std::to_string(peer) + " has size " +
                                          std::to_string(hello_word(hello, 3)) + ", this rank " +
                                          std::to_string(size));
  }
  if (peer < 0 || peer >= rank || streams[static_cast<size_t>(peer)]) {
    throw Error(ErrorCode::kProtocol, "host communicator: unexpected hello from rank " + std::to_string(peer) +
                                          " at rank " + std::to_string(rank) + " (only lower ranks dial, once each)");
  }
  stream->set_peer(peer);
  streams[static_cast<size_t>(peer)] = std::move(stream);
}

// Both ends of every stream prove they hold the job's secret before any
// collective runs (net/auth_handshake.h's MACs): each sends a fresh
// nonce, then its MAC over the dialler's and the listener's nonces, labelled
// by its side. Every rank sends before it waits on each step, so no order
// of ranks can deadlock, and the nonces make a recorded exchange worthless.
void authenticate_mesh(int rank, const std::vector<std::unique_ptr<PeerStream>>& streams,
                       const net::JobSecret& secret) {
  const size_t size = streams.size();
  std::vector<net::Nonce> mine(size);
  std::vector<net::Nonce> theirs(size);
  for (size_t p = 0; p < size; ++p) {
    if (!streams[p]) continue;
    mine[p] = net::fresh_nonce();
    streams[p]->start_send(mine[p].data(), mine[p].size(), nullptr, 0);
    streams[p]->wait_send("host communicator: authentication nonce");
  }
  for (size_t p = 0; p < size; ++p) {
    if (streams[p]) streams[p]->recv(theirs[p].data(), theirs[p].size(), "host communicator: authentication nonce");
  }
  std::vector<net::Sha256Digest> proofs(size);
  for (size_t p = 0; p < size; ++p) {
    if (!streams[p]) continue;
    const bool dialled = static_cast<size_t>(rank) < p;  // the lower rank dials
    const net::Nonce& dialler = dialled ? mine[p] : theirs[p];
    const net::Nonce& listener = dialled ? theirs[p] : mine[p];
    proofs[p] = dialled ? net::client_mac(secret, dialler, listener) : net::server_mac(secret, dialler, listener);
    streams[p]->start_send(proofs[p].data(), proofs[p].size(), nullptr, 0);
    streams[p]->wait_send("host communicator: authentication proof");
  }
  // Every proof is read before any failure is reported: a rank that closed
  // its streams with a peer's proof still unread would reset them (RST),
  // and the peer could lose the proof it was about to check and report the
  // reset instead of the wrong secret.
  std::string impostors;
  for (size_t p = 0; p < size; ++p) {
    if (!streams[p]) continue;
    net::Sha256Digest proof{};
    streams[p]->recv(proof.data(), proof.size(), "host communicator: authentication proof");
    const bool dialled = static_cast<size_t>(rank) < p;
    const net::Nonce& dialler = dialled ? mine[p] : theirs[p];
    const net::Nonce& listener = dialled ? theirs[p] : mine[p];
    const net::Sha256Digest expected =
        dialled ? net::server_mac(secret, dialler, listener) : net::client_mac(secret, dialler, listener);
    if (!net::equal_in_constant_time(expected.data(), proof.data(), expected.size())) {
      impostors += (impostors.empty() ? "" : ", ") + std::to_string(p);
    }
  }
  if (!impostors.empty()) {
    throw Error(ErrorCode::kUnauthenticated, "host communicator: the peer(s) connected as rank " + impostors +
                                                 " do not hold this job's secret (a different job, or a wrong "
                                                 "DT_JOB_SECRET on one side)");
  }
}

}  // namespace

std::string host_identity() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  std::string id = name;
  id += "/" + first_line("/proc/sys/kernel/random/boot_id");
  char ns[128] = {};
  const ssize_t n = readlink("/proc/self/ns/mnt", ns, sizeof ns - 1);
  if (n > 0) id += "/" + std::string(ns, static_cast<size_t>(n));
  return id;
}

std::string place_of_this_process() {
  char ns[128] = {};
  const ssize_t n = readlink("/proc/self/ns/net", ns, sizeof ns - 1);
  return host_identity() + "/" + (n > 0 ? std::string(ns, static_cast<size_t>(n)) : std::string("net:?"));
}

Mesh connect_mesh(int rank, int size, const Exchange& exchange, const HostCommunicatorOptions& options) {
  Mesh mesh;
  mesh.streams.resize(static_cast<size_t>(size));
  mesh.hierarchical = options.hierarchical;
  std::vector<std::unique_ptr<PeerStream>>& streams = mesh.streams;
  const std::string my_place = options.place.empty() ? place_of_this_process() : options.place;
  if (size == 1) {
    mesh.places = {my_place};
    return mesh;
  }
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeout_s));

  Published mine;
  mine.host = host_identity();
  mine.place = my_place;
  mine.hierarchical = options.hierarchical;
  const bool host_has_colon = options.host.find(':') != std::string::npos;
  const std::string host = host_has_colon ? "[" + options.host + "]" : options.host;
  // With TLS files the tcp listener is tls+tcp (net/tls_config.h).
  const net::TlsFiles& tls = options.security.tls;
  Listener tcp = listen(net::url_for_transport("tcp://" + host + ":0", tls), tls);
  int port = 0;
  const int rv = nng_stream_listener_get_int(tcp.get(), NNG_OPT_TCP_BOUND_PORT, &port);
  if (rv != 0) net::throw_nng_error(rv, "host communicator: NNG_OPT_TCP_BOUND_PORT");
  mine.tcp_url = net::url_for_transport("tcp://" + host + ":" + std::to_string(port), tls);
  Listener ipc;
  if (options.use_ipc) {
    mine.ipc_url = "ipc://" + ipc_path(rank, options);
    ipc = listen(mine.ipc_url, tls);
  }

  const std::vector<std::vector<uint8_t>> blobs = exchange(encode_blob(rank, mine));
  if (blobs.size() != static_cast<size_t>(size)) {
    throw Error(ErrorCode::kProtocol, "host communicator: the exchange returned " + std::to_string(blobs.size()) +
                                          " addresses for " + std::to_string(size) + " ranks");
  }
  std::vector<Published> all;
  for (int p = 0; p < size; ++p) {
    all.push_back(decode_blob(blobs[static_cast<size_t>(p)], p));
    mesh.places.push_back(all.back().place);
    mesh.hierarchical = mesh.hierarchical && all.back().hierarchical;
  }
  const auto use_ipc_with = [&](int p) {
    return !mine.ipc_url.empty() && !all[static_cast<size_t>(p)].ipc_url.empty() &&
           all[static_cast<size_t>(p)].host == mine.host;
  };

  for (int p = rank + 1; p < size; ++p) {
    const Published& peer = all[static_cast<size_t>(p)];
    streams[static_cast<size_t>(p)] =
        dial(rank, size, p, use_ipc_with(p) ? peer.ipc_url : net::url_for_transport(peer.tcp_url, tls), deadline,
             options);
  }
  int ipc_accepts = 0;
  for (int p = 0; p < rank; ++p) ipc_accepts += use_ipc_with(p) ? 1 : 0;
  for (int i = 0; i < ipc_accepts; ++i) accept_one(ipc.get(), mine.ipc_url, rank, size, deadline, options, streams);
  for (int i = ipc_accepts; i < rank; ++i) accept_one(tcp.get(), mine.tcp_url, rank, size, deadline, options, streams);
  if (options.security.secret) authenticate_mesh(rank, streams, *options.security.secret);
  return mesh;
}

}  // namespace dt::collective::host
