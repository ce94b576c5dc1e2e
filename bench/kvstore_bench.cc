// kvstore_bench: push, pull and pushpull throughput and latency of the
// dist_sync kvstore for one key of 4 KiB .. 64 MiB and for ResNet-18's
// gradient set, with 1 server/1 worker and 2 servers/2 workers over tcp and
// ipc loopback, plus a raw TCP loopback baseline measured in the same run
// (send N bytes, receive N bytes back: what a push then a pull moves), so the
// figures can be read as ratios. One JSON line per measurement on stdout.
//
// The bench starts every process itself: the scheduler and servers are
// dt-node (DT_NODE_BINARY, default ./dt-node beside the build tree's bench/),
// workers are this program re-executed with --worker.
//
// kvstore_bench [--max-bytes N] [--transport tcp|ipc|tls[,...]] [--layouts 1x1,2x2]
// narrows the default run: sizes up to N bytes (the ResNet-18 set only when
// N covers 64 MiB), some transports, some server x worker layouts. tls is
// tcp with every node on TLS (DT_TLS_*: a throw-away CA and certificate made
// with the openssl tool, as the tests make them): `--transport tcp,tls`
// measures what TLS costs in one run.
//
// --replication 0,1 runs each job without and with replicated servers
// (DT_SERVER_REPLICATION; 2 or more servers), one after the other: what
// replication costs, as a ratio within one run. Lines then carry
// "replication".
//
// kvstore_bench --train [--servers N] [--workers N] [--transport tcp|ipc]
//               [--models lenet,resnet18] [--replication 0[,1]]
// measures whole dist_sync training steps instead (synthetic data, LeNet at
// batch 64 and ResNet-18 at batch 4 per worker, sgd with momentum, the
// trainer's defaults) with communication overlapping backward and without
// (DT_KVSTORE_OVERLAP=1/0), one JSON line per model and setting:
//   {"op":"train_step","model":"lenet","overlap":1,...,"step_ms":...,
//    "compute_ms":...,"exposed_comm_ms":...}
//
// The worker processes: kvstore_bench_worker.cc.
#include "kvstore_bench_common.h"

extern char** environ;

namespace {

using namespace kvstore_bench;

// ---- raw TCP baseline -----------------------------------------------------

void full_io(int fd, char* buf, size_t n, bool send_side) {
  size_t done = 0;
  while (done < n) {
    const ssize_t k = send_side ? ::send(fd, buf + done, n - done, 0) : ::recv(fd, buf + done, n - done, 0);
    if (k <= 0) throw std::runtime_error("raw tcp baseline: socket closed");
    done += static_cast<size_t>(k);
  }
}

// Echo: the peer receives N bytes and sends N bytes back.
void raw_tcp(size_t bytes) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::listen(listener, 1);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const int reps = repetitions(bytes);
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::accept(listener, nullptr, nullptr);
    std::vector<char> buf(bytes);
    for (int r = 0; r < reps + 1; ++r) {
      full_io(fd, buf.data(), bytes, false);
      full_io(fd, buf.data(), bytes, true);
    }
    _exit(0);
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::vector<char> buf(bytes, 1);
  full_io(fd, buf.data(), bytes, true);  // one untimed round, as the kvstore gets
  full_io(fd, buf.data(), bytes, false);
  Timings timings;
  for (int r = 0; r < reps; ++r) {
    timings.start();
    full_io(fd, buf.data(), bytes, true);
    full_io(fd, buf.data(), bytes, false);
    timings.stop();
  }
  print("raw_tcp", bytes, 0, 0, "tcp", timings);
  ::close(fd);
  ::close(listener);
  ::waitpid(child, nullptr, 0);
}

// ---- the driver ---------------------------------------------------------------

pid_t spawn(const std::string& program, const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::vector<std::string> all_env;
  for (char** e = environ; *e != nullptr; ++e) all_env.push_back(*e);
  all_env.insert(all_env.end(), env.begin(), env.end());
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv, envp;
    std::vector<std::string> a = args;
    a.insert(a.begin(), program);
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    for (auto& s : all_env) envp.push_back(s.data());
    envp.push_back(nullptr);
    ::execve(program.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

// DT_TLS_* naming a fresh job certificate, for --transport tls.
std::vector<std::string> tls_environment(dt::test::TlsTestCerts& certs) {
  certs.make_ca("ca");
  const dt::net::TlsFiles files = certs.make_node("node", "ca");
  return {"DT_TLS_CERT_FILE=" + files.cert_file, "DT_TLS_KEY_FILE=" + files.key_file,
          "DT_TLS_CA_FILE=" + files.ca_file};
}

// A comma-separated list; false when an item is empty.
bool split_list(const char* text, std::vector<std::string>& items) {
  items.clear();
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.empty()) return false;
    items.push_back(item);
  }
  return !items.empty();
}

