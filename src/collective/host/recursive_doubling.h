// Recursive-doubling all-reduce (sum): the latency-optimal shape for small
// arrays. With p the largest power of two <= n and r = n - p, ranks 2i and
// 2i+1 for i < r first fold together (2i sends its array to 2i+1, which adds
// it and stands for both); the p remaining ranks then exchange whole arrays
// with the partner whose index differs in bit k, for k = 0 .. log2(p) - 1,
// adding each time; finally 2i+1 sends the result back to 2i.
//
// Every add puts the lower group's operand first, so both partners compute
// the same operation and all ranks end with the same bits: the sum tree
// ((x0 + x1) + (x2 + x3)) + ... over the folded ranks, the same on every run.
#pragma once

#include <cstddef>

#include "collective/host/call_header.h"
#include "collective/host/peer_stream.h"
#include "core/dtype.h"

namespace dt::collective::host {

// data (count elements of dtype: float32, int32, int64) = the sum over all
// ranks; scratch holds at least count elements. Each message starts with
// header (checked on receipt: Error(kProtocol) naming the sender).
void all_reduce_recursive_doubling(const Links& links, int rank, const CallHeader& header, void* data,
                                   size_t count, core::DType dtype, void* scratch);

}  // namespace dt::collective::host
