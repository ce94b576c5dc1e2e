// The worker processes of the worker-loss job (worker_loss_test.cc): C++
// workers of dist_sync, dist_async and allreduce jobs that leave, stall or
// rejoin, and the same through the C API (kvstore and trainer).
#include "worker_loss_job.h"

namespace dt::ps::worker_loss_test {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? -1 : std::atoi(v);
}

int joining_job_worker(kvstore::KVStore& kv) {
  const int rank = kv.rank();
  const bool joiner = kv.elastic()->joined_running_job();
  test::RankSumKeys k = test::init_rank_sum_keys(kv, kSizes, kInit);
  // The job's optimizer is the servers': a joined worker's own, here one
  // that differs, is not sent (the weights below stay those of rate 1).
  if (joiner) kv.set_optimizer(optim::OptimizerConfig("sgd").set("learning_rate", 5.0));
  const int first = joiner ? static_cast<int>(kv.elastic()->rounds_before_joining()) + 1 : 1;
  if (joiner) std::cout << "joined before round " << first << std::endl;
  for (int round = first; round <= kJoinRounds; ++round) {
    kv.pushpull(k.keys, k.values, k.outs, 0);
    if (rank == 2 && !joiner && round == kLeaverRounds) {
      std::cout << "leaving" << std::endl;
      _exit(0);
    }
    std::this_thread::sleep_for(rank == 2 ? 0ms : 50ms);
  }
  return test::finish_rank_sum_worker(kv, k);
}

// A worker's state to hand a joined one: the next round, then every weight.
std::vector<uint8_t> encode_state(int round, const std::vector<std::vector<float>>& weights) {
  std::vector<uint8_t> bytes(sizeof(round));
  std::memcpy(bytes.data(), &round, sizeof(round));
  for (const auto& w : weights) {
    const auto* b = reinterpret_cast<const uint8_t*>(w.data());
    bytes.insert(bytes.end(), b, b + w.size() * sizeof(float));
  }
  return bytes;
}

int decode_state(const std::vector<uint8_t>& bytes, std::vector<std::vector<float>>& weights) {
  size_t expected = sizeof(int);
  for (const auto& w : weights) expected += w.size() * sizeof(float);
  if (bytes.size() != expected) {
    throw Error(core::ErrorCode::kProtocol, "handed " + std::to_string(bytes.size()) + " bytes, expected " +
                                                std::to_string(expected));
  }
  int round = 0;
  std::memcpy(&round, bytes.data(), sizeof(round));
  size_t at = sizeof(round);
  for (auto& w : weights) {
    std::memcpy(w.data(), bytes.data() + at, w.size() * sizeof(float));
    at += w.size() * sizeof(float);
  }
  return round;
}

int allreduce_worker(kvstore::KVStore& kv, const std::string& leave) {
  const int rank = kv.rank();
  const bool joiner = kv.elastic()->joined_running_job();
  auto cpu = core::make_cpu_context();
  std::vector<uint64_t> keys;
  std::vector<core::NDArray> values, outs;
  std::vector<std::vector<float>> weights;
  for (size_t i = 0; i < kAllreduceSizes.size(); ++i) {
    keys.push_back(i);
    const core::Shape shape({kAllreduceSizes[i]});
    values.push_back(core::NDArray::empty(cpu, core::DType::kFloat32, shape));
    float* x = values.back().data_as<float>();
    for (int64_t j = 0; j < kAllreduceSizes[i]; ++j) x[j] = static_cast<float>(rank + 1);
    outs.push_back(core::NDArray::zeros(cpu, core::DType::kFloat32, shape));
    weights.emplace_back(static_cast<size_t>(kAllreduceSizes[i]), kInit);
  }
  kv.init(keys, outs);
  // The kill's moment is drawn from here: a worker killed before it
  // registered would leave the job waiting for it at start-up.
  if (rank == 2 && leave == "kill") std::cout << "training" << std::endl;
  const int rounds = leave == "kill" ? kKillRounds : leave == "rejoin" ? kJoinRounds : kRounds;
  // rejoin: the workers in the job let a joined worker in before a round
  // and hand it the weights and the round; it runs the rounds from there.
  int first = 1;
  if (joiner) {
    first = decode_state(kv.elastic()->hand_over_state({}), weights);
    std::cout << "joined before round " << first << std::endl;
  }
  for (int round = first; round <= rounds; ++round) {
    if (round > first || !joiner) {
      if (kv.elastic()->admit_joining_workers()) kv.elastic()->hand_over_state(encode_state(round, weights));
    }
    kv.pushpull(keys, values, outs, 0);
    for (size_t i = 0; i < keys.size(); ++i) {
      const float* sum = outs[i].data_as<float>();
      for (size_t j = 0; j < weights[i].size(); ++j) weights[i][j] -= sum[j];
    }
    if (rank == 2 && !joiner && (leave == "exit" || leave == "rejoin") && round == kLeaverRounds) {
      std::cout << "leaving" << std::endl;
      _exit(0);
    }
    if (rank == 2 && leave == "stall" && round == kLeaverRounds) {
      // The test SIGSTOPs this process now and SIGCONTs it once the others
      // are done; its next round must fail: the job went on without it.
      std::cout << "stalling" << std::endl;
      std::this_thread::sleep_for(300ms);
    }
    if (leave == "kill") std::this_thread::sleep_for(rank == 2 ? 10ms : 20ms);
    if (leave == "rejoin") std::this_thread::sleep_for(50ms);
  }
  kv.barrier();
  std::ofstream out(std::getenv("DT_TEST_OUT") + std::string(".") + std::to_string(rank));
  for (const auto& w : weights) {
    for (float x : w) out << x << "\n";
  }
  return 0;
}

