// The .safetensors format: an 8-byte little-endian header length, a JSON header, raw bytes.
#include "frontend/safetensors.h"

#include "frontend/diag.h"
#include "frontend/io_util.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

namespace fxc {

namespace {

using json = nlohmann::json;

// Headers larger than this are rejected before anything is allocated (the reference
// implementation uses the same 100 MB limit).
constexpr uint64_t kMaxHeader = 100'000'000;

uint64_t read_u64_le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

struct Entry {
  std::string name;
  TensorMeta meta;
  int64_t begin = 0, end = 0;
};

Entry parse_entry(const std::string& path, const std::string& name, const json& j) {
  auto fail = [&](const std::string& msg) -> Entry {
    throw Error(path, "tensor '" + name + "': " + msg);
  };
  if (!j.is_object()) return fail("header entry is not an object");
  auto dt = j.find("dtype");
  auto shape = j.find("shape");
  auto offs = j.find("data_offsets");
  if (dt == j.end() || !dt->is_string()) return fail("missing string 'dtype'");
  if (shape == j.end() || !shape->is_array()) return fail("missing array 'shape'");
  if (offs == j.end() || !offs->is_array() || offs->size() != 2)
    return fail("missing 'data_offsets' [begin, end]");
  Entry e;
  e.name = name;
  auto t = parse_safetensors_dtype(dt->get<std::string>());
  if (!t) return fail("unknown dtype '" + dt->get<std::string>() + "'");
  e.meta.dtype = *t;
  for (const json& s : *shape) {
    if (!s.is_number_integer() || s.get<int64_t>() < 0)
      return fail("shape entries must be non-negative integers");
    e.meta.sizes.push_back(s.get<int64_t>());
  }
  e.meta.strides = contiguous_strides(e.meta.sizes);
  for (int k = 0; k < 2; ++k)
    if (!(*offs)[k].is_number_unsigned() || (*offs)[k].get<uint64_t>() > uint64_t(INT64_MAX))
      return fail("data_offsets must be non-negative integers");
  e.begin = (*offs)[0].get<int64_t>();
  e.end = (*offs)[1].get<int64_t>();
  if (e.begin > e.end) return fail("data_offsets are reversed");
  int64_t nbytes;
  if (!view_extent_bytes(e.meta.sizes, e.meta.strides, 0, int64_t(dtype_size(e.meta.dtype)),
                         &nbytes))
    return fail("size of shape " + format_meta(e.meta) + " overflows");
  if (nbytes != e.end - e.begin)
    return fail(format_meta(e.meta) + " needs " + std::to_string(nbytes) +
                " bytes but data_offsets span " + std::to_string(e.end - e.begin));
  return e;
}

} // namespace

std::map<std::string, WeightData> read_safetensors(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw Error(path, std::string("cannot read: ") + std::strerror(errno));
  const uint64_t file_size = uint64_t(st.st_size);
  if (file_size < 8)
    throw Error(path, "not a safetensors file: shorter than its 8-byte header length");
  unsigned char len_bytes[8];
  read_file_range(path, 0, 8, reinterpret_cast<std::byte*>(len_bytes));
  const uint64_t header_len = read_u64_le(len_bytes);
  if (header_len > kMaxHeader || header_len > file_size - 8)
    throw Error(path, "safetensors header length " + std::to_string(header_len) +
                          " exceeds the file size " + std::to_string(file_size));
  std::string header(header_len, '\0');
  read_file_range(path, 8, header_len, reinterpret_cast<std::byte*>(header.data()));
  if (json_nesting_depth(header) > kMaxJsonDepth)
    throw Error(path, "malformed safetensors header: nested too deeply");
  json j = json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error(path, "malformed safetensors header: not valid JSON");
  if (!j.is_object()) throw Error(path, "malformed safetensors header: not a JSON object");

  const int64_t data_start = int64_t(8 + header_len);
  const int64_t data_len = int64_t(file_size) - data_start;
  std::vector<Entry> entries;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    entries.push_back(parse_entry(path, it.key(), it.value()));
  }
  // The data must be covered exactly: sorted by offset, no gaps, no overlaps.
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  int64_t pos = 0;
  for (const Entry* e : by_offset) {
    if (e->end > data_len)
      throw Error(path, "tensor '" + e->name + "': data_offsets [" + std::to_string(e->begin) +
                            ", " + std::to_string(e->end) + "] lie outside the " +
                            std::to_string(data_len) + "-byte data section");
    if (e->begin != pos)
      throw Error(path, "tensor '" + e->name + "': data_offsets " +
                            std::string(e->begin < pos ? "overlap the previous tensor"
                                                       : "leave a gap after the previous tensor"));
    pos = e->end;
  }
  if (pos != data_len)
    throw Error(path,
                "data section has " + std::to_string(data_len - pos) + " bytes no tensor uses");

  std::map<std::string, WeightData> out;
  for (const Entry& e : entries) {
    WeightData w;
    w.meta = e.meta;
    const uint64_t offset = uint64_t(data_start + e.begin);
    const size_t n = size_t(e.end - e.begin);
    w.storage = Storage::lazy(
        n,
        [path, offset](std::byte* dst, size_t nbytes) {
          read_file_range(path, offset, nbytes, dst);
        },
        /*load_writes_all=*/true);
    out.emplace(e.name, std::move(w));
  }
  return out;
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& entries) {
  std::vector<const SafetensorsEntry*> sorted;
  for (const SafetensorsEntry& e : entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(),
            [](const SafetensorsEntry* a, const SafetensorsEntry* b) { return a->name < b->name; });
  json header = json::object();
  int64_t pos = 0;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const SafetensorsEntry& e = *sorted[i];
    if (e.name == "__metadata__") throw Error(path, "tensor name '__metadata__' is reserved");
    if (i > 0 && sorted[i - 1]->name == e.name)
      throw Error(path, "tensor '" + e.name + "' written twice");
    int64_t nbytes;
    if (!view_extent_bytes(e.meta.sizes, contiguous_strides(e.meta.sizes), 0,
                           int64_t(dtype_size(e.meta.dtype)), &nbytes))
      throw Error(path, "size of '" + e.name + "' overflows");
    assert((e.data || nbytes == 0) && "safetensors entry without data");
    header[e.name] = {{"dtype", std::string(dtype_safetensors_name(e.meta.dtype))},
                      {"shape", e.meta.sizes},
                      {"data_offsets", {pos, pos + nbytes}}};
    sizes.push_back(nbytes);
    pos += nbytes;
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8 != 0) h += ' ';
  std::string bytes;
  bytes.reserve(8 + h.size() + size_t(pos));
  uint64_t len = h.size();
  for (int i = 0; i < 8; ++i) bytes += char((len >> (8 * i)) & 0xff);
  bytes += h;
  for (size_t i = 0; i < sorted.size(); ++i)
    bytes.append(reinterpret_cast<const char*>(sorted[i]->data), size_t(sizes[i]));
  write_file_bytes(path, bytes);
}

} // namespace fxc
