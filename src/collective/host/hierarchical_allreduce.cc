#include "collective/host/hierarchical_allreduce.h"

#include "collective/host/ring_allreduce.h"
#include "core/timeline/timeline.h"

namespace dt::collective::host {

namespace {

// The streams to a group's members, in the group's order.
Links group_links(const Links& links, const std::vector<int>& members) {
  Links out;
  out.reserve(members.size());
  for (int r : members) out.push_back(links[static_cast<size_t>(r)]);
  return out;
}

}  // namespace

void all_reduce_hierarchical(const Links& links, const HostGroups& groups, const CallHeader& header, void* data,
                             size_t count, core::DType dtype, size_t chunk_elems, void* scratch) {
  const Links local = group_links(links, groups.local);
  const Links cross = group_links(links, groups.cross);
  const int local_size = static_cast<int>(groups.local.size());
  {
    const core::timeline::Span span("collective", "hierarchical: within the host", {"phase", 1});
    ring_reduce_scatter(local, groups.local_index, header, data, count, dtype, chunk_elems, scratch);
  }
  {
    const core::timeline::Span span("collective", "hierarchical: between hosts", {"phase", 2});
    const RingSegment mine = ring_segment(count, local_size, (groups.local_index + 1) % local_size);
    auto* segment = static_cast<uint8_t*>(data) + mine.begin * core::dtype_size(dtype);
    all_reduce_ring(cross, groups.host_index, header, segment, mine.end - mine.begin, dtype, chunk_elems, scratch);
  }
  const core::timeline::Span span("collective", "hierarchical: within the host", {"phase", 3});
  ring_all_gather(local, groups.local_index, data, count, dtype);
}

}  // namespace dt::collective::host
