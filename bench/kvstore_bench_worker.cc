// kvstore_bench's worker processes (the driver re-executes itself with
// --worker or --train-worker): every worker runs the same sequence of timed
// kvstore operations, or of training steps; worker 0 prints the JSON lines.
#include "kvstore_bench_common.h"

namespace kvstore_bench {

// ---- worker side ------------------------------------------------------------

// Times op over one set of keys; every worker runs the same sequence.
void measure(dt::kvstore::KVStore& kv, const std::vector<uint64_t>& keys, const std::vector<NDArray>& grads,
             const std::vector<NDArray>& outs, size_t bytes, int servers, const std::string& transport,
             const char* set) {
  const int workers = kv.num_workers();
  const int reps = repetitions(bytes);
  for (const char* op : {"push", "pull", "pushpull"}) {
    // One untimed round first: the connections' buffers are warm.
    if (std::strcmp(op, "pull") == 0) kv.pull(keys, outs, 0);
    else kv.pushpull(keys, grads, outs, 0);
    kv.barrier();
    Timings timings;
    for (int r = 0; r < reps; ++r) {
      timings.start();
      if (std::strcmp(op, "push") == 0) {
        kv.push(keys, grads, 0);
      } else if (std::strcmp(op, "pull") == 0) {
        kv.pull(keys, outs, 0);
      } else {
        kv.pushpull(keys, grads, outs, 0);
      }
      timings.stop();
    }
    // A push returns once the servers took the bytes; the next round's
    // pushes wait on the server for the other workers, so pushes time fairly
    // only as a sequence: the closing pull waits for the last round.
    if (std::strcmp(op, "push") == 0) kv.pull(keys, outs, 0);
    if (kv.rank() == 0) print(op, bytes, servers, workers, transport, timings, set);
  }
}

int worker_main() {
  try {
    const std::string transport = std::getenv("DT_BENCH_TRANSPORT");
    const int servers = std::atoi(std::getenv("DMLC_NUM_SERVER"));
    auto kv = dt::kvstore::create_kvstore("dist_sync", dt::ps::ps_options_from_environment());
    auto cpu = dt::core::make_cpu_context();
    const size_t max_bytes = max_bytes_from_env();
    uint64_t next_key = 0;
    for (size_t bytes : kSizes) {
      if (bytes > max_bytes) continue;
      const dt::core::Shape shape({static_cast<int64_t>(bytes / 4)});
      NDArray grad = NDArray::zeros(cpu, dt::core::DType::kFloat32, shape);
      NDArray out = NDArray::zeros(cpu, dt::core::DType::kFloat32, shape);
      const uint64_t key = next_key++;
      kv->init({key}, {grad});
      measure(*kv, {key}, {grad}, {out}, bytes, servers, transport, nullptr);
    }
    if (max_bytes < kSizes[4]) {
      kv->barrier();
      return 0;
    }
    std::vector<uint64_t> keys;
    std::vector<NDArray> grads, outs;
    size_t total = 0;
    for (const auto& shape : resnet18_shapes()) {
      keys.push_back(next_key++);
      grads.push_back(NDArray::zeros(cpu, dt::core::DType::kFloat32, shape));
      outs.push_back(NDArray::zeros(cpu, dt::core::DType::kFloat32, shape));
      total += grads.back().nbytes();
    }
    kv->init(keys, grads);
    measure(*kv, keys, grads, outs, total, servers, transport, "resnet18");
    kv->barrier();
    return 0;
  } catch (const dt::core::Error& e) {
    std::fprintf(stderr, "kvstore_bench worker: %s\n", e.what());
    return 1;
  }
}

// One model's training steps; rank 0 prints the line.
int train_worker_main() {
  try {
    const std::string transport = std::getenv("DT_BENCH_TRANSPORT");
    const std::string model = std::getenv("DT_BENCH_MODEL");
    const int servers = std::atoi(std::getenv("DMLC_NUM_SERVER"));
    std::shared_ptr<dt::kvstore::KVStore> kv = dt::kvstore::create_kvstore("dist_sync", dt::ps::ps_options_from_environment());
    auto ctx = dt::core::make_cpu_context();
    ctx->set_num_threads(1);  // the cores are shared with the other worker and the servers
    auto net = std::make_shared<dt::nn::Net>(dt::nn::build_model_description_from_text(model, ""), ctx);
    net->initialize(1);
    const bool lenet = model == "lenet";
    const int64_t batch = lenet ? 64 : 4;
    const int steps = lenet ? 30 : 5;
    const auto& input = net->description().inputs.at(0).shape;
    std::vector<int64_t> dims = {batch};
    for (size_t d = 0; d < input.ndim(); ++d) dims.push_back(input[d]);
    NDArray images = NDArray::empty(ctx, dt::core::DType::kFloat32, dt::core::Shape(dims));
    NDArray labels = NDArray::empty(ctx, dt::core::DType::kInt32, dt::core::Shape({batch}));
    float* x = images.data_as<float>();
    for (size_t i = 0; i < images.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
    int32_t* y = labels.data_as<int32_t>();
    for (int64_t i = 0; i < batch; ++i) y[i] = static_cast<int32_t>(i % 10);
    dt::train::Trainer trainer(
        net, dt::optim::OptimizerConfig("sgd").set("learning_rate", 0.01).set("momentum", 0.9), kv);
    for (int i = 0; i < 2; ++i) trainer.train_batch(images, labels);  // initialisation and warm-up
    kv->barrier();
    const double compute_before = trainer.compute_seconds();
    const auto start = Clock::now();
    for (int i = 0; i < steps; ++i) trainer.train_batch(images, labels);
    const double step_s = seconds_since(start) / steps;
    const double compute_s = (trainer.compute_seconds() - compute_before) / steps;
    if (kv->rank() == 0) {
      std::printf("{\"op\":\"train_step\",\"model\":\"%s\",\"batch\":%lld,\"overlap\":%d,\"servers\":%d,"
                  "\"workers\":%d,\"transport\":\"%s\",\"update_on_kvstore\":%d,\"replication\":%d,"
                  "\"step_ms\":%.2f,\"compute_ms\":%.2f,\"exposed_comm_ms\":%.2f}\n",
                  model.c_str(), static_cast<long long>(batch), trainer.overlaps_communication() ? 1 : 0, servers,
                  kv->num_workers(), transport.c_str(), trainer.update_on_kvstore() ? 1 : 0, replication_from_env(),
                  step_s * 1e3, compute_s * 1e3, (step_s - compute_s) * 1e3);
      std::fflush(stdout);
    }
    kv->barrier();
    return 0;
  } catch (const dt::core::Error& e) {
    std::fprintf(stderr, "kvstore_bench train worker: %s\n", e.what());
    return 1;
  }
}

}  // namespace kvstore_bench