bool run_job(const std::string& self, const std::string& node, int servers, int workers, const std::string& transport,
             const std::string& worker_flag = "--worker", const std::vector<std::string>& worker_env = {},
             int replication = 0) {
  const std::string port_file = "/tmp/dt-kvbench-port-" + std::to_string(::getpid());
  std::remove(port_file.c_str());
  const bool tls = transport == "tls";
  std::vector<std::string> common = {"DMLC_NUM_SERVER=" + std::to_string(servers),
                                     "DMLC_NUM_WORKER=" + std::to_string(workers),
                                     "DMLC_PS_ROOT_URI=127.0.0.1",
                                     "DT_PS_DATA_TRANSPORT=" + (tls ? std::string("tcp") : transport),
                                     "DT_BENCH_TRANSPORT=" + transport,
                                     "DT_REQUEST_TIMEOUT_S=120", "DT_STARTUP_TIMEOUT_S=30",
                                     "DT_SERVER_REPLICATION=" + std::to_string(replication)};
  std::unique_ptr<dt::test::TlsTestCerts> certs;
  if (tls) {
    certs = std::make_unique<dt::test::TlsTestCerts>();
    for (std::string& variable : tls_environment(*certs)) common.push_back(variable);
  }
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), common.begin(), common.end());
    return extra;
  };
  std::vector<pid_t> pids;
  pids.push_back(spawn(node, {}, with({"DMLC_ROLE=scheduler", "DMLC_PS_ROOT_PORT=0", "DT_PS_PORT_FILE=" + port_file})));
  std::string port;
  for (auto end = Clock::now() + std::chrono::seconds(10); Clock::now() < end && port.empty();) {
    std::ifstream in(port_file);
    std::getline(in, port);
    if (port.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::remove(port_file.c_str());
  if (port.empty()) {
    std::fprintf(stderr, "kvstore_bench: the scheduler did not start\n");
    ::kill(pids[0], SIGKILL);
    ::waitpid(pids[0], nullptr, 0);
    return false;
  }
  for (int s = 0; s < servers; ++s) pids.push_back(spawn(node, {}, with({"DMLC_ROLE=server", "DMLC_PS_ROOT_PORT=" + port})));
  for (int w = 0; w < workers; ++w) {
    std::vector<std::string> env = {"DMLC_ROLE=worker", "DMLC_PS_ROOT_PORT=" + port,
                                    "DMLC_WORKER_ID=" + std::to_string(w)};
    env.insert(env.end(), worker_env.begin(), worker_env.end());
    pids.push_back(spawn(self, {worker_flag}, with(env)));
  }
  // Bounded: whatever is still running after the deadline is killed.
  bool ok = true;
  const auto deadline = Clock::now() + std::chrono::minutes(5);
  for (pid_t pid : pids) {
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        ok = false;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--worker") == 0) return kvstore_bench::worker_main();
  if (argc > 1 && std::strcmp(argv[1], "--train-worker") == 0) return kvstore_bench::train_worker_main();
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = '\0';
  const char* node_env = std::getenv("DT_NODE_BINARY");
  const std::string node = node_env ? node_env : std::string(self).substr(0, std::string(self).rfind("/bench/")) + "/dt-node";
  // --replication: the factors each job runs with, in order.
  std::vector<int> replications = {0};
  auto parse_replications = [&](const char* text) {
    std::vector<std::string> items;
    if (!split_list(text, items)) return false;
    replications.clear();
    for (const std::string& item : items) {
      if (item != "0" && item != "1") return false;
      replications.push_back(item == "1" ? 1 : 0);
    }
    return true;
  };
  if (argc > 1 && std::strcmp(argv[1], "--train") == 0) {
    int servers = 1, workers = 2;
    std::string transport = "ipc";
    std::vector<std::string> models = {"lenet", "resnet18"};
    if (argc % 2 != 0) {
      std::fprintf(stderr, "kvstore_bench: --train options take a value each\n");
      return 2;
    }
    for (int i = 2; i + 1 < argc; i += 2) {
      bool ok = true;
      if (std::strcmp(argv[i], "--servers") == 0) servers = std::atoi(argv[i + 1]);
      else if (std::strcmp(argv[i], "--workers") == 0) workers = std::atoi(argv[i + 1]);
      else if (std::strcmp(argv[i], "--transport") == 0) transport = argv[i + 1];
      else if (std::strcmp(argv[i], "--models") == 0) ok = split_list(argv[i + 1], models);
      else if (std::strcmp(argv[i], "--replication") == 0) ok = parse_replications(argv[i + 1]);
      else ok = false;
      if (!ok) {
        std::fprintf(stderr, "kvstore_bench: bad option %s %s\n", argv[i], argv[i + 1]);
        return 2;
      }
    }
    bool ok = true;
    for (const std::string& model : models) {
      for (const char* overlap : {"0", "1"}) {
        for (int replication : replications) {
          ok = run_job(self, node, servers, workers, transport, "--train-worker",
                       {"DT_BENCH_MODEL=" + model, std::string("DT_KVSTORE_OVERLAP=") + overlap}, replication) &&
               ok;
        }
      }
    }
    return ok ? 0 : 1;
  }
  size_t max_bytes = kSizes[4];
  std::vector<std::string> transports = {"tcp", "ipc"};
  std::vector<std::pair<int, int>> layouts = {{1, 1}, {2, 2}};
  bool usage = false;
  for (int i = 1; i < argc && !usage; i += 2) {
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (value == nullptr) {
      usage = true;
    } else if (std::strcmp(argv[i], "--max-bytes") == 0) {
      max_bytes = static_cast<size_t>(std::strtoull(value, nullptr, 10));
      usage = max_bytes < kSizes[0];
    } else if (std::strcmp(argv[i], "--transport") == 0) {
      transports.clear();
      std::stringstream list(value);
      std::string item;
      while (std::getline(list, item, ',')) {
        usage = usage || (item != "tcp" && item != "ipc" && item != "tls");
        transports.push_back(item);
      }
      usage = usage || transports.empty();
    } else if (std::strcmp(argv[i], "--replication") == 0) {
      usage = !parse_replications(value);
    } else if (std::strcmp(argv[i], "--layouts") == 0) {
      layouts.clear();
      std::stringstream list(value);
      std::string item;
      while (std::getline(list, item, ',')) {
        int s = 0, w = 0;
        if (std::sscanf(item.c_str(), "%dx%d", &s, &w) != 2 || s < 1 || w < 1) usage = true;
        layouts.emplace_back(s, w);
      }
      usage = usage || layouts.empty();
    } else {
      usage = true;  // e.g. --help: a mistake, not a request to run everything
    }
  }
  if (usage) {
    std::fprintf(stderr,
                 "usage: kvstore_bench [--max-bytes N] [--transport tcp|ipc|tls[,...]] [--layouts SxW,...]\n"
                 "                     [--replication 0[,1]]\n"
                 "         raw TCP, then push/pull/pushpull for sizes 4 KiB..N (default 64 MiB, with the\n"
                 "         ResNet-18 set) for each layout (default 1x1,2x2) over each transport (default tcp,ipc;\n"
                 "         tls: tcp with every node on TLS)\n"
                 "       kvstore_bench --train [--servers N] [--workers N] [--transport tcp|ipc]\n"
                 "                     [--models lenet,resnet18] [--replication 0[,1]]\n");
    return std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ? 0 : 2;
  }
  for (size_t bytes : kSizes) {
    if (bytes <= max_bytes) raw_tcp(bytes);
  }
  bool ok = true;
  const std::vector<std::string> env = {"DT_BENCH_MAX_BYTES=" + std::to_string(max_bytes)};
  for (const std::string& transport : transports) {
    for (const auto& [servers, workers] : layouts) {
      for (int replication : replications) {
        ok = run_job(self, node, servers, workers, transport, "--worker", env, replication) && ok;
      }
    }
  }
  return ok ? 0 : 1;
}
