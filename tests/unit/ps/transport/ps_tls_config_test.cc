// Optional TLS for tcp (net/tls_config.h): the files' checks, the
// URL rule, and mutual TLS between a RequestServer and RequestClients over
// tls+tcp loopback, including peers whose certificate comes from another CA.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>

#include "core/error.h"
#include "net/tls_config.h"
#include "ps/job/job_config.h"
#include "ps/job/tls_environment.h"
#include "ps/transport/request_client.h"
#include "ps/transport/request_server.h"
#include "tls_test_certs.h"

namespace dt::ps {
namespace {

using core::Error;
using core::ErrorCode;
using namespace net;
using namespace std::chrono_literals;

// One job CA with two node certificates, and a stranger CA with one.
class PsTls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new test::TlsTestCerts();
    certs_->make_ca("job-ca");
    certs_->make_ca("other-ca");
    certs_->make_node("node-a", "job-ca");
    certs_->make_node("node-b", "job-ca");
    certs_->make_node("stranger", "other-ca");
  }
  static void TearDownTestSuite() {
    delete certs_;
    certs_ = nullptr;
  }
  static TransportSecurity with_tls(const TlsFiles& files) {
    TransportSecurity s;
    s.tls = files;
    return s;
  }
  static TlsFiles node(const std::string& name, const std::string& ca) { return certs_->files(name, ca); }
  static std::string write(const std::string& name, const std::string& text) {
    const std::string path = certs_->path(name);
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
    return path;
  }

  static test::TlsTestCerts* certs_;
};

test::TlsTestCerts* PsTls::certs_ = nullptr;

Message text_message(const std::string& text) {
  Message m;
  std::memcpy(m.grow(text.size()), text.data(), text.size());
  return m;
}

std::string text_of(const Message& m) { return std::string(reinterpret_cast<const char*>(m.data()), m.size()); }

RequestServer::Handler echo() {
  return [](Message request, RequestServer::Reply reply) { reply(text_message("echo:" + text_of(request))); };
}

// The error a TlsConfig of these files throws; nullopt when it accepts them.
std::optional<Error> config_error(const TlsFiles& files) {
  try {
    TlsConfig config(TlsRole::kServer, files);
    return std::nullopt;
  } catch (const Error& e) {
    return e;
  }
}

TEST_F(PsTls, GoodFilesMakeAServerAndAClientConfig) {
  EXPECT_NO_THROW(TlsConfig(TlsRole::kServer, node("node-a", "job-ca")));
  EXPECT_NO_THROW(TlsConfig(TlsRole::kClient, node("node-b", "job-ca")));
}

TEST_F(PsTls, AMissingFileIsNamed) {
  TlsFiles files = node("node-a", "job-ca");
  files.key_file = certs_->path("no-such.key");
  const auto error = config_error(files);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error->what()).find(files.key_file), std::string::npos) << error->what();
  EXPECT_NE(std::string(error->what()).find("key_file"), std::string::npos) << error->what();
}

TEST_F(PsTls, MalformedFilesAreNamed) {
  TlsFiles files = node("node-a", "job-ca");
  files.ca_file = write("garbage.pem", "not a certificate\n");
  auto error = config_error(files);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error->what()).find(files.ca_file), std::string::npos) << error->what();

  // The key where the certificate belongs.
  files = node("node-a", "job-ca");
  files.cert_file = files.key_file;
  error = config_error(files);
  ASSERT_TRUE(error);
  EXPECT_NE(std::string(error->what()).find("cert_file " + files.cert_file), std::string::npos) << error->what();

  // PEM markers around junk: mbedTLS refuses it, the error still names it.
  files = node("node-a", "job-ca");
  files.cert_file = write("junk.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
  error = config_error(files);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error->what()).find(files.cert_file), std::string::npos) << error->what();
}