// --- The same through the C API, as a program of one's own lets a joined
// worker in (DT_TEST_API=kvstore or trainer, with DT_TEST_LEAVE=rejoin).

template <typename T, void (*Free)(T*)>
struct Freed {
  void operator()(T* p) const { Free(p); }
};
using KVStoreHandle = std::unique_ptr<dt_kvstore, Freed<dt_kvstore, dt_kvstore_free>>;
using ArrayHandle = std::unique_ptr<dt_ndarray, Freed<dt_ndarray, dt_ndarray_free>>;
using ContextHandle = std::unique_ptr<dt_context, Freed<dt_context, dt_context_free>>;

ArrayHandle c_array(const dt_context* ctx, dt_dtype dtype, std::vector<int64_t> dims, const void* data, size_t bytes) {
  dt_ndarray* out = nullptr;
  must(dt_ndarray_create(&out, ctx, dtype, dims.data(), dims.size()));
  ArrayHandle array(out);
  must(dt_ndarray_copy_from_host(array.get(), data, bytes));
  return array;
}

// A worker of the "allreduce" job, as the C API starts one.
struct CApiWorker {
  KVStoreHandle kv;
  int32_t rank = 0;
  int32_t joiner = 0;  // dt_kvstore_joined_running_job
  ContextHandle cpu;
};

CApiWorker c_api_worker() {
  CApiWorker worker;
  dt_kvstore* created = nullptr;
  must(dt_kvstore_create(&created, "allreduce"));
  worker.kv.reset(created);
  int64_t rounds_before = 0;
  must(dt_kvstore_rank(&worker.rank, worker.kv.get()));
  must(dt_kvstore_joined_running_job(&worker.joiner, &rounds_before, worker.kv.get()));
  dt_context* cpu = nullptr;
  must(dt_context_create(&cpu, DT_DEVICE_CPU, 0));
  worker.cpu.reset(cpu);
  return worker;
}

