#include "kvstore/dist_kvstore.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "ops/tensor_math.h"
#include "ps/data_codec.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;
using core::NDArray;
using ps::wire::DataOp;

namespace {

// Tensor bytes per message: big enough to amortise the per-message cost,
// small enough that parts pipeline and no buffer hits glibc's mmap path.
constexpr size_t kBatchBytes = ps::KeyPlacement::kDefaultPartBytes;

void check_lengths(size_t keys, size_t values, const char* op, const char* what) {
  if (keys != values) {
    throw Error(ErrorCode::kInvalidArgument, std::string(op) + ": " + std::to_string(keys) + " keys but " +
                                                 std::to_string(values) + " " + what);
  }
}

ps::JobConfig worker_job(const ps::JobConfig& job) {
  if (job.role != ps::Role::kWorker) {
    throw Error(ErrorCode::kInvalidArgument, std::string("a dist kvstore is created by workers; this process is a ") +
                                                 ps::role_name(job.role) + " (DMLC_ROLE): run it with dt_node_run");
  }
  return job;
}

}  // namespace

DistKVStore::DistKVStore(const std::string& type, const ps::JobConfig& job, const ps::PsOptions& options,
                         ps::DataTransport transport)
    : sync_(type == "dist_sync"),
      options_(options),
      cpu_(core::make_cpu_context()),
      member_(std::make_unique<ps::ClusterMember>(worker_job(job), options)),
      client_(std::make_unique<ps::WorkerClient>(member_->table(), job.node_host, transport, options)),
      placement_(member_->table().num_servers, options.bigarray_bound_bytes) {
  if (type != "dist_sync" && type != "dist_async") {
    throw Error(ErrorCode::kInvalidArgument, "DistKVStore serves dist_sync and dist_async, not '" + type + "'");
  }
  ps::WorkerClient* client = client_.get();
  member_->on_lost([client](const ps::LostNode& lost) { client->fail(Error(ErrorCode::kPeerLost, lost.message())); });
}

DistKVStore::~DistKVStore() {
  // The member skips its goodbye to the scheduler once any peer is known
  // lost (the job is over); a failure only the data path saw counts too.
  bool failed = false;
  try {
    client_->check();
  } catch (const Error&) {
    failed = true;
  }
  client_.reset();
  if (!failed) member_->shutdown();
}

int DistKVStore::rank() const { return member_->rank(); }
int DistKVStore::num_workers() const { return member_->table().num_workers; }

DistKVStore::KeyMeta& DistKVStore::meta(Key key, const char* op) {
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    throw Error(ErrorCode::kNotFound, std::string(op) + ": key " + std::to_string(key) + " has not been initialised");
  }
  return it->second;
}

void DistKVStore::check_value(Key key, const KeyMeta& m, const NDArray& value, const char* op) const {
  if (!value.defined()) {
    throw Error(ErrorCode::kInvalidArgument, std::string(op) + ": an array for key " + std::to_string(key) + " is empty");
  }
  if (value.dtype() != m.dtype) {
    throw Error(ErrorCode::kDtypeMismatch, std::string(op) + ": key " + std::to_string(key) + " holds " +
                                               core::dtype_name(m.dtype) + ", got " + core::dtype_name(value.dtype()));
  }
  if (value.shape() != m.shape) {
    throw Error(ErrorCode::kShapeMismatch, std::string(op) + ": key " + std::to_string(key) + " was initialised as " +
                                               m.shape.to_string() + ", got " + value.shape().to_string());
  }
}