TEST_F(PsTls, TwoOfThreeFilesIsAnErrorNamingTheMissingOne) {
  const TlsFiles good = node("node-a", "job-ca");
  std::map<std::string, std::string> env{{"DT_TLS_CERT_FILE", good.cert_file}, {"DT_TLS_KEY_FILE", good.key_file}};
  const EnvLookup lookup = [&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  try {
    tls_files_from(lookup);
    FAIL() << "two of three TLS files accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("DT_TLS_CA_FILE not set"), std::string::npos) << e.what();
  }
  TlsFiles two = good;
  two.ca_file.clear();
  EXPECT_TRUE(config_error(two));

  env["DT_TLS_CA_FILE"] = good.ca_file;
  env["DT_TLS_KEY_FILE"] = certs_->path("gone.key");
  try {
    tls_files_from(lookup);
    FAIL() << "a missing key file accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("DT_TLS_KEY_FILE " + certs_->path("gone.key")), std::string::npos)
        << e.what();
  }
  env["DT_TLS_KEY_FILE"] = good.key_file;
  const TlsFiles all = tls_files_from(lookup);
  EXPECT_EQ(all.ca_file, good.ca_file);
  env.clear();
  EXPECT_FALSE(tls_files_from(lookup).enabled());
}

TEST_F(PsTls, TcpUrlsBecomeTlsAndLocalOnesStay) {
  const TlsFiles tls = node("node-a", "job-ca");
  EXPECT_EQ(url_for_transport("tcp://10.0.0.1:9000", tls), "tls+tcp://10.0.0.1:9000");
  EXPECT_EQ(url_for_transport("tls+tcp://10.0.0.1:9000", tls), "tls+tcp://10.0.0.1:9000");
  EXPECT_EQ(url_for_transport("ipc:///tmp/x.ipc", tls), "ipc:///tmp/x.ipc");
  EXPECT_EQ(url_for_transport("inproc://x", tls), "inproc://x");
  EXPECT_EQ(url_for_transport("tcp://10.0.0.1:9000", TlsFiles()), "tcp://10.0.0.1:9000");
  EXPECT_THROW(url_for_transport("tls+tcp://10.0.0.1:9000", TlsFiles()), Error);
}

TEST_F(PsTls, JobConfigOfATlsJobUsesTlsTcp) {
  const TlsFiles tls = node("node-a", "job-ca");
  const std::map<std::string, std::string> env{
      {"DMLC_ROLE", "worker"},          {"DMLC_PS_ROOT_URI", "127.0.0.1"}, {"DMLC_PS_ROOT_PORT", "9000"},
      {"DMLC_NUM_SERVER", "1"},         {"DMLC_NUM_WORKER", "1"},          {"DT_TLS_CERT_FILE", tls.cert_file},
      {"DT_TLS_KEY_FILE", tls.key_file}, {"DT_TLS_CA_FILE", tls.ca_file}};
  const JobConfig job = job_config_from([&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
  EXPECT_EQ(job.root_url, "tls+tcp://127.0.0.1:9000");
  EXPECT_EQ(job.security.tls.ca_file, tls.ca_file);
}

TEST_F(PsTls, NodesOfTheJobTalkOverTlsTcp) {
  RequestServer server({"tcp://127.0.0.1:0"}, 2, echo(), 1 << 20, nullptr, ConnectionPolicy(),
                       with_tls(node("node-a", "job-ca")));
  const std::string url = server.bound_urls().front();
  ASSERT_EQ(url.rfind("tls+tcp://127.0.0.1:", 0), 0u) << url;
  ASSERT_NE(url, "tls+tcp://127.0.0.1:0");
  RequestClient client(url, 10s, kDefaultMaxMessageBytes, with_tls(node("node-b", "job-ca")));
  EXPECT_EQ(text_of(client.call(text_message("hi"), 10s)), "echo:hi");
  // A tcp:// URL given to a TLS client is dialed as tls+tcp.
  RequestClient by_tcp_url("tcp://" + url.substr(std::strlen("tls+tcp://")), 10s, kDefaultMaxMessageBytes,
                           with_tls(node("node-b", "job-ca")));
  EXPECT_EQ(text_of(by_tcp_url.call(text_message("again"), 10s)), "echo:again");
}

// The server refuses the stranger's handshake; the stranger's request never
// arrives and fails within its deadline; the job's nodes are still served.
TEST_F(PsTls, ACertificateFromAnotherCaCannotConnect) {
  RequestServer server({"tcp://127.0.0.1:0"}, 2, echo(), 1 << 20, nullptr, ConnectionPolicy(),
                       with_tls(node("node-a", "job-ca")));
  const std::string url = server.bound_urls().front();
  const std::string plain_url = "tcp://" + url.substr(std::strlen("tls+tcp://"));
  const auto expect_refused = [&](const TransportSecurity& security, const std::string& who) {
    RequestClient client(security.tls.enabled() ? url : plain_url, 0ms, kDefaultMaxMessageBytes, security);
    try {
      client.call(text_message("let me in"), 1500ms);
      ADD_FAILURE() << who << " got a reply";
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == ErrorCode::kTimedOut || e.code() == ErrorCode::kNetwork) << who << ": " << e.what();
    }
    EXPECT_FALSE(client.connected()) << who;
  };
  // Its own certificate from another CA, trusting the job's CA.
  TlsFiles stranger = node("stranger", "job-ca");
  expect_refused(with_tls(stranger), "a node with another CA's certificate");
  // Everything from the other CA: it refuses the server's certificate too.
  expect_refused(with_tls(node("stranger", "other-ca")), "a node of another CA");
  // No TLS at all: plain tcp to a tls+tcp port.
  expect_refused(TransportSecurity(), "a plain tcp client");

  RequestClient member(url, 10s, kDefaultMaxMessageBytes, with_tls(node("node-b", "job-ca")));
  EXPECT_EQ(text_of(member.call(text_message("still here?"), 10s)), "echo:still here?");
}

// The other direction: a job node refuses a server whose certificate is not
// from the job's CA (no man in the middle with a certificate of its own).
TEST_F(PsTls, AClientRefusesAServerOfAnotherCa) {
  RequestServer server({"tcp://127.0.0.1:0"}, 2, echo(), 1 << 20, nullptr, ConnectionPolicy(),
                       with_tls(node("stranger", "job-ca")));
  RequestClient client(server.bound_urls().front(), 0ms, kDefaultMaxMessageBytes, with_tls(node("node-b", "job-ca")));
  EXPECT_THROW(client.call(text_message("hi"), 1500ms), Error);
}

}  // namespace
}  // namespace dt::ps
