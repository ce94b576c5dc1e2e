// Asynchronous requests: priorities, fusion, overlap of communication with
// backward, and server errors reaching the wait.
#include <gtest/gtest.h>

#include "dist_kvstore_test_util.h"

namespace dt::ps {
namespace {

using namespace dist_kvstore_test;

// The keys of a data request's slices, in message order.
std::vector<uint64_t> slice_keys(const Frame& frame) {
  std::vector<uint64_t> keys;
  const auto* data = frame.body<wire::DataRequest>();
  if (data == nullptr || data->slices() == nullptr) return keys;
  for (const auto* slice : *data->slices()) keys.push_back(slice->key());
  return keys;
}

// A scheduler and one server on threads; the server shows every request to
// observe (on a handler thread, before the real ServerRequestHandler handles it)
// and keeps serving until the job ends. observe may block to hold a request.
class ObservedJob {
 public:
  using Observe = std::function<void(const Frame&)>;
  ObservedJob(const std::string& name, int workers, Observe observe)
      : url_(inproc_url(name)), workers_(workers),
        scheduler_(inproc_job(url_, Role::kScheduler, 1, workers), fast_options()) {
    done_.push_back(std::async(std::launch::async, [this] { scheduler_.run(); }));
    done_.push_back(std::async(std::launch::async, [this, observe] {
      ServerRequestHandler server(workers_);
      RequestServer transport(
          {url_ + "-server"}, server_receivers(workers_),
          [&server, observe](Message request, RequestServer::Reply reply) {
            Message copy = request.copy();
            try {
              observe(Frame::parse(std::move(request)));
            } catch (const Error&) {
              // Malformed: the ServerRequestHandler answers it.
            }
            server.handle(std::move(copy), reply);
          },
          kDefaultMaxMessageBytes);
      ClusterMember member(inproc_job(url_, Role::kServer, 1, workers_), fast_options(), transport.bound_urls());
      member.on_lost([&server](const LostNode& lost) { server.fail(Error(ErrorCode::kPeerLost, lost.message())); });
      member.wait_for_stop();
      member.shutdown();
    }));
  }
  ~ObservedJob() {
    for (auto& f : done_) f.wait_for(20s);
  }
  std::unique_ptr<kvstore::DistKVStore> worker(const std::string& type, int rank, int window = 0) const {
    return std::make_unique<kvstore::DistKVStore>(type, inproc_job(url_, Role::kWorker, 1, workers_, rank),
                                                  fast_options(), DataTransport::kAuto, window);
  }
  void expect_clean_end() {
    for (auto& f : done_) {
      ASSERT_EQ(f.wait_for(20s), std::future_status::ready) << "a node hung";
      EXPECT_NO_THROW(f.get());
    }
    done_.clear();
  }