void DistKVStore::run(DataOp op, const std::vector<Item>& items, const std::string& text) {
  // Per server, consecutive items fill batches of about kBatchBytes.
  const int servers = client_->num_servers();
  std::vector<std::vector<std::vector<size_t>>> batches(static_cast<size_t>(servers));
  std::vector<size_t> open_bytes(static_cast<size_t>(servers), 0);
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& item = items[i];
    auto& list = batches[static_cast<size_t>(item.part.server)];
    const size_t bytes = static_cast<size_t>(item.part.end - item.part.begin) * core::dtype_size(item.meta->dtype);
    size_t& open = open_bytes[static_cast<size_t>(item.part.server)];
    if (list.empty() || (open > 0 && open + bytes > kBatchBytes)) {
      list.emplace_back();
      open = 0;
    }
    list.back().push_back(i);
    open += bytes;
  }
  // Sent round-robin across servers so every server has work at once.
  std::vector<const std::vector<size_t>*> sent;
  ps::WorkerClient::Exchange exchange(*client_, [&](size_t index, const ps::Frame& reply) {
    const std::vector<size_t>& batch = *sent.at(index);
    const auto& data = reply.expect<ps::wire::DataReply>();
    const auto* slices = data.slices();
    const bool pulls = op == DataOp::Pull || op == DataOp::PushPull;
    if (!pulls) return;
    if (slices == nullptr || slices->size() != batch.size()) {
      throw Error(ErrorCode::kProtocol, "a server answered " + std::to_string(slices ? slices->size() : 0) +
                                            " slices to a pull of " + std::to_string(batch.size()));
    }
    for (size_t j = 0; j < batch.size(); ++j) {
      const Item& item = items[batch[j]];
      const ps::DecodedSlice s = ps::decode_slice(reply, slices->Get(static_cast<flatbuffers::uoffset_t>(j)));
      if (s.info.part.key != item.key || s.info.part.begin != item.part.begin || s.info.part.end != item.part.end ||
          s.data == nullptr) {
        throw Error(ErrorCode::kProtocol, "a server answered a pull of key " + std::to_string(item.key) +
                                              " with another part");
      }
      std::memcpy(item.dst + static_cast<size_t>(item.part.begin) * core::dtype_size(item.meta->dtype), s.data,
                  s.data_bytes);
    }
  });
  const int rank = member_->rank();
  std::vector<size_t> next(static_cast<size_t>(servers), 0);
  size_t total = 0;
  for (const auto& list : batches) total += list.size();
  sent.reserve(total);
  while (sent.size() < total) {
    for (int s = 0; s < servers; ++s) {
      auto& list = batches[static_cast<size_t>(s)];
      if (next[static_cast<size_t>(s)] >= list.size()) continue;
      const std::vector<size_t>& batch = list[next[static_cast<size_t>(s)]++];
      std::vector<ps::SliceSpec> specs;
      specs.reserve(batch.size());
      for (size_t i : batch) {
        const Item& item = items[i];
        ps::PartInfo info{ps::PartKey{item.key, item.part.begin, item.part.end}, item.meta->dtype, item.meta->shape};
        specs.push_back(ps::SliceSpec{info, item.round, item.src ? ps::part_bytes(info) : 0});
      }
      ps::EncodedData encoded = ps::encode_data_request(op, rank, specs, text);
      for (size_t j = 0; j < batch.size(); ++j) {
        const Item& item = items[batch[j]];
        if (item.src == nullptr) continue;
        std::memcpy(encoded.slice_data[j],
                    item.src + static_cast<size_t>(item.part.begin) * core::dtype_size(item.meta->dtype),
                    specs[j].data_bytes);
      }
      sent.push_back(&batch);
      exchange.send(s, std::move(encoded.message));
    }
  }
  exchange.wait();
}

void DistKVStore::broadcast_command(DataOp op, const std::string& text, double number) const {
  client_->check();
  ps::WorkerClient::Exchange exchange(*client_, [](size_t, const ps::Frame&) {});
  for (int s = 0; s < client_->num_servers(); ++s) {
    exchange.send(s, ps::encode_data_request(op, member_->rank(), {}, text, number).message);
  }
  exchange.wait();
}

void DistKVStore::init(const std::vector<Key>& keys, const std::vector<NDArray>& values) {
  check_lengths(keys.size(), values.size(), "init", "values");
  std::lock_guard<std::mutex> lock(mutex_);
  client_->check();
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys_.count(keys[i]) > 0) {
      throw Error(ErrorCode::kBadState, "init: key " + std::to_string(keys[i]) + " is already initialised");
    }
    if (!values[i].defined()) throw Error(ErrorCode::kInvalidArgument, "init: value " + std::to_string(i) + " is empty");
    if (values[i].size() == 0) {
      throw Error(ErrorCode::kInvalidArgument, "init: key " + std::to_string(keys[i]) + " has no elements");
    }
    for (size_t j = 0; j < i; ++j) {
      if (keys[j] == keys[i]) throw Error(ErrorCode::kInvalidArgument, "init: key " + std::to_string(keys[i]) + " repeats");
    }
  }
  std::vector<Item> items;
  for (size_t i = 0; i < keys.size(); ++i) {
    KeyMeta m{values[i].dtype(), values[i].shape(), {}, 0, NDArray::empty(cpu_, values[i].dtype(), values[i].shape())};
    m.parts = placement_.place(keys[i], static_cast<int64_t>(values[i].size()), core::dtype_size(values[i].dtype()));
    m.staging.copy_from(values[i]);
    KeyMeta& stored = keys_.emplace(keys[i], std::move(m)).first->second;
    for (const ps::PartRange& part : stored.parts) {
      items.push_back(Item{&stored, keys[i], part, -1, static_cast<const uint8_t*>(stored.staging.data()), nullptr});
    }
  }
  run(DataOp::Init, items, type());
}

