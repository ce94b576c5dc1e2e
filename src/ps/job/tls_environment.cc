#include "ps/job/tls_environment.h"

namespace dt::ps {

void check_tls_files(const TlsFiles& files, const TlsFileNames& names) {
  check_tls_files_complete(files, names);
  if (files.enabled()) TlsConfig(TlsRole::kClient, files, names);
}

TlsFiles tls_files_from(const EnvLookup& env) {
  const auto value = [&](const char* name) {
    auto v = env(name);
    return v ? *v : std::string();
  };
  TlsFiles files;
  files.cert_file = value("DT_TLS_CERT_FILE");
  files.key_file = value("DT_TLS_KEY_FILE");
  files.ca_file = value("DT_TLS_CA_FILE");
  check_tls_files(files, TlsFileNames{"DT_TLS_CERT_FILE", "DT_TLS_KEY_FILE", "DT_TLS_CA_FILE"});
  return files;
}

}  // namespace dt::ps
