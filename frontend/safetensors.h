// The .safetensors format: an 8-byte little-endian header length, a JSON header, raw bytes.
#pragma once

#include "frontend/graph.h"

#include <map>
#include <string>
#include <vector>

namespace fxc {

/// Reads every tensor of a .safetensors file (contiguous, offset 0), loaded lazily.
/// "__metadata__" is skipped. Throws fxc::Error on malformed files (bad header length,
/// offsets outside the file, byte counts that do not match dtype × shape).
std::map<std::string, WeightData> read_safetensors(const std::string& path);

/// One tensor to write: contiguous bytes of meta.numel() * dtype_size(meta.dtype).
struct SafetensorsEntry {
  std::string name;
  TensorMeta meta;
  const std::byte* data = nullptr;
};

/// Writes the entries (sorted by name, as safetensors requires for determinism). Throws fxc::Error.
void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& entries);

} // namespace fxc
