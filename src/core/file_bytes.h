// The whole of a regular file in memory, for the readers that parse a format
// there (CIFAR records, JPEG and PNG images). Every error names `what` (e.g.
// "CIFAR file") and the path: kNotFound when it does not exist, kIo when it
// is not a regular file or cannot be read (with the byte offset reached). A
// file that grows or shrinks while it is read gives what was there at the end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dt::core {

std::vector<uint8_t> read_file_bytes(const std::string& path, const std::string& what);

}  // namespace dt::core