 private:
  std::string url_;
  int workers_;
  Scheduler scheduler_;
  std::vector<std::future<void>> done_;
};

// A dist_sync pushpull leaves as one PushPull message when nothing is queued
// for its server, otherwise as a Push and a Pull.
bool carries_gradients(wire::DataOp op) { return op == wire::DataOp::Push || op == wire::DataOp::PushPull; }

TEST(PsAsyncInproc, PushpullIsOneMessageUnlessItsServerHasAQueue) {
  std::mutex mutex;
  std::vector<std::pair<wire::DataOp, uint64_t>> arrived;  // op, first key
  std::promise<void> gate_arrived, open_gate;
  std::shared_future<void> gate = open_gate.get_future().share();
  ObservedJob job("fused-pushpull", 1, [&](const Frame& frame) {
    const auto* data = frame.body<wire::DataRequest>();
    if (data == nullptr || data->op() == wire::DataOp::Init) return;
    const auto keys = slice_keys(frame);
    {
      std::lock_guard<std::mutex> lock(mutex);
      arrived.emplace_back(data->op(), keys.front());
    }
    if (keys.front() == 100) {
      gate_arrived.set_value();
      gate.wait_for(10s);
    }
  });
  auto kv = job.worker("dist_sync", 0, /*window=*/1);
  kv->init({1, 100}, {array({0, 0}), array({0})});
  NDArray g = array({2, 3}), out = array({0, 0});
  // Nothing queued: one message, push and pull together.
  kv->pushpull({1}, {g}, {out}, 0);
  EXPECT_EQ(values(out), (std::vector<float>{2, 3}));
  // Held on the server, key 100's pushpull fills the window of one; key 1's
  // pushpull then leaves as a push (at once) and a pull (queued until the
  // window frees).
  NDArray held_out = array({0});
  auto held = kv->pushpull_async({100}, {array({1})}, {held_out}, 0);
  ASSERT_EQ(gate_arrived.get_future().wait_for(10s), std::future_status::ready);
  NDArray g2 = array({4, 5});
  out = array({0, 0});
  auto queued = kv->pushpull_async({1}, {g2}, {out}, 0);
  const auto arrivals = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return arrived.size();
  };
  for (int i = 0; i < 500 && arrivals() < 3; ++i) std::this_thread::sleep_for(10ms);  // the push
  EXPECT_FALSE(queued->done()) << "its pull cannot have left";
  open_gate.set_value();
  kv->wait_all();
  EXPECT_EQ(values(out), (std::vector<float>{4, 5}));
  EXPECT_EQ(values(held_out), (std::vector<float>{1}));
  std::lock_guard<std::mutex> lock(mutex);
  const std::vector<std::pair<wire::DataOp, uint64_t>> expected = {{wire::DataOp::PushPull, 1},
                                                                   {wire::DataOp::PushPull, 100},
                                                                   {wire::DataOp::Push, 1},
                                                                   {wire::DataOp::Pull, 1}};
  EXPECT_EQ(arrived, expected);
}

TEST(PsAsyncInproc, QueuedRequestsLeaveInPriorityOrderFused) {
  std::mutex mutex;
  std::vector<uint64_t> arrived;  // slice keys of pushes, in arrival order
  std::promise<void> gate_arrived, open_gate;
  std::shared_future<void> gate = open_gate.get_future().share();
  ObservedJob job("priority", 1, [&](const Frame& frame) {
    const auto* data = frame.body<wire::DataRequest>();
    if (data == nullptr || data->op() != wire::DataOp::Push) return;
    const auto keys = slice_keys(frame);
    {
      std::lock_guard<std::mutex> lock(mutex);
      arrived.insert(arrived.end(), keys.begin(), keys.end());
    }
    if (keys == std::vector<uint64_t>{100}) {
      // Hold the first push: with a window of one, everything after it queues.
      gate_arrived.set_value();
      gate.wait_for(10s);
    }
  });
  auto kv = job.worker("dist_async", 0, /*window=*/1);
  ASSERT_EQ(kv->max_in_flight_per_server(), 1);
  const std::vector<uint64_t> keys = {1, 2, 3, 4, 5, 6};
  const std::vector<int> priorities = {-5, 3, 0, 7, -1, 2};
  kv->init({100}, {array({0})});
  for (uint64_t key : keys) kv->init({key}, {array({0, 0})});
  auto held = kv->push_async({100}, {array({1})}, 0);
  ASSERT_EQ(gate_arrived.get_future().wait_for(10s), std::future_status::ready);
  std::vector<NDArray> grads;
  std::vector<std::shared_ptr<kvstore::Completion>> requests;
  for (size_t i = 0; i < keys.size(); ++i) {
    grads.push_back(array({float(i), 1}));
    requests.push_back(kv->push_async({keys[i]}, {grads.back()}, priorities[i]));
  }
  for (const auto& r : requests) EXPECT_FALSE(r->done()) << "sent past a full window";
  open_gate.set_value();
  kv->wait_all();
  for (const auto& r : requests) EXPECT_TRUE(r->done());
  {
    std::lock_guard<std::mutex> lock(mutex);
    // Larger priority first: 7, 3, 2, 0, -1, -5.
    EXPECT_EQ(arrived, (std::vector<uint64_t>{100, 4, 2, 6, 3, 5, 1}));
  }
  NDArray out = array({0, 0});
  kv->pull({3}, {out}, 0);
  EXPECT_EQ(values(out), (std::vector<float>{2, 1})) << "the async push was applied";
  kv.reset();
  job.expect_clean_end();
}

TEST(PsAsyncInproc, WorkersIssuingKeysInOppositeOrdersDoNotWaitForEachOther) {
  // One message in flight per lane. Each worker's first pushpull leaves as
  // one message; had the second been one message too, queued behind the
  // first, worker 0's pushpull of key 1 would wait for worker 1's push of
  // key 1, queued behind worker 1's pushpull of key 2, which waits for
  // worker 0's push of key 2, queued behind worker 0's pushpull of key 1.
  InprocJob job("opposite", 1, 2);
  auto run = [&](int rank) {
    auto kv = std::make_unique<kvstore::DistKVStore>(
        "dist_sync", inproc_job(inproc_url("opposite"), Role::kWorker, 1, 2, rank), fast_options(),
        DataTransport::kAuto, 1);
    kv->init({1, 2}, {array({0}), array({0})});
    NDArray g1 = array({float(rank + 1)}), g2 = array({float(10 * (rank + 1))});
    NDArray o1 = array({0}), o2 = array({0});
    for (int step = 0; step < 5; ++step) {
      const std::vector<uint64_t> order = rank == 0 ? std::vector<uint64_t>{1, 2} : std::vector<uint64_t>{2, 1};
      for (uint64_t key : order) {
        if (key == 1) kv->pushpull_async({1}, {g1}, {o1}, 0);
        if (key == 2) kv->pushpull_async({2}, {g2}, {o2}, 0);
      }
      kv->wait_all();
      EXPECT_EQ(values(o1), std::vector<float>{3});
      EXPECT_EQ(values(o2), std::vector<float>{30});
    }
  };
  on_two_workers(run, 30s);
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

TEST(PsAsyncInproc, TrainerSendsTheLastLayerFirstBeforeBackwardEnds) {
  using Clock = std::chrono::steady_clock;
  std::mutex mutex;
  std::vector<std::pair<Clock::time_point, uint64_t>> pushes;  // arrival, first key
  ObservedJob job("overlap", 1, [&](const Frame& frame) {
    const auto* data = frame.body<wire::DataRequest>();
    if (data == nullptr || !carries_gradients(data->op())) return;
    std::lock_guard<std::mutex> lock(mutex);
    pushes.emplace_back(Clock::now(), slice_keys(frame).front());
  });
  auto net = lenet();
  const auto layer_of = [&](size_t index) {
    const std::string& name = net->parameters()[index].name;
    return name.substr(0, name.find('.'));
  };
  const std::string last_layer = layer_of(net->parameters().size() - 1);
  // A big batch makes backward long enough to see into.
  train::TrainerOptions options;
  options.update_on_kvstore = 0;
  train::Trainer trainer(net, sgd(0.01), std::shared_ptr<kvstore::KVStore>(job.worker("dist_sync", 0)), options);
  ASSERT_TRUE(trainer.overlaps_communication());
  const auto [images, labels] = batch(0, 128);
  trainer.train_batch(images, labels);  // initialises the store, synchronously
  {
    std::lock_guard<std::mutex> lock(mutex);
    pushes.clear();
  }
  const auto before = Clock::now();
  const double compute_before = trainer.compute_seconds();
  trainer.train_batch(images, labels);
  // Forward and backward started after `before` and lasted this long.
  const auto backward_end_bound =
      before + std::chrono::duration_cast<Clock::duration>(
                   std::chrono::duration<double>(trainer.compute_seconds() - compute_before));
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_FALSE(pushes.empty());
  EXPECT_EQ(layer_of(pushes.front().second), last_layer) << "the last layer's gradients are ready first";
  EXPECT_LT(pushes.front().first, backward_end_bound)
      << "the first push reached the server "
      << std::chrono::duration<double, std::milli>(pushes.front().first - backward_end_bound).count()
      << " ms after backward ended";
}

TEST(PsAsyncInproc, WithoutOverlapNothingLeavesBeforeBackwardEnds) {
  // The control for the test above: the same measurement must fail it.
  using Clock = std::chrono::steady_clock;
  std::mutex mutex;
  std::vector<Clock::time_point> pushes;
  ObservedJob job("no-overlap", 1, [&](const Frame& frame) {
    const auto* data = frame.body<wire::DataRequest>();
    if (data == nullptr || !carries_gradients(data->op())) return;
    std::lock_guard<std::mutex> lock(mutex);
    pushes.push_back(Clock::now());
  });
  train::TrainerOptions options;
  options.update_on_kvstore = 0;
  options.overlap_communication = 0;
  train::Trainer trainer(lenet(), sgd(0.01), std::shared_ptr<kvstore::KVStore>(job.worker("dist_sync", 0)), options);
  ASSERT_FALSE(trainer.overlaps_communication());
  const auto [images, labels] = batch(0, 128);
  trainer.train_batch(images, labels);
  {
    std::lock_guard<std::mutex> lock(mutex);
    pushes.clear();
  }
  const auto before = Clock::now();
  const double compute_before = trainer.compute_seconds();
  trainer.train_batch(images, labels);
  const auto compute_end = before + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                        trainer.compute_seconds() - compute_before));
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_FALSE(pushes.empty());
  EXPECT_GT(pushes.front(), compute_end);
}

