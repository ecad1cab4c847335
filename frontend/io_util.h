// Small helpers shared by the readers and writers: whole-file I/O and checked arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fxc {

/// The bytes of a file; throws fxc::Error(path, "cannot read: ...") when it cannot be read.
std::string read_file_bytes(const std::string& path);

/// Writes `bytes` to `path`, replacing it; throws fxc::Error(path, "cannot write: ...").
void write_file_bytes(const std::string& path, const std::string& bytes);

/// Reads `n` bytes at `offset` of `path` into `dst`; throws fxc::Error when the file is shorter.
void read_file_range(const std::string& path, uint64_t offset, size_t n, std::byte* dst);

/// a + b and a * b for non-negative operands; false on overflow of int64.
bool checked_add(int64_t a, int64_t b, int64_t* out);
bool checked_mul(int64_t a, int64_t b, int64_t* out);

/// Number of bytes a view needs in its storage: (storage_offset + 1 + sum((size-1)*stride))
/// * itemsize, or 0 for an empty view. False when a size, stride or offset is negative or the
/// result overflows int64.
bool view_extent_bytes(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                       int64_t storage_offset, int64_t itemsize, int64_t* out);

/// Deepest nesting of [ and { in JSON text (strings skipped). Readers refuse texts nested
/// deeper than kMaxJsonDepth before parsing, so nothing recurses without bound on them.
size_t json_nesting_depth(const std::string& text);
constexpr size_t kMaxJsonDepth = 512;

/// "dir/" part of a path, "" when there is none.
std::string dirname_of(const std::string& path);
/// Last path component with `suffix` removed when the name ends with it ("a/mlp.pt2" -> "mlp").
std::string stem_of(const std::string& path, const std::string& suffix);

} // namespace fxc
