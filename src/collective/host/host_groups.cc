#include "collective/host/host_groups.h"

#include <algorithm>

namespace dt::collective::host {

namespace {

// The ranks of each host: hosts in the order of their lowest rank, each
// host's ranks ascending.
std::vector<std::vector<int>> ranks_by_host(const std::vector<std::string>& places) {
  std::vector<std::string> host_places;
  std::vector<std::vector<int>> hosts;
  for (int r = 0; r < static_cast<int>(places.size()); ++r) {
    const auto found = std::find(host_places.begin(), host_places.end(), places[static_cast<size_t>(r)]);
    if (found == host_places.end()) {
      host_places.push_back(places[static_cast<size_t>(r)]);
      hosts.push_back({r});
    } else {
      hosts[static_cast<size_t>(found - host_places.begin())].push_back(r);
    }
  }
  return hosts;
}

}  // namespace

std::vector<int> ring_order(const std::vector<std::string>& places) {
  std::vector<int> order;
  for (const auto& host : ranks_by_host(places)) order.insert(order.end(), host.begin(), host.end());
  return order;
}

std::optional<HostGroups> host_groups(const std::vector<std::string>& places, int rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= places.size()) return std::nullopt;
  const std::vector<std::vector<int>> hosts = ranks_by_host(places);
  const size_t per_host = hosts.front().size();
  if (hosts.size() < 2 || per_host < 2) return std::nullopt;
  for (const auto& h : hosts) {
    if (h.size() != per_host) return std::nullopt;
  }
  HostGroups g;
  for (size_t h = 0; h < hosts.size(); ++h) {
    const auto at = std::find(hosts[h].begin(), hosts[h].end(), rank);
    if (at == hosts[h].end()) continue;
    g.local = hosts[h];
    g.local_index = static_cast<int>(at - hosts[h].begin());
    g.host_index = static_cast<int>(h);
  }
  for (const auto& h : hosts) g.cross.push_back(h[static_cast<size_t>(g.local_index)]);
  return g;
}

}  // namespace dt::collective::host
