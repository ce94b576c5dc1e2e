// Which KVStore a type name makes, and the environment that tunes it: the
// one place that knows every store type, so that kvstore.h (the interface
// trainers see) depends on nothing of the parameter server.
//  - "local", "device", "nccl": in-process stores (see LocalKVStore).
//  - "dist_sync", "dist_async", "dist_sync_device", "dist_async_device":
//    parameter server (see DistKVStore). They join the job described by the
//    DMLC_* environment; DT_PS_DATA_TRANSPORT = auto|tcp|ipc picks the
//    workers' data connections.
//  - "dist_nccl": all-reduce across the workers of a job (see
//    AllreduceKVStore); DT_ALLREDUCE_DTYPE = float32|float16 is the
//    all-reduce dtype of float32 keys, DT_ALLREDUCE_DEVICE the GPU.
// An unknown type is Error(kInvalidArgument) listing the known ones; a known
// but unbuilt one Error(kNotSupported), and a GPU type without a GPU
// Error(kNoDevice), each naming the type to use instead. A GPU type checks
// for its GPU before reading the job layout, so a worker without one fails
// before the job counts on it.
#pragma once

#include <memory>
#include <string>

#include "kvstore/kvstore.h"
#include "ps/job/job_config.h"

namespace dt::kvstore {

// The type a name stands for, with MXNet's names and case-insensitive as
// mx.kv.create: "dist" is dist_sync, "dist_device_sync" dist_sync_device,
// "local_allreduce_device" device, "local_update_cpu" local, ... An unknown
// name is Error(kInvalidArgument) listing every known one.
std::string canonical_kvstore_type(const std::string& name);

// name: any name canonical_kvstore_type knows; the store's type() is the
// canonical one. options: the parameter server's deadlines and bounds,
// validated by the distributed types and ignored by the others. layout:
// explicit job layout fields, each winning over the environment.
std::unique_ptr<KVStore> create_kvstore(const std::string& name, const ps::PsOptions& options = {},
                                        const ps::JobOverrides& layout = {});

}  // namespace dt::kvstore
