// The request scheduler's test bench, shared by its plain-path and
// replication tests: fake servers that answer when the test says so, and a
// fixture that starts a scheduler over them.
#pragma once

#include "kvstore/request_scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "error_code_of.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/limits.h"

namespace dt::kvstore::request_scheduler_test {

using core::Error;
using core::ErrorCode;
using ps::wire::DataOp;
using test_support::code_of;

inline constexpr auto kDeadline = std::chrono::seconds(10);

// A message the scheduler sent, decoded, and how to answer it.
struct Sent {
  int server = -1;
  DataOp op = DataOp::Init;
  int worker_rank = -1;
  std::string text;
  std::vector<ps::DecodedSlice> slices;  // their data points into frame
  std::shared_ptr<ps::Frame> frame;
  std::thread::id thread;  // the thread that sent it
  ps::WorkerClient::Done done;

  std::vector<float> data(size_t slice) const {
    std::vector<float> out(slices.at(slice).data_bytes / sizeof(float));
    std::memcpy(out.data(), slices.at(slice).data, slices.at(slice).data_bytes);
    return out;
  }
  void reply(ps::Message message) {
    const ps::Frame parsed = ps::Frame::parse(std::move(message));
    done(std::nullopt, &parsed);
  }
  // Answers a push or init.
  void ack() { reply(ps::encode_data_reply({}).message); }
  // Answers a push whose slices a new copy keeps until it is filled.
  void ack_held() { reply(ps::encode_held_push_reply()); }
  // Answers a pull with one value per slice, each repeated over its part.
  void answer(const std::vector<float>& values) {
    std::vector<ps::SliceSpec> specs;
    for (const ps::DecodedSlice& s : slices) specs.push_back({s.info, s.round, ps::part_bytes(s.info)});
    ps::EncodedData encoded = ps::encode_data_reply(specs);
    for (size_t i = 0; i < specs.size(); ++i) {
      const std::vector<float> part(specs[i].data_bytes / sizeof(float), values.at(i));
      std::memcpy(encoded.slice_data[i], part.data(), specs[i].data_bytes);
    }
    reply(std::move(encoded.message));
  }
};

class FakeServers final : public RequestScheduler::Link {
 public:
  explicit FakeServers(int num_servers) : num_servers_(num_servers) {}

  int num_servers() const override { return num_servers_; }
  void send(int server, ps::Message request, ps::WorkerClient::Done done, bool /*may_resend*/) override {
    Sent sent;
    sent.server = server;
    sent.frame = std::make_shared<ps::Frame>(ps::Frame::parse(std::move(request)));
    const auto& body = sent.frame->expect<ps::wire::DataRequest>();
    sent.op = body.op();
    sent.worker_rank = body.worker_rank();
    sent.text = body.text() ? body.text()->str() : "";
    if (body.slices() != nullptr) {
      for (const auto* slice : *body.slices()) sent.slices.push_back(ps::decode_slice(*sent.frame, slice));
    }
    sent.thread = std::this_thread::get_id();
    sent.done = std::move(done);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sent_.push_back(std::move(sent));
    }
    cv_.notify_all();
  }
  std::optional<Error> failure() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }
  void fail(const Error& error) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_) failure_ = error;
  }
  void drop_server(int server) override {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped_.push_back(server);
    link_events_.push_back("drop " + std::to_string(server));
  }
  void reconnect_server(const ps::NodeInfo& server) override {
    std::lock_guard<std::mutex> lock(mutex_);
    link_events_.push_back("reconnect " + std::to_string(server.rank) + " pid " + std::to_string(server.pid));
  }
  // Drops and reconnects, in order ("drop 1", "reconnect 1 pid 42").
  std::vector<std::string> link_events() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return link_events_;
  }
  std::vector<int> dropped() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return dropped_;
  }

  // The oldest message not taken yet, waiting up to kDeadline for one.
  Sent take() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, kDeadline, [&] { return !sent_.empty(); })) {
      throw std::runtime_error("no message within the deadline");
    }
    Sent sent = std::move(sent_.front());
    sent_.pop_front();
    return sent;
  }
  size_t untaken() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return sent_.size();
  }

 private:
  const int num_servers_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Sent> sent_;
  std::optional<Error> failure_;
  std::vector<int> dropped_;
  std::vector<std::string> link_events_;
};

