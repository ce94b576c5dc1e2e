#include "ps/job/local_rank.h"

#include <charconv>
#include <string>

#include "core/error.h"
#include "core/parameter_table.h"

namespace dt::ps {
namespace {

using core::Error;
using core::ErrorCode;

// The launchers' variables, most specific first. size may be null (srun
// says the node's task count in a compressed form, "2(x3)").
struct Source {
  const char* rank;
  const char* size;
};
constexpr Source kSources[] = {
    {"DT_LOCAL_RANK", "DT_LOCAL_SIZE"},
    {"LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"SLURM_LOCALID", nullptr},
};

int whole_number(const char* name, const std::string& text, int min) {
  int value = -1;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end || value < min) {
    throw Error(ErrorCode::kInvalidArgument, std::string(name) + "=\"" + text + "\" is not a whole number >= " +
                                                 std::to_string(min));
  }
  return value;
}

}  // namespace

LocalRank local_rank_from(const EnvLookup& env) {
  for (const Source& source : kSources) {
    const std::optional<std::string> rank = env(source.rank);
    if (!rank || rank->empty()) continue;
    LocalRank local;
    local.from_launcher = true;
    local.rank = whole_number(source.rank, *rank, 0);
    const std::optional<std::string> size = source.size != nullptr ? env(source.size) : std::nullopt;
    local.size = size && !size->empty() ? whole_number(source.size, *size, 1) : 0;
    if (local.size != 0 && local.rank >= local.size) {
      throw Error(ErrorCode::kInvalidArgument, std::string(source.rank) + "=" + std::to_string(local.rank) +
                                                   " is not below " + source.size + "=" + std::to_string(local.size));
    }
    return local;
  }
  return LocalRank{};
}

LocalRank local_rank_from_env() {
  return local_rank_from([](const char* name) -> std::optional<std::string> {
    const char* value = core::read_parameter(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

}  // namespace dt::ps
