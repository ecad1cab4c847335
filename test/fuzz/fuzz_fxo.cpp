// libFuzzer harness: the .fxo artifact reader. The input is an artifact's decompressed payload
// (u64 manifest length, JSON manifest, blobs); the harness seals it as docs/artifact.md says
// (48-byte header, zstd, XXH64), so the fuzzer reaches the manifest and plan checks instead of
// stopping at the checksum. Any input must give an artifact or an fxc::Error.
#include "frontend/diag.h"
#include "runtime/artifact.h"

#include <cstring>
#include <zstd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace {

void put_le(std::string& s, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s[at + i] = char((v >> (8 * i)) & 0xff);
}

std::string seal(const uint8_t* payload, size_t size) {
  constexpr size_t kHeader = 48, kChecksumAt = 40;
  std::string out(kHeader + ZSTD_compressBound(size), '\0');
  size_t n = ZSTD_compress(out.data() + kHeader, out.size() - kHeader, payload, size, 1);
  if (ZSTD_isError(n)) std::abort();
  out.resize(kHeader + n);
  std::memcpy(out.data(), "FXO\0", 4);
  put_le(out, 4, fxc::kArtifactFormatVersion, 4);
  std::memcpy(out.data() + 8, "fuzz", 4);
  put_le(out, 24, n, 8);
  put_le(out, 32, size, 8);
  XXH64_state_t st;
  XXH64_reset(&st, 0);
  XXH64_update(&st, out.data(), kChecksumAt);
  XXH64_update(&st, out.data() + kHeader, n);
  put_le(out, kChecksumAt, XXH64_digest(&st), 8);
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
