#include "ps/job/tls_environment.h"

namespace dt::ps {

void check_tls_files(const net::TlsFiles& files, const net::TlsFileNames& names) {
  net::check_tls_files_complete(files, names);
  if (files.enabled()) net::TlsConfig(net::TlsRole::kClient, files, names);
}

net::TlsFiles tls_files_from(const EnvLookup& env) {
  const auto value = [&](const char* name) {
    auto v = env(name);
    return v ? *v : std::string();
  };
  net::TlsFiles files;
  files.cert_file = value("DT_TLS_CERT_FILE");
  files.key_file = value("DT_TLS_KEY_FILE");
  files.ca_file = value("DT_TLS_CA_FILE");
  check_tls_files(files, net::TlsFileNames{"DT_TLS_CERT_FILE", "DT_TLS_KEY_FILE", "DT_TLS_CA_FILE"});
  return files;
}

}  // namespace dt::ps
