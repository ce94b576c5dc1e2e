#include "job_tls.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace dt::dtrun {

namespace {

constexpr const char* kDays = "2";

// Runs `openssl args...` with its output in log; throws with that output on
// failure. Runs before any job process exists, so waiting for this one pid
// cannot take another's exit from the supervisor.
void openssl(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> words{"openssl"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("--tls: fork: ") + std::strerror(errno));
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    umask(077);
    execvp("openssl", argv.data());
    std::fprintf(stderr, "cannot run openssl: %s\n", std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::ifstream in(log);
  std::stringstream output;
  output << in.rdbuf();
  std::string command;
  for (const std::string& w : words) command += (command.empty() ? "" : " ") + w;
  throw std::runtime_error("--tls: `" + command + "` failed" +
                           (WIFEXITED(status) && WEXITSTATUS(status) == 127
                                ? " (is the openssl tool installed? scripts/install-deps.sh installs it)"
                                : "") +
                           ": " + output.str());
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("--tls: cannot write " + path);
}

}  // namespace

EnvMap make_job_tls(const std::string& dir) {
  const std::string tls = dir + "/tls";
  if (mkdir(tls.c_str(), 0700) != 0) throw std::runtime_error("--tls: mkdir " + tls + ": " + std::strerror(errno));
  const auto at = [&](const char* name) { return tls + "/" + name; };
  const std::string log = at("openssl.log");
  const std::vector<std::string> p256{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"};
  std::vector<std::string> ca{"req", "-x509", "-new"};
  ca.insert(ca.end(), p256.begin(), p256.end());
  ca.insert(ca.end(), {"-days", kDays, "-subj", "/CN=dtrun job CA " + std::to_string(getpid()), "-addext",
                       "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                       "-keyout", at("ca.key"), "-out", at("ca.pem")});
  openssl(ca, log);
  std::vector<std::string> request{"req", "-new"};
  request.insert(request.end(), p256.begin(), p256.end());
  request.insert(request.end(), {"-subj", "/CN=disttrain node", "-keyout", at("node.key"), "-out", at("node.csr")});
  openssl(request, log);
  // Both server and client use: every node dials and listens.
  write_file(at("node.ext"), "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                             "extendedKeyUsage=serverAuth,clientAuth\n");
  openssl({"x509", "-req", "-days", kDays, "-in", at("node.csr"), "-CA", at("ca.pem"), "-CAkey", at("ca.key"),
           "-CAcreateserial", "-CAserial", at("ca.srl"), "-extfile", at("node.ext"), "-out", at("node.pem")},
          log);
  for (const char* done : {"ca.key", "ca.srl", "node.csr", "node.ext", "openssl.log"}) std::remove(at(done).c_str());
  for (const char* kept : {"ca.pem", "node.pem", "node.key"}) chmod(at(kept).c_str(), 0600);
  return {{"DT_TLS_CERT_FILE", at("node.pem")}, {"DT_TLS_KEY_FILE", at("node.key")}, {"DT_TLS_CA_FILE", at("ca.pem")}};
}

}  // namespace dt::dtrun
