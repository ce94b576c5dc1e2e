#include "kvstore/kvstore_factory.h"

#include <cctype>
#include <cstdlib>
#include <map>

#include "core/context.h"
#include "core/error.h"
#include "core/parameter_table.h"
#include "kvstore/dist_kvstore.h"
#include "kvstore/host/host_allreduce_kvstore.h"
#include "kvstore/key_reducer.h"
#include "kvstore/local_kvstore.h"
#include "kvstore/worker_merge.h"
#if DT_WITH_NCCL
#include "kvstore/nccl/allreduce_kvstore.h"
#endif

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;

namespace {

// allreduce's bucket size from DT_ALLREDUCE_BUCKET_BYTES (bytes, or with a
// K/M suffix: 4M) and its shape from DT_HIERARCHICAL_ALLREDUCE (0 or 1).
HostAllreduceOptions host_allreduce_options_from_env() {
  HostAllreduceOptions options;
  if (const char* shape = core::read_parameter("DT_HIERARCHICAL_ALLREDUCE"); shape != nullptr && *shape != '\0') {
    const std::string text = shape;
    if (text != "0" && text != "1") {
      throw Error(ErrorCode::kInvalidArgument, "DT_HIERARCHICAL_ALLREDUCE must be 0 or 1, not '" + text + "'");
    }
    options.hierarchical = text == "1";
  }
  const char* text = core::read_parameter("DT_ALLREDUCE_BUCKET_BYTES");
  if (text == nullptr || *text == '\0') return options;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  unsigned long long scale = 1;
  if (*end == 'K' || *end == 'k') {
    scale = 1ull << 10;
    ++end;
  } else if (*end == 'M' || *end == 'm') {
    scale = 1ull << 20;
    ++end;
  }
  if (end == text || *end != '\0' || value == 0 || value > (1ull << 40) / scale) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("DT_ALLREDUCE_BUCKET_BYTES must be a positive byte count (e.g. 4194304 or 4M), not '") +
                    text + "'");
  }
  options.bucket_bytes = static_cast<size_t>(value * scale);
  return options;
}

}  // namespace

#if DT_WITH_NCCL
namespace {

// dist_nccl's settings from DT_ALLREDUCE_DTYPE and DT_ALLREDUCE_DEVICE.
AllreduceOptions allreduce_options_from_env() {
  AllreduceOptions options;
  if (const char* dtype = core::read_parameter("DT_ALLREDUCE_DTYPE"); dtype != nullptr && *dtype != '\0') {
    const std::string text = dtype;
    if (text != "float32" && text != "float16") {
      throw Error(ErrorCode::kInvalidArgument, "DT_ALLREDUCE_DTYPE must be float32 or float16, not '" + text + "'");
    }
    options.wire_dtype = text == "float16" ? core::DType::kFloat16 : core::DType::kFloat32;
  }
  if (const char* device = core::read_parameter("DT_ALLREDUCE_DEVICE"); device != nullptr && *device != '\0') {
    char* end = nullptr;
    const long id = std::strtol(device, &end, 10);
    if (*end != '\0' || id < 0 || id > 1023) {
      throw Error(ErrorCode::kInvalidArgument, std::string("DT_ALLREDUCE_DEVICE must be a GPU id, not '") + device + "'");
    }
    options.device = static_cast<int>(id);
  }
  return options;
}

}  // namespace
#endif

std::string canonical_kvstore_type(const std::string& name) {
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // MXNet's own aliases, then the parts MXNet's KVStore::Create looks for.
  static const std::map<std::string, std::string> kAliases = {
      {"local", "local"},
      {"local_update_cpu", "local"},
      {"local_allreduce_cpu", "local"},
      {"device", "device"},
      {"local_allreduce_device", "device"},
      {"nccl", "nccl"},
      {"dist", "dist_sync"},
      {"dist_sync", "dist_sync"},
      {"dist_async", "dist_async"},
      {"dist_sync_device", "dist_sync_device"},
      {"dist_device_sync", "dist_sync_device"},
      {"dist_async_device", "dist_async_device"},
      {"dist_device_async", "dist_async_device"},
      {"dist_device", "dist_sync_device"},
      {"dist_nccl", "dist_nccl"},
      // Workers only, all-reducing among themselves: MXNet's "horovod"
      // store has that shape.
      {"allreduce", "allreduce"},
      {"horovod", "allreduce"},
  };
  auto it = kAliases.find(lower);
  if (it != kAliases.end()) return it->second;
  std::string known;
  for (const auto& [alias, type] : kAliases) known += (known.empty() ? "" : ", ") + alias;
  throw Error(ErrorCode::kInvalidArgument, "unknown kvstore type '" + name + "'; known (case-insensitive): " + known);
}

std::unique_ptr<KVStore> create_kvstore(const std::string& name, const ps::PsOptions& options,
                                        const ps::JobOverrides& layout) {
  const std::string type = canonical_kvstore_type(name);
  const bool on_device = type == "dist_sync_device" || type == "dist_async_device";
  if (type == "dist_sync" || type == "dist_async" || on_device) {
    // The GPU first: a worker without one must fail before the job counts on it.
    std::unique_ptr<WorkerMerge> merge;
    if (on_device) {
      merge = WorkerMerge::on_device(gpu_for_kvstore(type, 0, type.substr(0, type.rfind('_'))), options.reduction());
    }
    options.validate();
    const char* transport = core::read_parameter("DT_PS_DATA_TRANSPORT");
    return std::make_unique<DistKVStore>(type, ps::job_config_from_env(layout), options,
                                         ps::data_transport_from_name(transport ? transport : "auto"), 0,
                                         std::move(merge));
  }
  if (type == "allreduce") {
    options.validate();
    // The store's own variables first: a bad one is named before the job's.
    HostAllreduceOptions allreduce = host_allreduce_options_from_env();
    return std::make_unique<HostAllreduceKVStore>(ps::job_config_from_env(layout), options, allreduce);
  }
  if (type == "dist_nccl") {
    if (options.worker_loss == ps::WorkerLossPolicy::kContinue) {
      // NCCL's communicator would have to be rebuilt over the survivors
      // (ncclCommAbort, a new unique id, ncclCommInitRank) and the
      // interrupted collective settled as the host store does: not built.
      throw Error(ErrorCode::kNotSupported,
                  "kvstore 'dist_nccl' does not go on after a worker loss (DT_WORKER_LOSS=continue): its NCCL ring is "
                  "not rebuilt over the workers that remain (not built); use 'allreduce' (host memory), whose ring "
                  "is, or dist_sync");
    }
#if DT_WITH_NCCL
    // Fails without a GPU; with one, the store makes a context only on the GPU it uses.
    if (core::gpu_count() == 0) gpu_for_kvstore(type, 0, "dist_sync");
    options.validate();
    return std::make_unique<AllreduceKVStore>(ps::job_config_from_env(layout), options, allreduce_options_from_env());
#else
    throw Error(ErrorCode::kNotSupported, "kvstore 'dist_nccl': this build of disttrain was built without NCCL; "
                                          "use 'dist_sync' (parameter server)");
#endif
  }
  if (type == "local") return std::make_unique<LocalKVStore>(LocalKVStore::Reduce::kOnCpu, options.reduction());
  if (type == "device") return std::make_unique<LocalKVStore>(LocalKVStore::Reduce::kOnGpu);
  return std::make_unique<LocalKVStore>(LocalKVStore::Reduce::kNccl);  // "nccl"
}

}  // namespace dt::kvstore
