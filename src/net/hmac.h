// The three cryptographic primitives the job's authentication needs, each a
// thin call into mbedTLS (the TLS library Debian's nng is built with): no
// cryptography is written here.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>

namespace dt::net {

using Sha256Digest = std::array<uint8_t, 32>;

// A run of bytes to authenticate; the parts of a MAC are fixed-length or
// carry their own length, so concatenating them is unambiguous.
using ByteSpan = std::pair<const uint8_t*, size_t>;

// HMAC-SHA256 (RFC 2104) of the parts, in order, under key.
Sha256Digest hmac_sha256(const uint8_t* key, size_t key_size, std::initializer_list<ByteSpan> parts);

// Fills out with fresh random bytes from mbedTLS's CTR-DRBG seeded from the
// system's entropy source. Throws core::Error(kInternal) if seeding fails.
void random_bytes(uint8_t* out, size_t size);

// Compares in time independent of where the bytes differ, so an attacker
// cannot learn a MAC byte by byte from response times.
bool equal_in_constant_time(const uint8_t* a, const uint8_t* b, size_t size);

}  // namespace dt::net
