// Throw-away TLS material for tests and benchmarks: CAs and node
// certificates (EC P-256, valid 2 days) made with the openssl command line
// tool, in a private directory removed when the object goes. Made
// independently of dtrun's generator, so a test also checks that the two
// agree on what the library accepts.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "net/transport_security.h"

namespace dt::test {

class TlsTestCerts {
 public:
  TlsTestCerts() {
    std::string pattern = "/tmp/dt-tls-test.XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern);
    dir_ = buf.data();
  }
  ~TlsTestCerts() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  TlsTestCerts(const TlsTestCerts&) = delete;
  TlsTestCerts& operator=(const TlsTestCerts&) = delete;

  const std::string& dir() const { return dir_; }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // <ca>.pem and <ca>.key: a self-signed CA.
  void make_ca(const std::string& ca) {
    run("openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj '/CN=" + ca +
        "' -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign -keyout " +
        q(ca + ".key") + " -out " + q(ca + ".pem"));
  }

  // <node>.pem, <node>.key signed by <ca>; returns the three files.
  net::TlsFiles make_node(const std::string& node, const std::string& ca) {
    std::FILE* f = std::fopen(path(node + ".ext").c_str(), "w");
    if (f == nullptr) throw std::runtime_error("cannot write " + path(node + ".ext"));
    std::fputs("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
               "extendedKeyUsage=serverAuth,clientAuth\n", f);
    std::fclose(f);
    run("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj '/CN=" + node + "' -keyout " +
        q(node + ".key") + " -out " + q(node + ".csr"));
    run("openssl x509 -req -days 2 -in " + q(node + ".csr") + " -CA " + q(ca + ".pem") + " -CAkey " +
        q(ca + ".key") + " -CAcreateserial -extfile " + q(node + ".ext") + " -out " + q(node + ".pem"));
    return files(node, ca);
  }

  net::TlsFiles files(const std::string& node, const std::string& ca) const {
    return net::TlsFiles{path(node + ".pem"), path(node + ".key"), path(ca + ".pem")};
  }

 private:
  std::string q(const std::string& name) const { return "'" + path(name) + "'"; }

  void run(const std::string& command) const {
    const std::string logged = command + " >" + q("openssl.log") + " 2>&1";
    if (std::system(logged.c_str()) != 0) {
      throw std::runtime_error("`" + command + "` failed (is the openssl tool installed? scripts/install-deps.sh "
                               "installs it); see " + path("openssl.log"));
    }
  }

  std::string dir_;
};

}  // namespace dt::test
