#include "data/image_decode.h"

#include <sys/stat.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>

// In this order: jpeglib.h needs FILE and size_t declared first (cstdio),
// and jerror.h names the warnings that on_jpeg_message picks out.
#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

#include "core/error.h"
#include "core/file_bytes.h"

namespace dt::data {

namespace {

using core::Error;
using core::ErrorCode;

// The encoded image: a whole file's bytes, or a part of a container's record.
struct Bytes {
  const uint8_t* begin;
  size_t length;
  const uint8_t* data() const { return begin; }
  size_t size() const { return length; }
  bool empty() const { return length == 0; }
};

void check_size(const std::string& path, int64_t height, int64_t width) {
  if (height <= 0 || width <= 0 || height * width > kMaxPixels) {
    throw Error(ErrorCode::kIo, "image file " + path + " claims " + std::to_string(width) + "x" +
                                    std::to_string(height) + " pixels, outside 1 to " + std::to_string(kMaxPixels));
  }
}

// --- JPEG -----------------------------------------------------------------

struct JpegErrors {
  jpeg_error_mgr pub;  // first: libjpeg sees only this part
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_jpeg_error(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

// libjpeg only warns about a truncated file or damaged entropy-coded data,
// then invents the missing pixels (grey, or garbage after a lost sync): a
// training sample must be what the file holds or an error. Other warnings
// (extraneous bytes between markers, odd but harmless headers) are let pass,
// as Pillow does, since real data sets hold such files.
void on_jpeg_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  switch (cinfo->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL:
      on_jpeg_error(cinfo);
    default:
      return;
  }
}

// Decodes into `out`; false with errors->message and *offset (how far the
// decoder had read) on failure. No C++ object with a destructor lives in
// this frame after setjmp, so the longjmp back skips none.
bool decode_jpeg_into(const Bytes& bytes, JpegErrors* errors, bool* cmyk, size_t* offset, DecodedImage* out) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&errors->pub);
  errors->pub.error_exit = on_jpeg_error;
  errors->pub.emit_message = on_jpeg_message;
  cinfo.src = nullptr;
  if (setjmp(errors->jump)) {
    *offset = bytes.size();
    if (cinfo.src != nullptr && cinfo.src->next_input_byte >= bytes.data() &&
        cinfo.src->next_input_byte <= bytes.data() + bytes.size()) {
      *offset = static_cast<size_t>(cinfo.src->next_input_byte - bytes.data());
    }
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    *cmyk = true;
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  cinfo.out_color_space = JCS_RGB;  // libjpeg-turbo expands grey to RGB itself
  out->height = cinfo.image_height;
  out->width = cinfo.image_width;
  if (out->height * out->width > kMaxPixels) {
    jpeg_destroy_decompress(&cinfo);
    return true;  // the caller's size check reports it
  }
  try {
    out->pixels.resize(static_cast<size_t>(out->height * out->width * 3));
  } catch (...) {
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
  jpeg_start_decompress(&cinfo);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out->pixels.data() + static_cast<size_t>(cinfo.output_scanline) * cinfo.output_width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

DecodedImage decode_jpeg(const std::string& path, const Bytes& bytes) {
  DecodedImage image;
  JpegErrors errors;
  bool cmyk = false;
  size_t offset = 0;
  if (!decode_jpeg_into(bytes, &errors, &cmyk, &offset, &image)) {
    if (cmyk) throw Error(ErrorCode::kNotSupported, "JPEG file " + path + " is CMYK, which is not converted to RGB");
    if (errors.pub.msg_code == JWRN_JPEG_EOF) {
      throw Error(ErrorCode::kIo, "truncated JPEG file " + path + ": it ends at byte offset " +
                                      std::to_string(bytes.size()) + " before the image does (" + errors.message +
                                      ")");
    }
    // The entropy decoder reads ahead of the position it reports, by at most
    // its bit buffer: hence "near".
    throw Error(ErrorCode::kIo, "corrupt JPEG file " + path + " (" + std::to_string(bytes.size()) +
                                    " bytes), near byte offset " + std::to_string(offset) + ": " + errors.message);
  }
  check_size(path, image.height, image.width);
  return image;
}

// --- PNG ------------------------------------------------------------------

// png_image_free on every way out; harmless after libpng freed it itself.
class PngImage {
 public:
  PngImage() {
    std::memset(&image_, 0, sizeof image_);
    image_.version = PNG_IMAGE_VERSION;
  }
  ~PngImage() { png_image_free(&image_); }
  PngImage(const PngImage&) = delete;
  PngImage& operator=(const PngImage&) = delete;
  png_image* get() { return &image_; }

 private:
  png_image image_;
};

DecodedImage decode_png(const std::string& path, const Bytes& bytes) {
  PngImage png;
  png_image* image = png.get();
  const auto fail = [&] {
    return Error(ErrorCode::kIo, "corrupt or truncated PNG file " + path + " (" + std::to_string(bytes.size()) +
                                     " bytes): " + image->message);
  };
  if (!png_image_begin_read_from_memory(image, bytes.data(), bytes.size())) throw fail();
  DecodedImage decoded;
  decoded.height = image->height;
  decoded.width = image->width;
  check_size(path, decoded.height, decoded.width);
  // RGBA, then the alpha dropped: without an alpha channel in the output,
  // libpng would composite onto a background instead.
  image->format = PNG_FORMAT_RGBA;
  std::vector<uint8_t> rgba(PNG_IMAGE_SIZE(*image));
  if (!png_image_finish_read(image, nullptr, rgba.data(), 0, nullptr)) throw fail();
  const size_t count = static_cast<size_t>(decoded.height * decoded.width);
  decoded.pixels.resize(count * 3);
  for (size_t i = 0; i < count; ++i) std::memcpy(&decoded.pixels[i * 3], &rgba[i * 4], 3);
  return decoded;
}

constexpr uint8_t kJpegMagic[3] = {0xFF, 0xD8, 0xFF};
constexpr uint8_t kPngMagic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

bool starts_with(const Bytes& bytes, const uint8_t* magic, size_t size) {
  return bytes.size() >= size && std::memcmp(bytes.data(), magic, size) == 0;
}

}  // namespace

DecodedImage decode_image(const std::string& path) {
  const std::vector<uint8_t> bytes = core::read_file_bytes(path, "image file");
  return decode_image(bytes.data(), bytes.size(), path);
}

DecodedImage decode_image(const uint8_t* data, size_t size, const std::string& name) {
  const Bytes bytes{data, size};
  const std::string& path = name;
  if (starts_with(bytes, kJpegMagic, sizeof kJpegMagic)) return decode_jpeg(path, bytes);
  if (starts_with(bytes, kPngMagic, sizeof kPngMagic)) return decode_png(path, bytes);
  if (bytes.empty()) throw Error(ErrorCode::kIo, "image file " + path + " is empty");
  throw Error(ErrorCode::kIo, "image file " + path + " is neither JPEG nor PNG (its first bytes are not either's " +
                                  "signature)");
}

}  // namespace dt::data
