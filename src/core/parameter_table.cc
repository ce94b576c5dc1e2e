#include "core/parameter_table.h"

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace dt::core {
namespace {

using T = ParameterType;
constexpr Support kYes = Support::kHonoured;
constexpr Support kRefused = Support::kRefused;

constexpr const char* kLogging = "Logging and the timeline";
constexpr const char* kLayout = "Job layout: DMLC_* and the variables of other launchers";
constexpr const char* kDeadlines = "Deadlines, bounds and fault tolerance";
constexpr const char* kSecurity = "Security";
constexpr const char* kStores = "KVStores, all-reduce and the trainer";
constexpr const char* kGpuKernels = "GPU kernels";
constexpr const char* kProcess = "Threads and files";
constexpr const char* kRefusedMxnet = "MXNet variables refused: not honoured here";

// Defaults are the ones the code that reads each variable applies; the
// deadlines' and bounds' come from PsOptions (ps/job/job_config.h), which
// the test PsParameterDefaults compares them with.
constexpr Parameter kParameters[] = {
    {"DT_LOG_LEVEL", kLogging, T::kChoice, "info",
     "The most verbose lines written: none, error, warning, info, debug, trace, or 0-5. "
     "dt_log_set_handler() replaces it.",
     kYes},
    {"PS_VERBOSE", kLogging, T::kInteger, "0",
     "ps-lite's log level: 1 raises DT_LOG_LEVEL to debug (connections, node tables), 2 to trace (every message).",
     kYes},
    {"DT_TIMELINE", kLogging, T::kPath, "",
     "Record this process's timeline (Chrome trace-event JSON, docs/profiling.md): a job's member writes "
     "FILE.<role>.<rank>.json (the scheduler FILE.scheduler.json), another process FILE; dtrun --timeline FILE "
     "sets it and merges the files into FILE.",
     kYes},
    {"DT_TIMELINE_LAYERS", kLogging, T::kInteger, "0",
     "1: a timeline also has a span for each layer's forward and backward (on a GPU: the time to queue its kernels).",
     kYes},
    {"DT_TIMELINE_EVENTS", kLogging, T::kInteger, "200000",
     "Events a timeline keeps (1-268435456, 144 bytes each); past it the oldest are dropped and counted.",
     kYes},

    {"DMLC_ROLE", kLayout, T::kChoice, "worker",
     "This process's role: worker, server or scheduler. When set, the other DMLC_* variables describe the job.",
     kYes},
    {"DMLC_PS_ROOT_URI", kLayout, T::kText, "", "The scheduler's host name or IPv4 address.", kYes},
    {"DMLC_PS_ROOT_PORT", kLayout, T::kInteger, "", "The scheduler's port (0: any free one, see DT_PS_PORT_FILE).",
     kYes},
    {"DMLC_NUM_SERVER", kLayout, T::kInteger, "", "Servers in the job (0 or more).", kYes},
    {"DMLC_NUM_WORKER", kLayout, T::kInteger, "", "Workers in the job (1 or more).", kYes},
    {"DMLC_WORKER_ID", kLayout, T::kInteger, "",
     "This worker's rank, 0 to DMLC_NUM_WORKER-1; unset: the scheduler assigns one.", kYes},
    {"DMLC_NODE_HOST", kLayout, T::kText, "",
     "This node's address as its peers reach it (else the address of DMLC_INTERFACE).", kYes},
    {"DMLC_INTERFACE", kLayout, T::kText, "",
     "The network interface whose IPv4 address peers reach this node at (else 127.0.0.1 for a loopback "
     "scheduler, else the first non-loopback interface).",
     kYes},
    {"DT_NUM_SERVER", kLayout, T::kInteger, "",
     "Servers among a launcher's ranks (RANK, OMPI_*, PMI_*, SLURM_*); unset: half of them, rounded down.", kYes},
    {"DT_PS_ROOT_URL", kLayout, T::kText, "",
     "The scheduler's URL verbatim (tcp://, ipc://, inproc://), instead of DMLC_PS_ROOT_URI and _PORT.", kYes},
    {"DT_PS_PORT_FILE", kLayout, T::kPath, "", "The file the scheduler writes the port it bound to.", kYes},
    {"DT_PS_LISTEN_ALL", kLayout, T::kChoice, "0",
     "1: the scheduler listens on every interface (0.0.0.0) rather than on its own address.", kYes},
    {"MX_CONFIG", kLayout, T::kJson, "",
     "The Kubeflow MXJob operator's job description (cluster and task), used when DMLC_ROLE is unset.", kYes},
    {"RANK", kLayout, T::kInteger, "", "torchrun's rank of this process; the rank rule makes it a server or worker.",
     kYes},
    {"WORLD_SIZE", kLayout, T::kInteger, "", "torchrun's number of processes (servers + workers).", kYes},
    {"MASTER_ADDR", kLayout, T::kText, "", "torchrun's rendezvous host: the scheduler's host.", kYes},
    {"MASTER_PORT", kLayout, T::kInteger, "", "torchrun's rendezvous port: the scheduler's port.", kYes},
    {"DT_LOCAL_RANK", kLayout, T::kInteger, "",
     "This worker's rank among the workers of its host (dtrun sets it): dist_nccl's GPU (dt_node_local_rank).",
     kYes},
    {"DT_LOCAL_SIZE", kLayout, T::kInteger, "", "The number of workers on this host (dtrun sets it).", kYes},
    {"LOCAL_RANK", kLayout, T::kInteger, "", "torchrun's rank on this host (dtrun sets it too), as DT_LOCAL_RANK.",
     kYes},
    {"LOCAL_WORLD_SIZE", kLayout, T::kInteger, "", "torchrun's number of processes on this host, as DT_LOCAL_SIZE.",
     kYes},
    {"OMPI_COMM_WORLD_RANK", kLayout, T::kInteger, "", "Open MPI's rank of this process.", kYes},
    {"OMPI_COMM_WORLD_SIZE", kLayout, T::kInteger, "", "Open MPI's number of processes.", kYes},
    {"OMPI_COMM_WORLD_LOCAL_RANK", kLayout, T::kInteger, "",
     "Open MPI's rank on this host (counting every process mpirun started there), as DT_LOCAL_RANK.", kYes},
    {"OMPI_COMM_WORLD_LOCAL_SIZE", kLayout, T::kInteger, "", "Open MPI's number of processes on this host.", kYes},
    {"MPI_LOCALRANKID", kLayout, T::kInteger, "", "MPICH's rank on this host, as DT_LOCAL_RANK.", kYes},
    {"MPI_LOCALNRANKS", kLayout, T::kInteger, "", "MPICH's number of processes on this host.", kYes},
    {"PMI_RANK", kLayout, T::kInteger, "", "PMI's rank (MPICH, Intel MPI, srun --mpi=pmi2).", kYes},
    {"PMI_SIZE", kLayout, T::kInteger, "", "PMI's number of processes.", kYes},
    {"SLURM_PROCID", kLayout, T::kInteger, "", "Slurm's rank of this task.", kYes},
    {"SLURM_NTASKS", kLayout, T::kInteger, "", "Slurm's number of tasks.", kYes},
    {"SLURM_LOCALID", kLayout, T::kInteger, "",
     "Slurm's rank on this host (counting every task srun started there), as DT_LOCAL_RANK.", kYes},
    {"SLURM_JOB_NODELIST", kLayout, T::kText, "", "Slurm's hosts; the first one runs the scheduler.", kYes},

    {"DT_STARTUP_TIMEOUT_S", kDeadlines, T::kSeconds, "60",
     "How long a node waits for the job to assemble (the scheduler's node table).", kYes},
    {"DT_REQUEST_TIMEOUT_S", kDeadlines, T::kSeconds, "120", "How long a worker waits for a server's reply.", kYes},
    {"DT_HEARTBEAT_INTERVAL_S", kDeadlines, T::kSeconds, "1", "Seconds between a node's heartbeats.", kYes},
    {"DT_HEARTBEAT_TIMEOUT_S", kDeadlines, T::kSeconds, "5",
     "Silence after which the scheduler takes a node for lost.", kYes},
    {"DT_STALL_WARNING_S", kDeadlines, T::kSeconds, "60",
     "A dist_sync round, a request, a barrier or an all-reduce (its receive from or send to a peer, its "
     "rendezvous; dist_nccl: its host-side wait) waiting this long is logged once, naming the workers it waits for "
     "(the stall inspector); 0: off.",
     kYes},
    {"DT_SHUTDOWN_TIMEOUT_S", kDeadlines, T::kSeconds, "10", "How long a clean shutdown may take.", kYes},
    {"DT_BIGARRAY_BOUND_BYTES", kDeadlines, T::kBytes, "4000000",
     "Arrays at least this big are split over the servers, and summed on MXNET_KVSTORE_REDUCTION_NTHREADS threads; "
     "wins over MXNET_KVSTORE_BIGARRAY_BOUND.",
     kYes},
    {"MXNET_KVSTORE_BIGARRAY_BOUND", kDeadlines, T::kInteger, "1000000",
     "MXNet's bound in float32 elements (x 4 bytes), as DT_BIGARRAY_BOUND_BYTES.", kYes},
    {"PS_RESEND", kDeadlines, T::kChoice, "0", "ps-lite's resend: 1 resends a request that got no reply in time.",
     kYes},
    {"PS_RESEND_TIMEOUT", kDeadlines, T::kInteger, "1000", "Milliseconds before a request is resent (PS_RESEND=1).",
     kYes},
    {"DT_WORKER_LOSS", kDeadlines, T::kChoice, "fail",
     "fail: a lost worker fails the job; continue: the job goes on without it, and a restarted one rejoins.", kYes},
    {"DT_SERVER_REPLICATION", kDeadlines, T::kChoice, "0",
     "1: every key part has a replica on another server, so the job survives the loss of a server.", kYes},
    {"DT_PS_SERVER_MEMORY_LIMIT", kDeadlines, T::kBytes, "",
     "A server's bound on the bytes it holds (K, M, G suffixes); unset: no bound.", kYes},

    {"DT_JOB_SECRET", kSecurity, T::kText, "",
     "The job's secret, 64 hex digits: a node proves it holds it before it becomes a member (dtrun sets it).", kYes},
    {"DT_JOB_SECRET_FILE", kSecurity, T::kPath, "",
     "A file holding the secret, readable by its owner only; not together with DT_JOB_SECRET.", kYes},
    {"DT_TLS_CERT_FILE", kSecurity, T::kPath, "", "This node's TLS certificate (PEM); all three DT_TLS_* or none.",
     kYes},
    {"DT_TLS_KEY_FILE", kSecurity, T::kPath, "", "The certificate's private key (PEM).", kYes},
    {"DT_TLS_CA_FILE", kSecurity, T::kPath, "", "The CA that signed every node's certificate (PEM).", kYes},

    {"DT_PS_DATA_TRANSPORT", kStores, T::kChoice, "auto",
     "How a worker reaches the servers' data plane: auto (ipc on the same host, else tcp), tcp or ipc.", kYes},
    {"DT_ALLREDUCE_BUCKET_BYTES", kStores, T::kBytes, "4M",
     "The allreduce store's bucket: keys are all-reduced together once it holds this many bytes (K, M suffixes).",
     kYes},
    {"DT_HIERARCHICAL_ALLREDUCE", kStores, T::kChoice, "1",
     "1: the allreduce store's large all-reduces go hierarchical when the workers sit on several hosts, the same "
     "number (2 or more) on each (within each host over ipc, between hosts one ring per local rank); 0: always "
     "one flat ring over every worker (0 on any worker keeps every worker flat).",
     kYes},
    {"DT_ALLREDUCE_DTYPE", kStores, T::kChoice, "float32",
     "dist_nccl's wire type for float32 keys: float32 or float16.", kYes},
    {"DT_ALLREDUCE_DEVICE", kStores, T::kInteger, "",
     "dist_nccl's GPU; unset: the worker's local rank (DT_LOCAL_RANK and the others), by hand the worker rank "
     "modulo the GPUs.",
     kYes},
    {"DT_KVSTORE_OVERLAP", kStores, T::kChoice, "1",
     "1: a trainer overlaps communication with backward where the store allows; 0: it does not.", kYes},
    {"MXNET_KVSTORE_REDUCTION_NTHREADS", kStores, T::kInteger, "4",
     "Threads (1-256) that sum an array from the bigarray bound on: a server's rounds, a worker's merge of a "
     "key's values. Same bits as one thread.",
     kYes},
    {"MXNET_ENABLE_GPU_P2P", kStores, T::kChoice, "1",
     "0: a copy between two GPUs goes through pinned host memory; 1: a peer copy (cudaMemcpyPeer).", kYes},

    {"MXNET_CUDNN_AUTOTUNE_DEFAULT", kGpuKernels, T::kChoice, "1",
     "How cuDNN convolution algorithms are chosen, as in MXNet: 0 cuDNN's heuristics; 1 each one timed once per "
     "shape and GPU context, the fastest within 1 GiB of workspace; 2 the fastest whatever its workspace "
     "(PyTorch's cudnn.benchmark). float32 never uses TF32.",
     kYes},
    {"DT_CONV_LAYOUT", kGpuKernels, T::kChoice, "NCHW",
     "NCHW or NHWC: the layout a net's 4-d layers (convolutions, batch norm, pooling) run in, converted once at "
     "the input and before the first flattening layer; parameters stay OIHW. NHWC is not yet measured on a GPU.",
     kYes},

    {"OMP_NUM_THREADS", kProcess, T::kInteger, "",
     "Threads of the CPU kernels (the outer level of a list); unset: the CPUs this process may use.", kYes},
    {"DT_STATUS_FILE", kProcess, T::kPath, "",
     "A trainer rewrites this file with its steps, images, bytes and seconds so far, a server with its requests, "
     "bytes and seconds computing, communicating and waiting (dtrun --status-every sets it per worker and server).",
     kYes},
    {"DT_STATUS_EVERY_S", kProcess, T::kSeconds, "1",
     "How often a trainer or a server rewrites DT_STATUS_FILE. Set without DT_STATUS_FILE (dtrun --status-every "
     "with --launcher ssh, mpi or slurm), the numbers go to the scheduler with the heartbeats instead.",
     kYes},
    {"DT_STATUS_DIR", kProcess, T::kPath, "",
     "The scheduler writes here each worker's and server's status file from the numbers their heartbeats carry "
     "(dtrun --status-every sets it for the scheduler when the processes run on other hosts).",
     kYes},
    {"TMPDIR", kProcess, T::kPath, "/tmp", "Where the host communicator puts its ipc sockets.", kYes},

    {"MXNET_UPDATE_ON_KVSTORE", kRefusedMxnet, T::kChoice, "",
     "Set update_on_kvstore in the trainer options instead: one explicit setting per program.", kRefused},
    {"MXNET_KVSTORE_USETREE", kRefusedMxnet, T::kChoice, "",
     "No tree reduce here: a key spread over GPUs is reduced with NCCL (without NCCL: copies to one GPU).",
     kRefused},
};

// Markdown table cells must not contain a bare '|'.
std::string cell(const char* text) {
  std::string out;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p == '|') out += '\\';
    out += *p;
  }
  return out;
}

}  // namespace

