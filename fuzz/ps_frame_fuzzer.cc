// Parameter-server messages as they arrive from a peer: Frame::parse (framing,
// file identifier, version, the FlatBuffers Verifier), then everything the
// scheduler, servers and workers read from a verified frame: node tables,
// lost nodes, error replies, data slices (decode_slice and the payload bytes
// they address) and expect<T>'s answers.
#include <cstring>

#include "core/error.h"
#include "fuzz_support.h"
#include "ps/roles/node_table.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/frame.h"

namespace {

using dt::core::Error;
using dt::fuzz::require;
namespace wire = dt::ps::wire;

template <typename F>
void rejected_ok(F&& read) {
  try {
    read();
  } catch (const Error&) {
  }
}

void touch_string(const flatbuffers::String* s) {
  if (s != nullptr) (void)s->str();
}

void touch_strings(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v) {
  if (v != nullptr) {
    for (const auto* s : *v) touch_string(s);
  }
}

void touch_bytes(const flatbuffers::Vector<uint8_t>* v) {
  if (v == nullptr) return;
  volatile uint8_t sum = 0;
  for (uint8_t b : *v) sum = static_cast<uint8_t>(sum + b);
}

void touch_slices(const dt::ps::Frame& frame,
                  const flatbuffers::Vector<flatbuffers::Offset<wire::TensorSlice>>* slices) {
  if (slices == nullptr) return;
  for (const auto* slice : *slices) {
    rejected_ok([&] {
      const dt::ps::DecodedSlice s = dt::ps::decode_slice(frame, slice);
      require(s.info.part.begin >= 0 && s.info.part.begin < s.info.part.end &&
                  s.info.part.end <= s.info.shape.numel(),
              "decode_slice accepted a part outside its tensor");
      if (s.data_bytes != 0) {
        require(s.data >= frame.payload() && s.data + s.data_bytes <= frame.payload() + frame.payload_size(),
                "decode_slice accepted data outside the payload");
        require(s.encoding != 0 || s.data_bytes == dt::ps::part_bytes(s.info),
                "decode_slice accepted raw data of the wrong size");
        volatile uint8_t sum = 0;
        for (size_t i = 0; i < s.data_bytes; ++i) sum = static_cast<uint8_t>(sum + s.data[i]);
      }
    });
  }
}

void touch(const dt::ps::Frame& f) {
  if (const auto* r = f.body<wire::Register>()) {
    touch_string(r->host());
    touch_strings(r->data_urls());
  } else if (const auto* t = f.body<wire::NodeTable>()) {
    rejected_ok([&] {
      const dt::ps::NodeTable table = dt::ps::read_node_table(*t);
      (void)dt::ps::node_table_lines(table);
    });
  } else if (const auto* b = f.body<wire::Barrier>()) {
    touch_bytes(b->data());
  } else if (const auto* g = f.body<wire::Regroup>()) {
    touch_bytes(g->data());
  } else if (const auto* a = f.body<wire::Admission>()) {
    touch_bytes(a->data());
  } else if (const auto* h = f.body<wire::HeartbeatReply>()) {
    if (h->lost() != nullptr) {
      for (const auto* l : *h->lost()) {
        rejected_ok([&] { (void)dt::ps::read_lost_node(*l).message(); });
      }
    }
  } else if (const auto* a = f.body<wire::Ack>()) {
    if (a->gathered() != nullptr) {
      for (const auto* g : *a->gathered()) touch_bytes(g->data());
    }
  } else if (const auto* e = f.body<wire::ErrorReply>()) {
    (void)dt::ps::error_from_reply(*e).what();
  } else if (const auto* d = f.body<wire::DataRequest>()) {
    touch_string(d->text());
    touch_slices(f, d->slices());
  } else if (const auto* d = f.body<wire::DataReply>()) {
    touch_string(d->message());
    touch_slices(f, d->slices());
  } else if (const auto* o = f.body<wire::OptimizerState>()) {
    touch_strings(o->names());
    touch_slices(f, o->arrays());
  } else if (const auto* p = f.body<wire::PartState>()) {
    if (p->part() != nullptr) {
      rejected_ok([&] { (void)dt::ps::decode_slice(f, p->part()); });
    }
  } else if (const auto* p = f.body<wire::PartStateReply>()) {
    touch_strings(p->optimizer_names());
    touch_slices(f, p->optimizer_arrays());
    for (const auto* s : {p->value(), p->pull_residual(), p->pull_encoding()}) {
      if (s != nullptr) rejected_ok([&] { (void)dt::ps::decode_slice(f, s); });
    }
  } else if (const auto* j = f.body<wire::Join>()) {
    // Each field read; combined as unsigned bits, since any value may come.
    volatile uint64_t bits = static_cast<uint64_t>(j->worker_rank()) ^ static_cast<uint64_t>(j->round()) ^
                             static_cast<uint64_t>(j->pid()) ^ (j->question() ? 1u : 0u);
    (void)bits;
  } else if (const auto* q = f.body<wire::ServerSettings>()) {
    volatile int rank = q->server_rank();
    (void)rank;
  } else if (const auto* r = f.body<wire::ServerSettingsReply>()) {
    // Read as ps/server/job_settings.cc does (a server-side file this
    // fuzzer's parsers leave out): every field, a null entry possible.
    touch_string(r->optimizer());
    touch_string(r->compression());
    volatile double numbers = r->learning_rate().value_or(0) + r->rescale_grad().value_or(0);
    (void)numbers;
    if (r->joined() != nullptr) {
      for (const auto* w : *r->joined()) {
        if (w == nullptr) continue;
        volatile uint64_t bits = static_cast<uint64_t>(w->rank()) ^ static_cast<uint64_t>(w->pid());
        (void)bits;
      }
    }
  }
  // What a worker waiting for a reply does: an ErrorReply becomes its error.
  rejected_ok([&] { (void)f.expect<wire::DataReply>(); });
  (void)dt::ps::body_name(f.type());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dt::ps::Message msg;
  if (size > 0) std::memcpy(msg.grow(size), data, size);
  try {
    touch(dt::ps::Frame::parse(std::move(msg)));
  } catch (const Error&) {
  }
  return 0;
}
