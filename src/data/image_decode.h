// JPEG and PNG files decoded to 8-bit RGB. The decoders are Debian's
// libjpeg-turbo (libjpeg62-turbo, the jpeglib.h API) and libpng
// (libpng16): the reference implementations of both formats, maintained in
// Debian with its security support and used by nearly everything that reads
// images (Pillow, torchvision's io, OpenCV), so files that those read, these
// read the same way. Neither may end the process: libjpeg's default error
// handler calls exit(), so ours returns through setjmp/longjmp, and
// libpng's simplified API reports failures in its png_image.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dt::data {

// An interleaved (height, width, 3) RGB image.
struct DecodedImage {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<uint8_t> pixels;
};

// Reads and decodes `path`, choosing the decoder by the file's first bytes,
// not its name. Grey images become R = G = B; an alpha channel is dropped
// (as Pillow's convert("RGB") does); 16-bit PNG samples are reduced to 8.
// Every error is core::Error naming the file: kNotFound when it does not
// exist; kIo when it cannot be read, is neither JPEG nor PNG, is corrupt or
// truncated (for JPEG with a byte offset: where a truncated file ends, or
// near where the decoder met the damage; libpng's simplified API reports
// none), or has more than kMaxPixels pixels;
// kNotSupported for a JPEG colour space without an RGB conversion (CMYK).
DecodedImage decode_image(const std::string& path);
// As above, for `size` encoded bytes held in memory (an image inside a
// RecordIO record); `name` stands for the path in the messages, e.g.
// "train.rec, record at byte offset 1024".
DecodedImage decode_image(const uint8_t* data, size_t size, const std::string& name);

// The decoded size is capped so that a corrupt or hostile header cannot
// make one sample allocate gigabytes: 2^27 pixels (384 MiB of RGB) is far
// beyond any training image.
inline constexpr int64_t kMaxPixels = int64_t{1} << 27;

}  // namespace dt::data