std::vector<float> overlap_weights(const std::string& name, int update_on_kvstore, int overlap) {
  train::TrainerOptions options;
  options.update_on_kvstore = update_on_kvstore;
  options.overlap_communication = overlap;
  return dist_weights(name, options);
}

TEST(PsAsyncInproc, OverlappedTrainingIsBitIdenticalToSynchronousAndToLocal) {
  const auto expected = reference_weights();
  for (int update_on_kvstore : {0, 1}) {
    SCOPED_TRACE("update_on_kvstore " + std::to_string(update_on_kvstore));
    const auto overlapped = overlap_weights("ov-" + std::to_string(update_on_kvstore), update_on_kvstore, 1);
    const auto synchronous = overlap_weights("sy-" + std::to_string(update_on_kvstore), update_on_kvstore, 0);
    ASSERT_EQ(overlapped.size(), expected.size());
    EXPECT_EQ(0, std::memcmp(overlapped.data(), synchronous.data(), expected.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(overlapped.data(), expected.data(), expected.size() * sizeof(float)));
  }
}

TEST(PsAsyncInproc, AServerErrorReachesTheWaitAndOtherwiseTheNextCall) {
  ObservedJob job("errors", 1, [](const Frame&) {});
  auto kv = job.worker("dist_async", 0);
  NDArray ints = NDArray::zeros(core::make_cpu_context(), DType::kInt32, Shape({4}));
  kv->init({1, 2}, {ints, array({0, 0})});
  // The server refuses to sum an integer key.
  auto refused = kv->push_async({1}, {ints}, 0);
  try {
    kv->wait(refused);
    ADD_FAILURE() << "the wait succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported) << e.what();
  }
  EXPECT_NO_THROW(kv->push({2}, {array({1, 1})}, 0)) << "a reported error is not reported again";
  // Nobody waits for this one: the next call reports it, once.
  auto unwaited = kv->push_async({1}, {ints}, 0);
  for (auto end = std::chrono::steady_clock::now() + 10s; !unwaited->done() && std::chrono::steady_clock::now() < end;) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(unwaited->done());
  NDArray out = array({0, 0});
  try {
    kv->pull({2}, {out}, 0);
    ADD_FAILURE() << "the earlier failure went unreported";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported) << e.what();
  }
  kv->pull({2}, {out}, 0);
  EXPECT_EQ(values(out), (std::vector<float>{1, 1}));
  kv.reset();
  job.expect_clean_end();
}