const uint8_t* DistKVStore::push_source(KeyMeta& m, const std::vector<NDArray>& values,
                                        const std::vector<size_t>& positions) {
  const NDArray& first = values[positions.front()];
  if (positions.size() == 1 && first.context()->is_cpu()) return static_cast<const uint8_t*>(first.data());
  m.staging.copy_from(first);
  // The local kvstore's order: copy the first value, add the others in turn.
  NDArray scratch;
  for (size_t k = 1; k < positions.size(); ++k) {
    const NDArray& value = values[positions[k]];
    if (value.context()->is_cpu()) {
      ops::add(m.staging, m.staging, value);
      continue;
    }
    if (!scratch.defined()) scratch = NDArray::empty(cpu_, m.dtype, m.shape);
    scratch.copy_from(value);
    ops::add(m.staging, m.staging, scratch);
  }
  return static_cast<const uint8_t*>(m.staging.data());
}

void DistKVStore::send_values(const std::vector<Key>& keys, const std::vector<NDArray>& values,
                              const std::vector<NDArray>* outs, DataOp op) {
  client_->check();
  const auto groups = group_keys(keys);
  for (const KeyGroup& group : groups) {
    const KeyMeta& m = meta(group.key, op == DataOp::Pull ? "pull" : "push");
    for (size_t pos : group.positions) {
      if (op != DataOp::Pull) check_value(group.key, m, values[pos], "push");
      if (outs) check_value(group.key, m, (*outs)[pos], "pull");
    }
  }
  std::vector<Item> items;
  std::vector<std::pair<const KeyGroup*, uint8_t*>> pulled;
  for (const KeyGroup& group : groups) {
    KeyMeta& m = keys_.at(group.key);
    const uint8_t* src = nullptr;
    if (op != DataOp::Pull) {
      src = push_source(m, values, group.positions);
      if (sync_) ++m.pushes;
    }
    uint8_t* dst = nullptr;
    if (outs) {
      const NDArray& out = (*outs)[group.positions.front()];
      // dst may alias src (the trainer pushpulls gradients in place): each
      // part is encoded before its request leaves and written back only by
      // its own reply, and parts do not overlap.
      dst = static_cast<uint8_t*>(out.context()->is_cpu() ? out.data() : m.staging.data());
      pulled.emplace_back(&group, dst);
    }
    for (const ps::PartRange& part : m.parts) items.push_back(Item{&m, group.key, part, sync_ ? m.pushes : -1, src, dst});
  }
  run(op, items);
  if (!outs) return;
  for (const auto& [group, dst] : pulled) {
    const KeyMeta& m = keys_.at(group->key);
    const NDArray& first = (*outs)[group->positions.front()];
    if (dst == m.staging.data()) first.copy_from(m.staging);
    for (size_t k = 1; k < group->positions.size(); ++k) (*outs)[group->positions[k]].copy_from(first);
  }
}

void DistKVStore::push(const std::vector<Key>& keys, const std::vector<NDArray>& values, int) {
  check_lengths(keys.size(), values.size(), "push", "values");
  std::lock_guard<std::mutex> lock(mutex_);
  send_values(keys, values, nullptr, DataOp::Push);
}

void DistKVStore::pull(const std::vector<Key>& keys, const std::vector<NDArray>& outs, int) {
  check_lengths(keys.size(), outs.size(), "pull", "outputs");
  std::lock_guard<std::mutex> lock(mutex_);
  send_values(keys, {}, &outs, DataOp::Pull);
}

void DistKVStore::pushpull(const std::vector<Key>& keys, const std::vector<NDArray>& values,
                           const std::vector<NDArray>& outs, int) {
  check_lengths(keys.size(), values.size(), "pushpull", "values");
  check_lengths(keys.size(), outs.size(), "pushpull", "outputs");
  std::lock_guard<std::mutex> lock(mutex_);
  send_values(keys, values, &outs, DataOp::PushPull);
}

void DistKVStore::set_optimizer(const optim::OptimizerConfig& config) {
  config.validate();
  std::lock_guard<std::mutex> lock(mutex_);
  broadcast_command(DataOp::SetOptimizer, config.to_json(), 0);
  has_optimizer_ = true;
}

