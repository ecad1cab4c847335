// Small helpers shared by the readers and writers: whole-file I/O and checked arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fxc {

/// The bytes of a file; throws fxc::Error(path, "cannot read: ...") when it cannot be read.
std::string read_file_bytes(const std::string& path);

/// Writes all `n` bytes at `p` to descriptor `fd` (retrying short writes and EINTR); false with
/// errno set on an error. Async-signal-safe (crash reproducers write with it).
bool write_all(int fd, const char* p, size_t n);

/// An output written as clang writes its outputs: into a temporary file beside `path` (the same
/// directory, so the same file system), renamed over `path` by commit(). Destroyed without
/// commit() (an error, an exception), the temporary is removed and `path` keeps what it held: a
/// killed or failed run never leaves a half-written output newer than its inputs (which make
/// then takes as up to date). A `path` that exists and is no regular file (a device, a FIFO, a
/// symbolic link) is written in place, through it; "-" or "" is standard output. Failures throw
/// fxc::Error(path, `what` + ": "
/// + the system's reason).
class OutputFile {
public:
  explicit OutputFile(std::string path, std::string what = "cannot write output file");
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  /// The descriptor to write to (at offset 0).
  int fd() const { return fd_; }
  /// Whether fd() is a new, empty regular file (not a device, a FIFO or standard output).
  bool regular() const { return !temp_.empty(); }
  /// Writes all of `bytes` at the current position.
  void write(std::string_view bytes);
  /// Closes the file and renames the temporary over the path.
  void commit();
  /// Throws the error of this output, with errno's reason.
  [[noreturn]] void fail() const;

private:
  std::string path_, what_;
  std::string temp_; ///< the temporary's path; empty when writing in place
  int fd_ = -1;
  bool committed_ = false;
};

/// Writes `bytes` to `path` through an OutputFile; throws fxc::Error(path, `what` + ": ...").
void write_file_bytes(const std::string& path, const std::string& bytes,
                      const std::string& what = "cannot write");

/// Reads `n` bytes at `offset` of `path` into `dst`; throws fxc::Error when the file is shorter.
void read_file_range(const std::string& path, uint64_t offset, size_t n, std::byte* dst);

/// A regular file mapped read-only into memory, private (pages written by a caller are copied,
/// the file never changes), unmapped when the last reference goes.
class MappedFile {
public:
  /// The whole of `path` mapped, or nullptr when it cannot be (not a regular file, empty, no
  /// mapping possible): callers then read it as a stream.
  static std::shared_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }

private:
  MappedFile(std::byte* data, size_t size) : data_(data), size_(size) {}
  std::byte* data_;
  size_t size_;
};

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