// allreduce_worker's rounds, with dt_kvstore_admit_joining_workers before
// each and the state in dt_kvstore_hand_over_state's bytes.
int c_api_kvstore_worker() {
  auto [kv, rank, joiner, cpu] = c_api_worker();
  std::vector<uint64_t> keys;
  std::vector<ArrayHandle> values, outs;
  std::vector<std::vector<float>> weights;
  for (size_t i = 0; i < kAllreduceSizes.size(); ++i) {
    keys.push_back(i);
    const std::vector<float> pushed(static_cast<size_t>(kAllreduceSizes[i]), static_cast<float>(rank + 1));
    const size_t bytes = pushed.size() * sizeof(float);
    values.push_back(c_array(cpu.get(), DT_FLOAT32, {kAllreduceSizes[i]}, pushed.data(), bytes));
    const std::vector<float> zeros(pushed.size(), 0.0f);
    outs.push_back(c_array(cpu.get(), DT_FLOAT32, {kAllreduceSizes[i]}, zeros.data(), bytes));
    weights.emplace_back(pushed.size(), kInit);
  }
  std::vector<dt_ndarray*> value_list, out_list;
  for (size_t i = 0; i < keys.size(); ++i) {
    value_list.push_back(values[i].get());
    out_list.push_back(outs[i].get());
  }
  must(dt_kvstore_init(kv.get(), keys.data(), out_list.data(), keys.size()));
  int first = 1;
  if (joiner == 0) {
    // Nobody was let in: a hand-over is refused, and the store goes on.
    size_t length = 0;
    if (dt_kvstore_hand_over_state(&length, kv.get(), nullptr, 0) != DT_ERR_BAD_STATE ||
        std::string(dt_last_error()).find("let nobody in") == std::string::npos) {
      throw Error(core::ErrorCode::kInternal, std::string("a hand-over without anyone let in: ") + dt_last_error());
    }
  }
  if (joiner != 0) {
    size_t length = 0;
    must(dt_kvstore_hand_over_state(&length, kv.get(), nullptr, 0));
    std::vector<uint8_t> state(length);
    must(dt_kvstore_handed_state(reinterpret_cast<char*>(state.data()), state.size(), &length, kv.get()));
    first = decode_state(state, weights);
    std::cout << "joined before round " << first << std::endl;
  }
  for (int round = first; round <= kJoinRounds; ++round) {
    int32_t admitted = 0;
    if (round > first || joiner == 0) must(dt_kvstore_admit_joining_workers(&admitted, kv.get()));
    if (admitted != 0 && std::getenv("DT_TEST_PUSH_BEFORE_HAND_OVER") != nullptr) {
      const dt_status status =
          dt_kvstore_pushpull(kv.get(), keys.data(), value_list.data(), out_list.data(), keys.size(), 0);
      std::cout << "pushpull before the hand-over: status " << status << ": " << dt_last_error() << std::endl;
      return status == DT_ERR_BAD_STATE ? 4 : 5;
    }
    if (admitted != 0) {
      const std::vector<uint8_t> state = encode_state(round, weights);
      size_t handed = 1;
      must(dt_kvstore_hand_over_state(&handed, kv.get(), state.data(), state.size()));
      if (handed != 0) throw Error(core::ErrorCode::kInternal, "a worker that held the state was handed some");
    }
    must(dt_kvstore_pushpull(kv.get(), keys.data(), value_list.data(), out_list.data(), keys.size(), 0));
    for (size_t i = 0; i < keys.size(); ++i) {
      std::vector<float> sum(weights[i].size());
      must(dt_ndarray_copy_to_host(sum.data(), sum.size() * sizeof(float), outs[i].get()));
      for (size_t j = 0; j < sum.size(); ++j) weights[i][j] -= sum[j];
    }
    if (rank == 2 && joiner == 0 && round == kLeaverRounds) {
      std::cout << "leaving" << std::endl;
      _exit(0);
    }
    std::this_thread::sleep_for(50ms);
  }
  must(dt_kvstore_barrier(kv.get()));
  std::ofstream out(std::getenv("DT_TEST_OUT") + std::string(".") + std::to_string(rank));
  for (const auto& w : weights) {
    for (float x : w) out << x << "\n";
  }
  return 0;
}
constexpr const char* kTrainerNet =
    "{\"format\": \"disttrain.net\", \"version\": 1,"
    " \"inputs\": [{\"name\": \"data\", \"shape\": [8]}],"
    " \"layers\": ["
    "  {\"name\": \"fc1\", \"type\": \"Dense\", \"units\": 16},"
    "  {\"name\": \"act\", \"type\": \"ReLU\"},"
    "  {\"name\": \"fc2\", \"type\": \"Dense\", \"units\": 3}],"
    " \"output\": \"fc2\"}";