bool DistKVStore::has_optimizer() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return has_optimizer_;
}

void DistKVStore::set_learning_rate(double lr) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!has_optimizer_) throw Error(ErrorCode::kBadState, "set_learning_rate: the kvstore has no optimizer");
  broadcast_command(DataOp::SetLearningRate, {}, lr);
}

void DistKVStore::set_rescale_grad(double rescale) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!has_optimizer_) throw Error(ErrorCode::kBadState, "set_rescale_grad: the kvstore has no optimizer");
  broadcast_command(DataOp::SetRescaleGrad, {}, rescale);
}

void DistKVStore::barrier() {
  client_->check();
  member_->barrier();
}

core::NamedArrays DistKVStore::optimizer_state(const std::string& prefix) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!has_optimizer_) return {};
  client_->check();
  // Per server, the names and copies of its arrays ("<key>/<begin>/<end>.<slot>").
  std::vector<std::vector<std::pair<std::string, NDArray>>> replies(static_cast<size_t>(client_->num_servers()));
  {
    ps::WorkerClient::Exchange exchange(*client_, [&](size_t index, const ps::Frame& reply) {
      const auto& data = reply.expect<ps::wire::DataReply>();
      const std::string names = data.message() ? data.message()->str() : "";
      const size_t count = data.slices() ? data.slices()->size() : 0;
      size_t start = 0;
      for (size_t i = 0; i < count; ++i) {
        const size_t end = std::min(names.find('\n', start), names.size());
        const ps::DecodedSlice s = ps::decode_slice(reply, data.slices()->Get(static_cast<flatbuffers::uoffset_t>(i)));
        NDArray copy = NDArray::empty(cpu_, s.info.dtype, s.info.shape);
        copy.copy_from_host(s.data, s.data_bytes);
        replies[index].emplace_back(names.substr(start, end - start), copy);
        start = end + 1;
      }
    });
    for (int s = 0; s < client_->num_servers(); ++s) {
      exchange.send(s, ps::encode_data_request(DataOp::GetOptimizerState, member_->rank(), {}).message);
    }
    exchange.wait();
  }
  // Reassemble each key's slots from its parts, in ascending key order.
  int64_t num_update = 0;
  NDArray learning_rate;
  std::map<Key, std::map<std::string, NDArray>> per_key;
  for (const auto& list : replies) {
    for (const auto& [name, array] : list) {
      if (name == "num_update") {
        int64_t n = 0;
        array.copy_to_host(&n, sizeof(n));
        num_update = std::max(num_update, n);
        continue;
      }
      if (name == "learning_rate") {
        learning_rate = array;
        continue;
      }
      const size_t slash1 = name.find('/'), slash2 = name.find('/', slash1 + 1), dot = name.find('.');
      if (slash1 == std::string::npos || slash2 == std::string::npos || dot == std::string::npos) {
        throw Error(ErrorCode::kProtocol, "a server reported optimizer state '" + name + "'");
      }
      const Key key = std::stoull(name.substr(0, slash1));
      const int64_t begin = std::stoll(name.substr(slash1 + 1, slash2 - slash1 - 1));
      const std::string slot = name.substr(dot + 1);
      const KeyMeta& m = keys_.at(key);
      NDArray& full = per_key[key][slot];
      if (slot == "step") {
        full = array;
        continue;
      }
      if (!full.defined()) full = NDArray::empty(cpu_, array.dtype(), m.shape);
      const size_t element = core::dtype_size(array.dtype());
      std::memcpy(static_cast<uint8_t*>(full.data()) + static_cast<size_t>(begin) * element, array.data(),
                  array.nbytes());
    }
  }
  core::NamedArrays out;
  NDArray n = NDArray::empty(cpu_, core::DType::kInt64, core::Shape());
  n.copy_from_host(&num_update, sizeof(num_update));
  out.emplace_back(prefix + "num_update", n);
  if (learning_rate.defined()) out.emplace_back(prefix + "learning_rate", learning_rate);
  for (const auto& [key, slots] : per_key) {
    for (const auto& [slot, array] : slots) out.emplace_back(prefix + std::to_string(key) + "." + slot, array);
  }
  return out;
}

void DistKVStore::load_optimizer_state(const core::NamedArrays&, const std::string&) {
  throw Error(ErrorCode::kNotSupported,
              "load_optimizer_state is not supported by dist kvstores in this version: resume with "
              "update_on_kvstore = 0 (the workers then hold the optimizer state)");
}

}  // namespace dt::kvstore