TEST(PsAsyncInproc, AServerLostMidRequestFailsTheWaitWithPeerLost) {
  const std::string url = inproc_url("server-lost");
  Scheduler scheduler(inproc_job(url, Role::kScheduler, 1, 1), fast_options());
  auto scheduler_done = std::async(std::launch::async, [&] { scheduler.run(); });
  std::promise<void> die, release, swallowed;
  std::shared_future<void> die_f = die.get_future().share(), release_f = release.get_future().share();
  std::once_flag first_swallowed;
  auto server_done = std::async(std::launch::async, [&] {
    ServerRequestHandler server(1);
    // Answers init; swallows pushes (their replies never leave), as a server
    // that hangs or dies mid-request would.
    RequestServer transport(
        {url + "-server"}, server_receivers(1),
        [&](Message request, RequestServer::Reply reply) {
          Message copy = request.copy();
          const Frame frame = Frame::parse(std::move(request));
          const auto* data = frame.body<wire::DataRequest>();
          if (data != nullptr && carries_gradients(data->op())) {
            std::call_once(first_swallowed, [&] { swallowed.set_value(); });
            return;
          }
          server.handle(std::move(copy), reply);
        },
        kDefaultMaxMessageBytes);
    auto member = std::make_unique<ClusterMember>(inproc_job(url, Role::kServer, 1, 1), fast_options(),
                                                  transport.bound_urls());
    die_f.wait_for(20s);
    member.reset();  // heartbeats stop: to the scheduler this server is dead
    release_f.wait_for(20s);
  });
  {
    auto kv = std::make_unique<kvstore::DistKVStore>("dist_sync", inproc_job(url, Role::kWorker, 1, 1, 0),
                                                     fast_options());
    kv->init({1}, {array({1, 2})});
    NDArray g = array({1, 1}), out = array({0, 0});
    auto pending = kv->pushpull_async({1}, {g}, {out}, 0);
    ASSERT_EQ(swallowed.get_future().wait_for(10s), std::future_status::ready);
    EXPECT_FALSE(pending->done());
    const auto start = std::chrono::steady_clock::now();
    die.set_value();
    try {
      kv->wait(pending);
      ADD_FAILURE() << "the wait succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
      EXPECT_NE(std::string(e.what()).find("server 0"), std::string::npos) << e.what();
    }
    // Heartbeat timeout 1 s (request timeout 10 s): the loss, not the deadline, ended it.
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s + 500ms);
    try {
      kv->push({1}, {g}, 0);
      ADD_FAILURE() << "a call after the loss succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
    }
    EXPECT_EQ(values(out), (std::vector<float>{0, 0})) << "nothing was written";
  }
  release.set_value();
  ASSERT_EQ(server_done.wait_for(20s), std::future_status::ready);
  ASSERT_EQ(scheduler_done.wait_for(20s), std::future_status::ready);
  EXPECT_THROW(scheduler_done.get(), Error);
}


}  // namespace
}  // namespace dt::ps