int c_api_trainer_worker() {
  using NetHandle = std::unique_ptr<dt_net, Freed<dt_net, dt_net_free>>;
  using OptimizerHandle = std::unique_ptr<dt_optimizer, Freed<dt_optimizer, dt_optimizer_free>>;
  using TrainerHandle = std::unique_ptr<dt_trainer, Freed<dt_trainer, dt_trainer_free>>;
  auto [kv, rank, joiner, cpu] = c_api_worker();
  dt_net* net_handle = nullptr;
  must(dt_net_create_from_json(&net_handle, cpu.get(), kTrainerNet));
  NetHandle net(net_handle);
  // A joined worker's own start differs: the hand-over must replace it.
  must(dt_net_initialize(net.get(), joiner != 0 ? 99 : 7));
  dt_optimizer* opt_handle = nullptr;
  must(dt_optimizer_create(&opt_handle, "sgd"));
  OptimizerHandle opt(opt_handle);
  must(dt_optimizer_set_double(opt.get(), "learning_rate", 0.05));
  must(dt_optimizer_set_double(opt.get(), "momentum", 0.9));
  dt_trainer* trainer_handle = nullptr;
  must(dt_trainer_create(&trainer_handle, net.get(), opt.get(), kv.get(), nullptr));
  TrainerHandle trainer(trainer_handle);
  constexpr int64_t kBatch = 4;
  for (;;) {
    int32_t admitted = 0;
    must(dt_trainer_admit_joining_workers(&admitted, trainer.get()));
    int64_t step = 0;
    must(dt_trainer_steps(&step, trainer.get()));
    if (admitted != 0 && joiner != 0) std::cout << "joined before round " << step + 1 << std::endl;
    if (step >= kTrainerSteps) break;
    std::vector<float> x(kBatch * 8);
    std::vector<int32_t> y(kBatch);
    for (int64_t i = 0; i < kBatch; ++i) {
      y[static_cast<size_t>(i)] = static_cast<int32_t>((step + i + rank) % 3);
      for (int64_t j = 0; j < 8; ++j) {
        x[static_cast<size_t>(i * 8 + j)] =
            static_cast<float>((step * 7 + i * 5 + j * 3 + rank * 11) % 13) / 6.0f - 1.0f +
            (j % 3 == y[static_cast<size_t>(i)] ? 1.0f : 0.0f);
      }
    }
    ArrayHandle data = c_array(cpu.get(), DT_FLOAT32, {kBatch, 8}, x.data(), x.size() * sizeof(float));
    ArrayHandle labels = c_array(cpu.get(), DT_INT32, {kBatch}, y.data(), y.size() * sizeof(int32_t));
    must(dt_trainer_train_batch(nullptr, nullptr, trainer.get(), data.get(), labels.get()));
    if (rank == 2 && joiner == 0 && step + 1 == kLeaverRounds) {
      std::cout << "leaving" << std::endl;
      _exit(0);
    }
    std::this_thread::sleep_for(50ms);
  }
  must(dt_kvstore_barrier(kv.get()));
  const std::string path = std::getenv("DT_TEST_OUT") + std::string(".") + std::to_string(rank);
  must(dt_trainer_save_checkpoint(trainer.get(), path.c_str()));
  return 0;
}

int worker_main() {
  try {
    const char* api = std::getenv("DT_TEST_API");
    if (api != nullptr && std::string(api) == "kvstore") return c_api_kvstore_worker();
    if (api != nullptr && std::string(api) == "trainer") return c_api_trainer_worker();
    const std::string mode = std::getenv("DT_TEST_STORE");
    auto kv = kvstore::create_kvstore(mode, ps_options_from_environment());
    const int rank = kv->rank();
    const std::string leave = std::getenv("DT_TEST_LEAVE");
    if (mode == "allreduce") return allreduce_worker(*kv, leave);
    if (leave == "rejoin") return joining_job_worker(*kv);
    test::RankSumKeys k = test::init_rank_sum_keys(*kv, kSizes, kInit);
    for (int round = 1; round <= kRounds; ++round) {
      kv->pushpull(k.keys, k.values, k.outs, 0);
      if (rank == 2 && round == kLeaverRounds) {
        if (leave == "exit") {
          std::cout << "leaving" << std::endl;
          _exit(0);  // no goodbye: the scheduler sees the connection close
        }
        std::cout << "stalling" << std::endl;
        // The test SIGSTOPs this process now and SIGCONTs it once the
        // others are done; what follows must fail: the job went on without it.
        std::this_thread::sleep_for(300ms);
      }
    }
    return test::finish_rank_sum_worker(*kv, k);
  } catch (const Error& e) {
    return test::rank_sum_worker_failed(e);
  }
}

}  // namespace dt::ps::worker_loss_test
