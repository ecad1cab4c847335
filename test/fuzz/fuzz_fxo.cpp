// libFuzzer harness: the .fxo artifact reader. The input is an artifact's decompressed payload
// (u64 manifest length, JSON manifest, blobs) and its weight section, after a u64 giving the
// payload's length (test/fuzz/make_corpus.sh writes such seeds); the harness seals them as
// docs/artifact.md says (64-byte header, zstd, XXH64, the weights on the next page), so the
// fuzzer reaches the manifest, weight and plan checks instead of stopping at the checksum. Any
// input must give an artifact or an fxc::Error.
#include "frontend/diag.h"
#include "runtime/artifact.h"

#include <algorithm>
#include <cstring>
#include <zstd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace {

void put_le(std::string& s, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s[at + i] = char((v >> (8 * i)) & 0xff);
}

std::string seal(const uint8_t* data, size_t size) {
  constexpr size_t kHeader = 64, kChecksumAt = 56, kPage = 4096;
  uint64_t plen = 0;
  if (size >= 8) std::memcpy(&plen, data, 8); // little-endian hosts only, as fxc itself
  const uint8_t* payload = size >= 8 ? data + 8 : data;
  size_t rest = size >= 8 ? size - 8 : size;
  plen = std::min<uint64_t>(plen, rest);
  const uint8_t* weights = payload + plen;
  const size_t wsize = rest - size_t(plen);
  std::string out(kHeader + ZSTD_compressBound(size_t(plen)), '\0');
  size_t n = ZSTD_compress(out.data() + kHeader, out.size() - kHeader, payload, size_t(plen), 1);
  if (ZSTD_isError(n)) std::abort();
  out.resize(kHeader + n);
  const uint64_t woff = wsize ? (out.size() + kPage - 1) / kPage * kPage : out.size();
  std::memcpy(out.data(), "FXO\0", 4);
  put_le(out, 4, fxc::kArtifactFormatVersion, 4);
  std::memcpy(out.data() + 8, "fuzz", 4);
  put_le(out, 24, n, 8);
  put_le(out, 32, plen, 8);
  put_le(out, 40, woff, 8);
  put_le(out, 48, wsize, 8);
  XXH64_state_t st;
  XXH64_reset(&st, 0);
  XXH64_update(&st, out.data(), kChecksumAt);
  XXH64_update(&st, out.data() + kHeader, n);
  put_le(out, kChecksumAt, XXH64_digest(&st), 8);
  out.resize(size_t(woff), '\0');
  out.append(reinterpret_cast<const char*>(weights), wsize);
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes = seal(data, size);
  try {
    (void)fxc::parse_artifact(bytes, "input.fxo");
  } catch (const fxc::Error&) {
  }
  return 0;
}
