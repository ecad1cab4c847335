// libFuzzer harness: the torch.export .pt2 reader, weights included (their CRC-32 is checked
// as they are read). Any input must give a graph or an fxc::Error.
//
// Each input is read as it is, and then, when it has stored entries whose CRC-32 does not match,
// once more with their CRC-32s recomputed: a mutation inside model.json would otherwise only
// ever reach the CRC check.
#include "fuzz_common.h"

#include "frontend/diag.h"
#include "frontend/import.h"

#include <string>
#include <zlib.h>

namespace {

uint32_t u16(const std::string& s, size_t at) {
  return uint8_t(s[at]) | uint32_t(uint8_t(s[at + 1])) << 8;
}
uint32_t u32(const std::string& s, size_t at) {
  return u16(s, at) | u16(s, at + 2) << 16;
}
void put32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + i] = char((v >> (8 * i)) & 0xff);
}

// Recomputes the CRC-32 of every stored entry (central directory and local header); returns
// whether anything changed. Anything that does not parse is left alone.
bool fix_stored_crcs(std::string& z) {
  if (z.size() < 22) return false;
  size_t eocd = z.size() - 22;
  while (eocd > 0 && u32(z, eocd) != 0x06054b50) --eocd;
  if (u32(z, eocd) != 0x06054b50) return false;
  size_t count = u16(z, eocd + 10), cd = u32(z, eocd + 16);
  bool changed = false;
  for (size_t i = 0; i < count; ++i) {
    if (cd + 46 > z.size() || u32(z, cd) != 0x02014b50) break;
    size_t method = u16(z, cd + 10), csize = u32(z, cd + 20), local = u32(z, cd + 42);
    size_t next = cd + 46 + u16(z, cd + 28) + u16(z, cd + 30) + u16(z, cd + 32);
    if (method == 0 && local + 30 <= z.size() && u32(z, local) == 0x04034b50) {
      size_t data = local + 30 + u16(z, local + 26) + u16(z, local + 28);
      if (data <= z.size() && csize <= z.size() - data) {
        uint32_t crc =
            uint32_t(crc32(0, reinterpret_cast<const Bytef*>(z.data() + data), uInt(csize)));
        if (u32(z, cd + 16) != crc || u32(z, local + 14) != crc) changed = true;
        put32(z, cd + 16, crc);
        put32(z, local + 14, crc);
      }
    }
    cd = next;
  }
  return changed;
}

void read_pt2(const uint8_t* data, size_t size) {
  std::string path = fxc::fuzz::write_input(data, size, ".pt2");
  try {
    fxc::fuzz::exercise(fxc::import_pt2(path));
  } catch (const fxc::Error&) {
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  read_pt2(data, size);
  std::string fixed(reinterpret_cast<const char*>(data), size);
  if (fix_stored_crcs(fixed))
    read_pt2(reinterpret_cast<const uint8_t*>(fixed.data()), fixed.size());
  return 0;
}
