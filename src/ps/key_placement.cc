#include "ps/key_placement.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

KeyPlacement::KeyPlacement(int num_servers, uint64_t bigarray_bound_bytes, size_t part_bytes)
    : bigarray_bound_bytes_(bigarray_bound_bytes), part_bytes_(part_bytes) {
  if (num_servers < 1) throw Error(ErrorCode::kInvalidArgument, "key placement needs at least one server");
  if (part_bytes < 1) throw Error(ErrorCode::kInvalidArgument, "key placement: part_bytes must be positive");
  server_bytes_.assign(static_cast<size_t>(num_servers), 0);
}

void KeyPlacement::add_range(std::vector<PartRange>& parts, int server, int64_t begin, int64_t end,
                             size_t element_size) {
  server_bytes_[static_cast<size_t>(server)] += static_cast<uint64_t>(end - begin) * element_size;
  const int64_t per_part = std::max<int64_t>(1, static_cast<int64_t>(part_bytes_ / element_size));
  const int64_t count = std::max<int64_t>(1, (end - begin + per_part - 1) / per_part);
  // Even cuts rather than full parts plus a remainder, so no part is tiny.
  for (int64_t i = 0; i < count; ++i) {
    parts.push_back(PartRange{server, begin + (end - begin) * i / count, begin + (end - begin) * (i + 1) / count});
  }
}

const std::vector<PartRange>& KeyPlacement::place(uint64_t key, int64_t numel, size_t element_size) {
  if (numel < 0 || element_size == 0) {
    throw Error(ErrorCode::kInvalidArgument, "key placement: key " + std::to_string(key) + " has a bad size");
  }
  auto it = placed_.find(key);
  if (it != placed_.end()) {
    if (it->second.numel != numel || it->second.element_size != element_size) {
      throw Error(ErrorCode::kShapeMismatch, "key " + std::to_string(key) + " was placed with " +
                                                 std::to_string(it->second.numel) + " elements, now " +
                                                 std::to_string(numel));
    }
    return it->second.parts;
  }
  Placed placed{numel, element_size, {}};
  const uint64_t bytes = static_cast<uint64_t>(numel) * element_size;
  const int servers = num_servers();
  if (bytes > bigarray_bound_bytes_ && servers > 1 && numel >= servers) {
    for (int s = 0; s < servers; ++s) add_range(placed.parts, s, numel * s / servers, numel * (s + 1) / servers, element_size);
  } else {
    const auto least = std::min_element(server_bytes_.begin(), server_bytes_.end());
    add_range(placed.parts, static_cast<int>(least - server_bytes_.begin()), 0, numel, element_size);
  }
  return placed_.emplace(key, std::move(placed)).first->second.parts;
}

const std::vector<PartRange>* KeyPlacement::find(uint64_t key) const {
  auto it = placed_.find(key);
  return it == placed_.end() ? nullptr : &it->second.parts;
}

std::vector<PartHolder> part_holders(int server, int num_servers, const std::vector<ServerChange>& changes) {
  const int n = num_servers;
  std::vector<PartHolder> holders{{server, true}};
  if (n > 1) holders.push_back({replica_server(server, n), true});
  std::vector<bool> lost(static_cast<size_t>(n), false);
  const auto holds = [&](int s) {
    return std::any_of(holders.begin(), holders.end(), [s](const PartHolder& h) { return h.server == s; });
  };
  for (const ServerChange& change : changes) {
    if (change.server < 0 || change.server >= n) continue;
    lost[static_cast<size_t>(change.server)] = !change.rejoined;
    if (!change.rejoined) {
      holders.erase(std::remove_if(holders.begin(), holders.end(),
                                   [&](const PartHolder& h) { return h.server == change.server; }),
                    holders.end());
    }
    for (int step = 0; step < n && holders.size() < 2; ++step) {
      const int candidate = (server + step) % n;
      if (!lost[static_cast<size_t>(candidate)] && !holds(candidate)) holders.push_back({candidate, false});
    }
  }
  return holders;
}

}  // namespace dt::ps
