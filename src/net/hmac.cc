#include "net/hmac.h"

// mbedTLS 2.28 forgot the C++ guard in this one header.
extern "C" {
#include <mbedtls/constant_time.h>
}
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/md.h>

#include <memory>

#include "core/error.h"

namespace dt::net {

using core::Error;
using core::ErrorCode;

Sha256Digest hmac_sha256(const uint8_t* key, size_t key_size, std::initializer_list<ByteSpan> parts) {
  const mbedtls_md_info_t* sha256 = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
  mbedtls_md_context_t ctx;
  mbedtls_md_init(&ctx);
  const std::unique_ptr<mbedtls_md_context_t, void (*)(mbedtls_md_context_t*)> guard(&ctx, mbedtls_md_free);
  Sha256Digest out{};
  int rv = mbedtls_md_setup(&ctx, sha256, /*hmac=*/1);
  if (rv == 0) rv = mbedtls_md_hmac_starts(&ctx, key, key_size);
  for (const ByteSpan& part : parts) {
    if (rv == 0) rv = mbedtls_md_hmac_update(&ctx, part.first, part.second);
  }
  if (rv == 0) rv = mbedtls_md_hmac_finish(&ctx, out.data());
  if (rv != 0) throw Error(ErrorCode::kInternal, "HMAC-SHA256 failed in mbedTLS (" + std::to_string(rv) + ")");
  return out;
}

void random_bytes(uint8_t* out, size_t size) {
  // A generator per call: a handshake needs 32 bytes once per connection, and
  // a fresh one shares no state between threads.
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
  mbedtls_entropy_init(&entropy);
  mbedtls_ctr_drbg_init(&drbg);
  static const unsigned char kPersonalisation[] = "disttrain job authentication";
  int rv = mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy, kPersonalisation, sizeof kPersonalisation);
  // The DRBG hands out at most MBEDTLS_CTR_DRBG_MAX_REQUEST bytes per call.
  for (size_t done = 0; rv == 0 && done < size;) {
    const size_t n = std::min<size_t>(size - done, MBEDTLS_CTR_DRBG_MAX_REQUEST);
    rv = mbedtls_ctr_drbg_random(&drbg, out + done, n);
    done += n;
  }
  mbedtls_ctr_drbg_free(&drbg);
  mbedtls_entropy_free(&entropy);
  if (rv != 0) throw Error(ErrorCode::kInternal, "no random bytes from mbedTLS's generator (" + std::to_string(rv) + ")");
}

bool equal_in_constant_time(const uint8_t* a, const uint8_t* b, size_t size) {
  return mbedtls_ct_memcmp(a, b, size) == 0;
}

}  // namespace dt::net
