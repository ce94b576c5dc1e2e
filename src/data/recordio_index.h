// The .idx file that im2rec (mxnet.recordio.MXIndexedRecordIO) writes next
// to a .rec: one text line per record, "<key>\t<byte offset>\n", the offset
// being where the record's first part starts. It lets a reader seek to any
// record without walking the file before it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dt::data {

// The offsets of `path`'s lines, in line order. Every offset must lie in
// [0, rec_size). Error(kNotFound) when the file does not exist; Error(kIo)
// naming the file, the line and its byte offset for a line that is not a
// key, a tab (or spaces) and a decimal offset, an offset out of range, or a
// file without lines. Blank lines are skipped.
std::vector<int64_t> read_recordio_index(const std::string& path, int64_t rec_size);

}  // namespace dt::data