const Parameter* parameters() { return kParameters; }

size_t parameter_count() { return sizeof kParameters / sizeof kParameters[0]; }

const Parameter* find_parameter(const std::string& name) {
  for (const Parameter& p : kParameters) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

const char* read_parameter(const char* name) {
  if (find_parameter(name) == nullptr) {
    throw Error(ErrorCode::kInternal, std::string("environment variable ") + name +
                                          " is read but not declared in src/core/parameter_table.cc");
  }
  return std::getenv(name);
}

const char* parameter_type_name(ParameterType type) {
  switch (type) {
    case T::kText: return "text";
    case T::kInteger: return "integer";
    case T::kSeconds: return "seconds";
    case T::kBytes: return "bytes";
    case T::kChoice: return "choice";
    case T::kPath: return "path";
    case T::kJson: return "json";
  }
  return "unknown";
}

std::string parameters_as_text() {
  std::string out = "Environment variables disttrain reads (docs/environment.md):\n";
  const char* group = "";
  for (const Parameter& p : kParameters) {
    if (std::string(group) != p.group) {
      group = p.group;
      out += std::string("\n") + group + ":\n";
    }
    out += std::string("  ") + p.name + " (" + parameter_type_name(p.type);
    if (*p.default_value != '\0') out += std::string(", default ") + p.default_value;
    if (p.support == Support::kRefused) out += ", refused: not honoured";
    out += ")\n      " + std::string(p.doc) + "\n";
  }
  return out;
}

std::string parameters_as_markdown() {
  std::string out =
      "# Environment variables\n"
      "\n"
      "<!-- Generated by `dt-node --help-env=markdown` from src/core/parameter_table.cc;\n"
      "     do not edit by hand: scripts/generate-environment-doc.sh rewrites it, and the\n"
      "     test ParameterTableDocCurrent fails when it differs from the table. -->\n"
      "\n"
      "Every variable the library reads, declared once in `src/core/parameter_table.cc`.\n"
      "An explicit option (a field of `dt_kvstore_options`, `dt_trainer_options`, ...)\n"
      "wins over its variable; variables only supply defaults. `dt-node --help-env`\n"
      "prints the same table. A default left empty means \"unset\": the doc line says\n"
      "what happens then. A variable marked **Refused** is one an MXNet job may carry\n"
      "that has no effect here: a process that finds it set says so in a warning\n"
      "naming it, and goes on.\n";
  const char* group = "";
  for (const Parameter& p : kParameters) {
    if (std::string(group) != p.group) {
      group = p.group;
      out += std::string("\n## ") + group + "\n\n";
      out += "| Variable | Type | Default | Meaning |\n";
      out += "|---|---|---|---|\n";
    }
    std::string doc = cell(p.doc);
    if (p.support == Support::kRefused) doc = "**Refused: not honoured.** " + doc;
    const std::string value = *p.default_value == '\0' ? "" : std::string("`") + cell(p.default_value) + "`";
    out += std::string("| `") + p.name + "` | " + parameter_type_name(p.type) + " | " + value + " | " + doc + " |\n";
  }
  return out;
}

}  // namespace dt::core
