// Slurm's compressed host lists ("node[01-03,7],gpu-a1") as plain host
// names, for SLURM_JOB_NODELIST: the scheduler of a Slurm job without an
// explicit address runs on the first host of the allocation.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dt::ps {

// Expansions beyond this are refused: a typo such as "n[1-99999999]" must
// fail, not allocate gigabytes.
constexpr size_t kMaxHostlistHosts = 1000000;

// The hosts of `text` in Slurm's order. Top-level commas separate names;
// each "[...]" holds comma-separated numbers or ranges "lo-hi" (lo <= hi),
// whose width is kept when lo has leading zeros ("01-03": 01 02 03); several
// brackets in one name expand as nested loops ("r[1-2]n[1-2]": r1n1 r1n2
// r2n1 r2n2). Error(kInvalidArgument) for an empty list or name, unbalanced
// or nested brackets, a non-numeric or descending range, or more than
// kMaxHostlistHosts hosts; the message quotes the list.
std::vector<std::string> expand_hostlist(const std::string& text);

}  // namespace dt::ps
