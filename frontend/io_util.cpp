// Small helpers shared by the readers and writers: whole-file I/O and checked arithmetic.
#include "frontend/io_util.h"

#include "frontend/diag.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>

namespace fxc {

namespace {
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

File open_or_throw(const std::string& path, const char* mode, const char* what) {
  File f(std::fopen(path.c_str(), mode));
  if (!f) throw Error(path, std::string(what) + std::strerror(errno));
  return f;
}
} // namespace

std::string read_file_bytes(const std::string& path) {
  File f = open_or_throw(path, "rb", "cannot read: ");
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) out.append(buf, n);
  if (std::ferror(f.get())) throw Error(path, "cannot read: I/O error");
  return out;
}

OutputFile::OutputFile(std::string path, std::string what)
    : path_(std::move(path)), what_(std::move(what)) {
  if (path_.empty() || path_ == "-") {
    std::fflush(stdout);
    fd_ = STDOUT_FILENO;
    return;
  }
  // A symbolic link (/dev/stdout, a user's link) is written through, in place: renaming over it
  // would replace the link itself.
  struct stat lst{}, st{};
  if (::lstat(path_.c_str(), &lst) == 0 && !S_ISREG(lst.st_mode)) {
    bool regular = ::stat(path_.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (regular ? O_TRUNC : 0), 0666);
    if (fd_ < 0) fail();
    return;
  }
  // <path>.tmp-<pid>-<random>: unique among concurrent runs writing the same output.
  std::random_device rd;
  for (int attempt = 0; attempt < 8 && fd_ < 0; ++attempt) {
    char suffix[48];
    std::snprintf(suffix, sizeof suffix, ".tmp-%ld-%08x", long(::getpid()), unsigned(rd()));
    temp_ = path_ + suffix;
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    int e = errno;
    temp_.clear();
    errno = e;
    fail();
  }
}

OutputFile::~OutputFile() {
  if (committed_) return;
  if (fd_ >= 0 && fd_ != STDOUT_FILENO) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void OutputFile::fail() const {
  throw Error(path_, what_ + ": " + std::strerror(errno));
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

void OutputFile::write(std::string_view bytes) {
  if (!write_all(fd_, bytes.data(), bytes.size())) fail();
}

void OutputFile::commit() {
  if (fd_ != STDOUT_FILENO) {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail();
    if (!temp_.empty() && ::rename(temp_.c_str(), path_.c_str()) != 0) fail();
  }
  committed_ = true; // (on a failure above, the destructor removes the temporary)
}

void write_file_bytes(const std::string& path, const std::string& bytes, const std::string& what) {
  OutputFile out(path, what);
  out.write(bytes);
  out.commit();
}

void read_file_range(const std::string& path, uint64_t offset, size_t n, std::byte* dst) {
  File f = open_or_throw(path, "rb", "cannot read: ");
  if (offset > uint64_t(INT64_MAX) || fseeko(f.get(), off_t(offset), SEEK_SET) != 0)
    throw Error(path, "cannot seek to byte " + std::to_string(offset));
  if (std::fread(dst, 1, n, f.get()) != n)
    throw Error(path, "file is shorter than its header says (changed since it was opened?)");
}

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st{};
  void* p = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
    p = ::mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return nullptr;
  return std::shared_ptr<MappedFile>(
      new MappedFile(static_cast<std::byte*>(p), size_t(st.st_size)));
}

MappedFile::~MappedFile() {
  ::munmap(data_, size_);
}

bool checked_add(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
bool checked_mul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

bool view_extent_bytes(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                       int64_t storage_offset, int64_t itemsize, int64_t* out) {
  if (sizes.size() != strides.size() || storage_offset < 0 || itemsize <= 0) return false;
  int64_t numel = 1; // must be representable even when strides are 0
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] < 0 || strides[d] < 0 || !checked_mul(numel, sizes[d], &numel)) return false;
  int64_t numel_bytes;
  if (!checked_mul(numel, itemsize, &numel_bytes)) return false;
  if (numel == 0) {
    *out = 0;
    return true;
  }
  int64_t last = 0; // index of the last element relative to the offset
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t span;
    if (!checked_mul(sizes[d] - 1, strides[d], &span) || !checked_add(last, span, &last))
      return false;
  }
  int64_t elems;
  if (!checked_add(storage_offset, last, &elems) || !checked_add(elems, 1, &elems)) return false;
  return checked_mul(elems, itemsize, out);
}

size_t json_nesting_depth(const std::string& text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{')
      deepest = std::max(deepest, ++depth);
    else if ((c == ']' || c == '}') && depth > 0)
      --depth;
  }
  return deepest;
}

std::string dirname_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

std::string stem_of(const std::string& path, const std::string& suffix) {
  size_t slash = path.rfind('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  return name;
}

} // namespace fxc