// A float32 key of numel elements on one server, with its own push data
// (all `value`) and pull target.
struct TestKey {
  TestKey(Key id, int64_t numel, int server, float value)
      : id(id), server(server), shape({numel}), src(static_cast<size_t>(numel), value),
        dst(static_cast<size_t>(numel), 0.0f) {}
  RequestScheduler::Part part(bool push, bool pull, int64_t round = -1) {
    return part_range(0, shape.numel(), push, pull, round);
  }
  RequestScheduler::Part part_range(int64_t begin, int64_t end, bool push, bool pull, int64_t round = -1) {
    return RequestScheduler::Part{id,
                                  core::DType::kFloat32,
                                  &shape,
                                  ps::PartRange{server, begin, end},
                                  round,
                                  push ? reinterpret_cast<const uint8_t*>(src.data()) : nullptr,
                                  pull ? reinterpret_cast<uint8_t*>(dst.data()) : nullptr};
  }

  Key id;
  int server;
  core::Shape shape;
  std::vector<float> src;
  std::vector<float> dst;
};

class RequestSchedulerTest : public ::testing::Test {
 protected:
  void start(int num_servers, bool sync, int window, int worker_rank = 0, bool replicated = false,
             std::chrono::milliseconds verdict_wait = std::chrono::seconds(10)) {
    auto servers = std::make_unique<FakeServers>(num_servers);
    servers_ = servers.get();
    scheduler_.reset();
    scheduler_ = std::make_unique<RequestScheduler>(std::move(servers), worker_rank, sync, window, replicated,
                                                    verdict_wait);
  }
  // The next n messages, ordered by (server, op): the order in which lanes
  // send is not part of the contract.
  std::vector<Sent> take_sorted(size_t n) {
    std::vector<Sent> sent;
    for (size_t i = 0; i < n; ++i) sent.push_back(servers_->take());
    std::sort(sent.begin(), sent.end(), [](const Sent& a, const Sent& b) {
      return std::make_pair(a.server, static_cast<int>(a.op)) < std::make_pair(b.server, static_cast<int>(b.op));
    });
    return sent;
  }
  std::shared_ptr<Completion> push(TestKey& key, int priority, int64_t round = -1) {
    return scheduler_->submit({{DataOp::Push, key.part(true, false, round)}}, priority, nullptr);
  }
  // Replicated, 2 servers: first_'s push, acknowledged by server 1 and
  // failed by a dropped connection to server 0, waiting for the verdict.
  std::shared_ptr<Completion> park_a_push() {
    auto done = push(first_, 0, 1);
    std::vector<Sent> sent = take_sorted(2);
    sent[1].ack();
    sent[0].done(Error(ErrorCode::kNetwork, "connection closed"), nullptr);
    EXPECT_FALSE(done->wait_for(std::chrono::milliseconds(20)));
    return done;
  }
  static std::vector<Key> keys_of(const Sent& sent) {
    std::vector<Key> keys;
    for (const ps::DecodedSlice& s : sent.slices) keys.push_back(s.info.part.key);
    return keys;
  }
  static std::optional<ErrorCode> code_after_wait(const std::shared_ptr<Completion>& request) {
    EXPECT_TRUE(request->wait_for(std::chrono::duration_cast<std::chrono::milliseconds>(kDeadline)));
    const auto error = request->error();
    return error ? std::optional<ErrorCode>(error->code()) : std::nullopt;
  }

  // One server, window 1: first_ pushed and in flight, second_ queued
  // behind it.
  struct Backlog {
    std::shared_ptr<Completion> in_flight;
    std::shared_ptr<Completion> queued;
    Sent sent;  // first_'s message
  };
  Backlog backlog() {
    start(1, false, 1);
    Backlog backlog;
    backlog.in_flight = push(first_, 0);
    backlog.queued = push(second_, 0);
    backlog.sent = servers_->take();
    return backlog;
  }

  TestKey first_{1, 4, 0, 1.0f};
  TestKey second_{2, 4, 0, 2.0f};
  FakeServers* servers_ = nullptr;  // owned by scheduler_
  std::unique_ptr<RequestScheduler> scheduler_;
};

}  // namespace dt::kvstore::request_scheduler_test
