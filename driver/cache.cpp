// The compile cache: key digests, checksummed entries stored atomically, hits, LRU eviction.
#include "driver/cache.h"

#include "driver/logging.h"
#include "driver/remote_cache.h"
#ifdef FXC_HAVE_CODEGEN
#include "codegen/host_cpu.h"
#endif
#include "frontend/diag.h"
#include "frontend/io_util.h"
#include "frontend/ops.h"
#include "runtime/cuda_driver.h"
#include "runtime/onednn.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <tuple>

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fxc {

namespace fs = std::filesystem;

namespace {

/// The entry format: the payload in `<key>.entry` as is (no header: so that a hit can place it
/// with a hard link), its size and checksum in `<key>.check`.
constexpr uint32_t kFormatVersion = 3;
constexpr std::string_view kCheckMagic = "fxc-cache-entry 3\n";
constexpr size_t kKeyDigits = 32;
/// Hashing and buffered copies go through this much at a time.
constexpr size_t kChunk = size_t(1) << 20;
/// Temporary files older than this are left over from killed writers and are removed.
constexpr auto kStaleTemp = std::chrono::hours(24);

std::string hex128(const XXH128_hash_t& h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char b : c.digest) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

void put_u64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = char((v >> (8 * i)) & 0xff);
}

bool is_key(const std::string& key) {
  return key.size() == kKeyDigits && key.find_first_not_of("0123456789abcdef") == std::string::npos;
}

void warn(const std::string& msg) {
  process_logger().log(Component::Cache, Level::Warning, msg);
}
void info(const std::string& msg) {
  process_logger().log(Component::Cache, Level::Info, msg);
}

/// Reads exactly `n` bytes of `fd` at `off`. False on a read error, or with errno EIO when the
/// file ends first.
bool pread_all(int fd, char* p, size_t n, uint64_t off) {
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, off_t(off));
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (r == 0) {
      errno = EIO;
      return false;
    }
    p += r;
    n -= size_t(r);
    off += uint64_t(r);
  }
  return true;
}

/// What identifies one state of a file: device, inode, size, modification and change times in
/// nanoseconds. Writing the file, or changing its times, changes it; a hard link changes its
/// change time.
std::string file_identity(const struct stat& st) {
  auto ns = [](const timespec& t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; };
  return std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " +
         std::to_string(st.st_size) + " " + std::to_string(ns(st.st_mtim)) + " " +
         std::to_string(ns(st.st_ctim));
}

/// An entry opened for reading (its payload file, closed with it) and what its check file says.
struct EntryFile {
  int fd = -1;
  struct stat st{};
  uint64_t size = 0;     // the payload's, from the check file (checked against the file's size)
  uint64_t checksum = 0; // the payload's XXH3-64, from the check file
  std::string verified;  // the payload file's identity when its checksum was last verified
  EntryFile() = default;
  EntryFile(const EntryFile&) = delete;
  EntryFile& operator=(const EntryFile&) = delete;
  ~EntryFile() {
    if (fd >= 0) ::close(fd);
  }
};

/// The check file of `key`: "fxc-cache-entry 3\nkey K\nsize N\nxxh3 H\nverified IDENTITY\n".
std::string check_text(const std::string& key, uint64_t size, uint64_t sum,
                       const std::string& verified) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(sum));
  return std::string(kCheckMagic) + "key " + key + "\nsize " + std::to_string(size) + "\nxxh3 " +
         hex + "\nverified " + verified + "\n";
}

/// Parses the check file `text` of `key` into `e`. Returns "" when it parses, else why not.
std::string parse_check(std::string_view text, const std::string& key, EntryFile& e) {
  if (text.substr(0, kCheckMagic.size()) != kCheckMagic) return "bad check file";
  text.remove_prefix(kCheckMagic.size());
  auto field = [&](std::string_view name) -> std::optional<std::string_view> {
    if (text.substr(0, name.size()) != name || text.size() <= name.size() ||
        text[name.size()] != ' ')
      return std::nullopt;
    text.remove_prefix(name.size() + 1);
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;
    std::string_view v = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    return v;
  };
  auto number = [](std::string_view v, int base, uint64_t* out) {
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *out, base);
    return ec == std::errc() && !v.empty() && end == v.data() + v.size();
  };
  std::optional<std::string_view> k = field("key"), size = field("size"), sum = field("xxh3"),
                                  verified = field("verified");
  if (!k || !size || !sum || !verified || !text.empty()) return "bad check file";
  if (*k != key) return "holds another key";
  if (!number(*size, 10, &e.size) || sum->size() != 16 || !number(*sum, 16, &e.checksum))
    return "bad check file";
  e.verified = std::string(*verified);
  return "";
}

/// The XXH3-64 of `size` bytes of `fd` from `offset`, read a chunk at a time. False on a read
/// error.
bool checksum_range(int fd, uint64_t offset, uint64_t size, uint64_t* sum) {
  XXH3_state_t* st = XXH3_createState();
  assert(st && "XXH3_createState failed");
  XXH3_64bits_reset(st);
  std::string buf(std::min<uint64_t>(size, kChunk), '\0');
  bool ok = true;
  for (uint64_t off = 0; off < size && ok;) {
    size_t n = size_t(std::min<uint64_t>(buf.size(), size - off));
    ok = pread_all(fd, buf.data(), n, offset + off);
    if (ok) XXH3_64bits_update(st, buf.data(), n);
    off += n;
  }
  *sum = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return ok;
}

/// Whether the regular file at `path` holds `size` bytes whose XXH3-64 is `sum`.
bool file_holds(const std::string& path, uint64_t size, uint64_t sum) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || uint64_t(st.st_size) != size)
    return false;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  uint64_t have = 0;
  bool same = checksum_range(fd, 0, size, &have) && have == sum;
  ::close(fd);
  return same;
}

/// Copies the payload of `e` to `out` through a buffer, from `out`'s current position.
bool copy_buffered(const EntryFile& e, int out) {
  std::string buf(std::min<uint64_t>(e.size, kChunk), '\0');
  for (uint64_t off = 0; off < e.size;) {
    size_t n = size_t(std::min<uint64_t>(buf.size(), e.size - off));
    if (!pread_all(e.fd, buf.data(), n, off) || !write_all(out, buf.data(), n)) return false;
    off += n;
  }
  return true;
}

/// Copies the payload of `e` to the start of the regular file `out`: clones its blocks where the
/// file system shares blocks between files (btrfs, XFS), else copies them in the kernel, else
/// through a buffer (another file system than the cache's on an old kernel).
bool copy_to_regular(const EntryFile& e, int out) {
  file_clone_range clone{e.fd, 0, e.size, 0};
  if (e.size > 0 && ::ioctl(out, FICLONERANGE, &clone) == 0) return true;
  loff_t in_off = 0, out_off = 0;
  for (uint64_t left = e.size; left > 0;) {
    ssize_t n = ::copy_file_range(e.fd, &in_off, out, &out_off,
                                  size_t(std::min<uint64_t>(left, 1u << 30)), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      bool unsupported = errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
                         errno == EOPNOTSUPP || errno == EBADF;
      if (unsupported && out_off == 0)
        return ::lseek(out, 0, SEEK_SET) == 0 && copy_buffered(e, out);
      return false;
    }
    if (n == 0) { // the entry ended early: it changed under us
      errno = EIO;
      return false;
    }
    left -= uint64_t(n);
  }
  return true;
}

/// A name beside `path` that no other writer uses (pid + random), for a file renamed over `path`
/// when whole.
std::string temp_name(const std::string& path) {
  static std::random_device rd;
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".tmp-%ld-%08x", long(::getpid()), unsigned(rd()));
  return path + suffix;
}

/// Makes `path` a hard link to the file `from`, replacing what is there by a rename. False, with
/// nothing changed, where the two are on different file systems or the file system has no hard
/// links.
bool link_over(const std::string& from, const std::string& path) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string tmp = temp_name(path);
    if (::link(from.c_str(), tmp.c_str()) != 0) {
      if (errno == EEXIST) continue;
      return false;
    }
    if (::rename(tmp.c_str(), path.c_str()) == 0) return true;
    ::unlink(tmp.c_str());
    return false;
  }
  return false;
}

/// Removes temporary files that writers killed mid-store left in `folder`.
void remove_stale_temps(const fs::path& folder) {
  std::error_code ec;
  auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.find(".tmp-") == std::string::npos) continue;
    std::error_code tec;
    auto t = fs::last_write_time(it->path(), tec);
    if (!tec && now - t > kStaleTemp) fs::remove(it->path(), tec);
  }
}

} // namespace

std::string content_digest(std::string_view bytes) {
  return hex128(XXH3_128bits(bytes.data(), bytes.size()));
}

std::string file_digest(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path, std::string("cannot read: ") + std::strerror(errno));
  XXH3_state_t* st = XXH3_createState();
  assert(st && "XXH3_createState failed");
  XXH3_128bits_reset(st);
  std::string buf(1 << 20, '\0');
  bool ok = true;
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      ok = false;
      break;
    }
    XXH3_128bits_update(st, buf.data(), size_t(n));
  }
  int err = errno;
  ::close(fd);
  std::string digest = hex128(XXH3_128bits_digest(st));
  XXH3_freeState(st);
  if (!ok) throw Error(path, std::string("cannot read: ") + std::strerror(err));
  return digest;
}

namespace {

/// The identity file_digest's memo keys on, or "" when the file cannot be stat'ed or changed
/// too recently to be remembered.
std::string memo_identity(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  auto ns = [](const timespec& t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; };
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const int64_t recent = ns(now) - int64_t(2) * 1000000000;
  if (ns(st.st_mtim) > recent || ns(st.st_ctim) > recent) return "";
  return file_identity(st);
}

constexpr std::string_view kDigestMemoMagic = "fxc-digest 1\n";

} // namespace

std::string file_digest(const std::string& path, const std::string& memo_dir) {
  const std::string id = memo_dir.empty() ? "" : memo_identity(path);
  if (id.empty()) return file_digest(path);
  // One memo per file identity: the name hashes the identity, the text repeats it.
  const std::string memo = memo_dir + "/" + content_digest(id);
  const std::string want = std::string(kDigestMemoMagic) + id + "\n";
  std::string text;
  try {
    text = read_file_bytes(memo);
  } catch (const Error&) {
  }
  if (text.size() == want.size() + 33 && text.compare(0, want.size(), want) == 0 &&
      text.back() == '\n') {
    std::string digest = text.substr(want.size(), 32);
    if (std::all_of(digest.begin(), digest.end(),
                    [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }))
      return digest;
  }
  std::string digest = file_digest(path);
  if (memo_identity(path) != id) return digest; // changed while it was read: remember nothing
  std::error_code ec;
  fs::create_directories(memo_dir, ec);
  try {
    write_file_bytes(memo, want + digest + "\n", "cannot write digest memo");
  } catch (const Error& e) {
    info(std::string(e.what()) + " (not remembered)");
  }
  return digest;
}

CacheKeyBuilder::CacheKeyBuilder() {
  add("cache-entry-format", std::to_string(kFormatVersion));
}

CacheKeyBuilder& CacheKeyBuilder::add(std::string_view name, std::string_view value) {
  for (std::string_view part : {name, value}) {
    char len[8];
    put_u64(len, part.size());
    stream_.append(len, sizeof len);
    stream_.append(part);
  }
  description_ += std::string(name) + "=" + std::string(value) + "\n";
  components_.push_back({std::string(name), std::string(value), content_digest(value)});
  return *this;
}

CacheKeyBuilder& CacheKeyBuilder::add_file(std::string_view name, const std::string& path,
                                           const std::string& memo_dir) {
  std::string digest = file_digest(path, memo_dir);
  add(name, digest);
  // The manifest shows the path (not part of the key) with the file's digest.
  components_.back().value = path;
  components_.back().digest = digest;
  return *this;
}

std::string CacheKeyBuilder::key() const {
  return content_digest(stream_);
}

namespace {

// The GNU build ID of the running executable (a hash the linker computes over its contents), read
// from its loaded note segments without touching the file; "" when it has none.
std::string executable_build_id() {
  std::string id;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
          const char* end = p + ph.p_memsz;
          while (size_t(end - p) >= sizeof(ElfW(Nhdr))) {
            const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p);
            const char* name = p + sizeof(ElfW(Nhdr));
            const char* desc = name + ((size_t(n->n_namesz) + 3) & ~size_t(3));
            if (desc > end || size_t(end - desc) < ((size_t(n->n_descsz) + 3) & ~size_t(3))) break;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
                std::memcmp(name, "GNU", 4) == 0) {
              auto* out = static_cast<std::string*>(data);
              *out = content_digest(std::string_view(desc, n->n_descsz));
              return 1;
            }
            p = desc + ((size_t(n->n_descsz) + 3) & ~size_t(3));
          }
        }
        return 1; // the first object is the executable itself
      },
      &id);
  return id;
}

// What identifies the running fxc's code: its build ID, else the digest of its file. Once per
// process.
const std::string& fxc_binary_digest() {
  static const std::string digest = [] {
    std::string id = executable_build_id();
    return id.empty() ? file_digest("/proc/self/exe") : "build-id " + id;
  }();
  return digest;
}

/// "NVIDIA H200 sm_90", or why there is no device (the compile then fails with that reason).
std::string cuda_device_name() {
  std::string why = cuda::Context::unavailable_reason();
  if (!why.empty()) return "unavailable: " + why;
  const cuda::DeviceInfo& info = cuda::Context::get().info();
  return info.name + " " + info.arch();
}

} // namespace

namespace {

/// The cache directory's memo of input files' digests (file_digest), "" without a cache.
std::string digest_memo_dir(const Options& o) {
  const std::string dir = cache_directory(o);
  return dir.empty() ? "" : dir + "/digests";
}

/// The fields of a key that the options and the input files decide, before anything is imported:
/// fxc itself, the target, every option that changes the output, the plugins and the graph file.
void add_option_fields(CacheKeyBuilder& k, const Options& o, const std::string& product,
                       const std::string& target) {
  k.add("fxc", FXC_VERSION);
  // The binary itself: a rebuilt fxc with changed code never reuses an older build's entries,
  // while a rebuild of an unchanged tree (the same bytes) keeps them.
  k.add("fxc-binary", fxc_binary_digest());
  k.add("product", product);
  k.add("target", target);
  k.add("backend", backend_name(o.backend));
  k.add("device", o.device == DeviceKind::Cuda ? "cuda" : "cpu");
  k.add("mode", o.mode == Mode::Train ? "train" : "inference");
  if (o.device == DeviceKind::Cuda) k.add("cuda-arch", o.cuda_arch);
  k.add("inject-bug", o.inject_bug);
  if (o.device == DeviceKind::Cuda) k.add("tf32", o.tf32);
  k.add("conv-layout", o.effective_conv_layout());
  if (o.device == DeviceKind::Cuda) k.add("attention", o.attention);
  // --dtype rewrites the graph after import: the graph file's digest does not show it.
  k.add("dtype", o.dtype.empty() ? "none" : o.dtype);
  k.add("max-autotune", o.max_autotune ? "1" : "0");
  // CUDA choices are measured on one GPU: a tuned artifact is not another device's.
  if (o.max_autotune && o.device == DeviceKind::Cuda) k.add("autotune-device", cuda_device_name());
  k.add("verify-each", o.verify_each ? "1" : "0");
  if (!o.freeze) k.add("freeze", "0");
  // Inputs' digests are remembered beside the local cache's entries (file_digest).
  const std::string memo = digest_memo_dir(o);
  for (const std::string& p : o.plugins) k.add_file("plugin", p, memo);
  k.add_file("graph", o.input, memo);
}

constexpr std::string_view kDirectMagic = "fxc-direct 1\n";

/// Where the direct memo of `direct_key` lives.
std::string direct_memo_path(const std::string& dir, const std::string& direct_key) {
  return dir + "/direct/" + direct_key.substr(0, 2) + "/" + direct_key;
}

} // namespace

CacheKeyBuilder compile_cache_key(const Options& o, const std::string& product,
                                  const std::string& target, const Graph& g,
                                  const std::vector<std::string>& external_files) {
  CacheKeyBuilder k;
  add_option_fields(k, o, product, target);
  const std::string memo = digest_memo_dir(o);
  for (const std::string& f : external_files) k.add_file("weights", f, memo);
  k.add("name", g.name);
  // The random ops' numbers are constants of the compiled code (docs/random.md).
  if (std::any_of(g.nodes.begin(), g.nodes.end(),
                  [](const Node& n) { return target_has_tag(n.target, OpTag::Random); }))
    k.add("seed", std::to_string(o.seed));
  for (const GraphInput& in : g.inputs) {
    if (in.kind != InputKind::UserInput) continue;
    const Value& v = g.values[in.value];
    k.add("input", v.name + " " + format_meta_with_strides(v.meta));
  }
  return k;
}

std::string direct_cache_key(const Options& o, const std::string& product,
                             const std::string& target) {
  CacheKeyBuilder k;
  k.add("lookup", "direct");
  add_option_fields(k, o, product, target);
  // What the import and the key's graph fields depend on besides the graph file's bytes: its
  // path (the graph's name is its stem; an .fxg names its weights files relative to it), the
  // --inputs file (the shapes it specializes to), and the seed.
  std::error_code ec;
  k.add("graph-path", fs::absolute(o.input, ec).lexically_normal().string());
  if (!o.inputs.empty()) k.add_file("inputs", o.inputs, digest_memo_dir(o));
  k.add("seed", std::to_string(o.seed));
  return k.key();
}

std::optional<DirectHit> direct_lookup(const Options& o, const std::string& direct_key) {
  const std::string dir = cache_directory(o);
  if (dir.empty()) return std::nullopt;
  std::string text;
  try {
    text = read_file_bytes(direct_memo_path(dir, direct_key));
  } catch (const Error&) {
    return std::nullopt;
  }
  std::string_view t = text;
  if (t.substr(0, kDirectMagic.size()) != kDirectMagic) return std::nullopt;
  t.remove_prefix(kDirectMagic.size());
  DirectHit hit;
  std::vector<std::pair<std::string, std::string>> files; // digest, path
  while (!t.empty()) {
    size_t nl = t.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;
    std::string_view line = t.substr(0, nl);
    t.remove_prefix(nl + 1);
    if (line.substr(0, 4) == "key " && hit.key.empty()) {
      hit.key = std::string(line.substr(4));
    } else if (line.substr(0, 5) == "file " && line.size() > 5 + kKeyDigits + 1 &&
               line[5 + kKeyDigits] == ' ') {
      files.emplace_back(std::string(line.substr(5, kKeyDigits)),
                         std::string(line.substr(6 + kKeyDigits)));
    } else {
      return std::nullopt;
    }
  }
  if (!is_key(hit.key)) return std::nullopt;
  // The files the import read besides the graph: each must still have the bytes it had.
  const std::string memo = digest_memo_dir(o);
  for (const auto& [digest, path] : files) {
    try {
      if (file_digest(path, memo) != digest) return std::nullopt;
    } catch (const Error&) {
      return std::nullopt;
    }
    hit.external_files.push_back(path);
  }
  return hit;
}

void direct_remember(const Options& o, const std::string& direct_key, const std::string& key,
                     const std::vector<std::string>& external_files) {
  const std::string dir = cache_directory(o);
  if (dir.empty()) return;
  std::string text = std::string(kDirectMagic) + "key " + key + "\n";
  const std::string memo = digest_memo_dir(o);
  try {
    for (const std::string& f : external_files) {
      if (f.find('\n') != std::string::npos) return; // not one line: not remembered
      text += "file " + file_digest(f, memo) + " " + f + "\n";
    }
    const fs::path path = direct_memo_path(dir, direct_key);
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    std::string now;
    try {
      now = read_file_bytes(path.string());
    } catch (const Error&) {
    }
    if (now != text) write_file_bytes(path.string(), text, "cannot write direct memo");
  } catch (const Error& e) {
    info(std::string(e.what()) + " (not remembered)");
  }
}

std::string code_target(const Options& o) {
  if (o.backend != Backend::Inductor) return "reference interpreter";
  if (o.device == DeviceKind::Cuda) return "nvptx64-nvidia-cuda " + o.cuda_arch;
#ifdef FXC_HAVE_CODEGEN
  // CPU convolutions lower differently with oneDNN (runtime/onednn.h) than without it.
  return host_cpu_description() + (onednn::unavailable_reason().empty() ? " +onednn" : "");
#else
  return "no code generator";
#endif
}

std::string compile_output_asked(const Options& o, bool debug_trace) {
  Logger& log = process_logger();
  // The artifacts a compile prints (not guards or recompiles, which the driver prints itself).
  std::string asked = debug_trace        ? "a debug trace"
                      : o.time_passes    ? "--time-passes"
                      : !o.trace.empty() ? "--trace"
                                         : "";
  for (Artifact a :
       {Artifact::GraphBreaks, Artifact::AotGraphs, Artifact::IrPreFusion, Artifact::IrPostFusion,
        Artifact::OutputCode, Artifact::Fusion, Artifact::Schedule, Artifact::PerfHints})
    if (asked.empty() && log.enabled(a)) asked = "--log=" + std::string(artifact_name(a));
  if (asked.empty() && o.max_autotune && log.enabled(Component::Autotune, Level::Info))
    asked = "--log=autotune";
  for (Component c : {Component::Aot, Component::Inductor})
    if (asked.empty() && log.enabled(c, Level::Info))
      asked = "--log=" + std::string(component_name(c));
  return asked;
}

CompileCacheUse open_compile_cache(const Options& o, const Graph& g,
                                   const std::vector<std::string>& external_files,
                                   bool debug_trace) {
  CompileCacheUse u{CompileCache(cache_directory(o), cache_max_size(o)), "", true, "", {}, nullptr};
  const std::string url = remote_cache_url(o);
  if (!u.cache.enabled() && url.empty()) return u;
  try {
    fxc_binary_digest();
  } catch (const Error& e) {
    warn(std::string(e.what()) + "; the compile cache is off");
    return {CompileCache(""), "", false, "", {}, nullptr};
  }
  CacheKeyBuilder k = compile_cache_key(o, "fxo", code_target(o), g, external_files);
  u.key = k.key();
  u.components = k.components();
  if (!url.empty()) u.remote = std::make_shared<RemoteCache>(url, o.remote_cache_ttl);
  Logger& log = process_logger();
  if (log.enabled(Component::Cache, Level::Debug))
    log.log(Component::Cache, Level::Debug, "key " + u.key + " of:\n" + k.description());
  std::string asked = compile_output_asked(o, debug_trace);
  if (!asked.empty()) {
    u.lookup = false;
    u.no_lookup_reason = asked + " needs the compile to run";
    log.log(Component::Cache, Level::Info,
            "not looking up " + u.key + ": " + asked + " needs the compile to run");
  }
  return u;
}

void log_cache_decision(const CompileCacheUse& u, bool hit) {
  if (!log_enabled(Component::Driver, Level::Info)) return;
  std::string what = !u.cache.enabled() ? "compile cache off (--no-cache, or no cache directory)"
                     : !u.lookup        ? "compile cache not looked up (" + u.no_lookup_reason + ")"
                     : hit              ? "compile cache hit " + u.key
                                        : "compile cache miss " + u.key;
  log_message(Component::Driver, Level::Info,
              what + (hit ? ": the stages are skipped" : ": running the stages"));
}

std::string cache_directory(const Options& o) {
  if (o.no_cache) return "";
  if (!o.cache_dir.empty()) return o.cache_dir;
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (std::string d = env("FXC_CACHE_DIR"); !d.empty()) return d;
  // The XDG base directory spec: a relative $XDG_CACHE_HOME is invalid and ignored.
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty() && d[0] == '/') return d + "/fxc";
  if (std::string d = env("HOME"); !d.empty()) return d + "/.cache/fxc";
  return "";
}

std::string CompileCache::entry_path(const std::string& key) const {
  assert(is_key(key) && "cache keys are 32 hex digits");
  return dir_ + "/" + key.substr(0, 2) + "/" + key + ".entry";
}

namespace {

/// The check file beside the entry file `entry` (`<key>.entry` -> `<key>.check`).
std::string check_path_of(const std::string& entry) {
  return entry.substr(0, entry.size() - 6) + ".check";
}

/// Removes the entry at `path` that `e` read, because of `why`, and logs the miss.
void discard(const std::string& path, const std::string& key, const EntryFile& e,
             const std::string& why) {
  // Remove the entry only if it is still the file that was read: a writer may have renamed a
  // good entry into place meanwhile.
  struct stat now{};
  if (e.fd < 0 ||
      (::stat(path.c_str(), &now) == 0 && now.st_ino == e.st.st_ino && now.st_dev == e.st.st_dev)) {
    ::unlink(path.c_str());
    ::unlink(check_path_of(path).c_str());
  }
  warn("discarding corrupt entry " + path + " (" + why + "); it will be rebuilt");
  info("miss " + key);
}

/// Opens the entry of `key` at `path` and reads its check file. On a miss (no entry, an
/// unreadable one, or one that does not check out, which is removed) logs it and returns false.
bool open_entry(const std::string& path, const std::string& key, EntryFile& e) {
  std::string check;
  try {
    check = read_file_bytes(check_path_of(path));
  } catch (const Error&) { // no check file: no entry (or one a writer has not finished)
    info("miss " + key);
    return false;
  }
  e.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (e.fd < 0) {
    if (errno != ENOENT && errno != ENOTDIR)
      warn("cannot read " + path + ": " + std::strerror(errno));
    info("miss " + key);
    return false;
  }
  if (::fstat(e.fd, &e.st) != 0) {
    warn("cannot read " + path + ": " + std::strerror(errno));
    info("miss " + key);
    return false;
  }
  std::string why = parse_check(check, key, e);
  if (why.empty() && uint64_t(e.st.st_size) < e.size)
    why = "payload shorter than its check file says";
  if (why.empty() && uint64_t(e.st.st_size) > e.size) why = "bytes after the payload";
  if (!why.empty()) {
    discard(path, key, e, why);
    return false;
  }
  return true;
}

/// Whether the payload of `e` is the one its check file describes: hashed, unless the file is
/// in the state (identity) in which it was last verified, unchanged since. On a mismatch the
/// entry is discarded; on a read error the miss is logged.
bool verify_payload(const std::string& path, const std::string& key, const EntryFile& e) {
  if (!e.verified.empty() && e.verified == file_identity(e.st)) return true;
  uint64_t sum = 0;
  if (!checksum_range(e.fd, 0, e.size, &sum)) {
    warn("cannot read " + path + ": " + std::strerror(errno));
    info("miss " + key);
    return false;
  }
  if (sum != e.checksum) {
    discard(path, key, e, "checksum mismatch");
    return false;
  }
  return true;
}

/// After a hit verified `e` (and changed its times): records the payload file's identity now in
/// its check file, so that the next hit need not hash it again. Best effort (another user's
/// cache may be read-only to this process).
void remember_verified(const std::string& path, const std::string& key, const EntryFile& e) {
  struct stat st{};
  if (::fstat(e.fd, &st) != 0) return;
  const std::string id = file_identity(st);
  if (id == e.verified) return;
  try {
    write_file_bytes(check_path_of(path), check_text(key, e.size, e.checksum, id));
  } catch (const Error&) {
  }
}

/// Marks the entry open as `e` used: its modification time becomes now, which eviction orders
/// by. A cache this process may read but not change (another user's) keeps the old time.
void mark_used(const EntryFile& e) {
  (void)::futimens(e.fd, nullptr);
}

} // namespace

std::optional<std::string> CompileCache::lookup(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  const std::string path = entry_path(key);
  EntryFile e;
  if (!open_entry(path, key, e)) return std::nullopt;
  // e.size is the file's own size (open_entry), not a number taken on trust.
  std::string payload(size_t(e.size), '\0');
  if (!pread_all(e.fd, payload.data(), payload.size(), 0)) {
    warn("cannot read " + path + ": " + std::strerror(errno));
    info("miss " + key);
    return std::nullopt;
  }
  if (XXH3_64bits(payload.data(), payload.size()) != e.checksum) {
    discard(path, key, e, "checksum mismatch");
    return std::nullopt;
  }
  mark_used(e);
  remember_verified(path, key, e);
  info("hit " + key + " (" + std::to_string(payload.size()) + " bytes)");
  return payload;
}

bool CompileCache::write_hit(const std::string& key, const std::string& out_path) const {
  if (!enabled()) return false;
  const std::string path = entry_path(key);
  EntryFile e;
  if (!open_entry(path, key, e) || !verify_payload(path, key, e)) return false;
  info("hit " + key + " (" + std::to_string(e.size) + " bytes)");
  const bool to_file = !out_path.empty() && out_path != "-";
  struct stat out_st{};
  const bool out_exists = to_file && ::stat(out_path.c_str(), &out_st) == 0;
  // Only a new output or a regular file is replaced by a link: a device, a FIFO or a symbolic link
  // is written through (OutputFile).
  struct stat out_lst{};
  const bool linkable =
      to_file &&
      (::lstat(out_path.c_str(), &out_lst) == 0 ? S_ISREG(out_lst.st_mode) : errno == ENOENT);
  if (out_exists && out_st.st_dev == e.st.st_dev && out_st.st_ino == e.st.st_ino) {
    // The output is the entry already (a rebuild of unchanged inputs): it only gets a new
    // modification time, which marks the entry used too.
    if (::utimensat(AT_FDCWD, out_path.c_str(), nullptr, 0) != 0) mark_used(e);
    info("hit " + key + ": " + out_path + " is the entry already");
  } else if (linkable && link_over(path, out_path)) {
    // A hard link: no byte is copied. The payload is read-only, so that a tool writing the
    // output in place is refused rather than changing the entry (as ccache's hard links are).
    if (::utimensat(AT_FDCWD, out_path.c_str(), nullptr, 0) != 0) mark_used(e);
    info("hit " + key + ": " + out_path + " linked to the entry");
  } else if (out_exists && S_ISREG(out_st.st_mode) && file_holds(out_path, e.size, e.checksum) &&
             ::utimensat(AT_FDCWD, out_path.c_str(), nullptr, 0) == 0) {
    // Another file system than the cache's: an output that holds the payload is left as it is.
    mark_used(e);
    info("hit " + key + ": " + out_path + " holds it already");
  } else {
    // Into a new file renamed over the output (OutputFile): a killed run leaves the old output.
    OutputFile out(out_path);
    if (!(out.regular() ? copy_to_regular(e, out.fd()) : copy_buffered(e, out.fd()))) out.fail();
    out.commit();
    mark_used(e);
  }
  remember_verified(path, key, e);
  return true;
}

namespace {

/// The file of a cache directory's usage, whose flock serializes stores' renames and evictions.
constexpr const char* kStatsFile = "stats";
constexpr std::string_view kStatsMagic = "fxc-cache-stats 1\n";

/// "fxc-cache-stats 1\nentries <n>\nbytes <n>\n", or nullopt for anything else.
std::optional<CacheUsage> parse_usage(std::string_view text) {
  if (text.substr(0, kStatsMagic.size()) != kStatsMagic) return std::nullopt;
  text.remove_prefix(kStatsMagic.size());
  CacheUsage u;
  for (auto [name, value] : {std::pair<std::string_view, uint64_t*>{"entries ", &u.entries},
                             std::pair<std::string_view, uint64_t*>{"bytes ", &u.bytes}}) {
    if (text.substr(0, name.size()) != name) return std::nullopt;
    text.remove_prefix(name.size());
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
    if (ec != std::errc() || end == text.data() || end == text.data() + text.size() || *end != '\n')
      return std::nullopt;
    text.remove_prefix(size_t(end - text.data()) + 1);
  }
  if (!text.empty()) return std::nullopt;
  return u;
}

std::string format_usage(const CacheUsage& u) {
  return std::string(kStatsMagic) + "entries " + std::to_string(u.entries) + "\nbytes " +
         std::to_string(u.bytes) + "\n";
}

/// Reads the stats file open as `fd` (at most a small, fixed number of bytes).
std::optional<CacheUsage> read_usage(int fd) {
  char buf[128];
  size_t n = 0;
  for (;;) {
    ssize_t r = ::pread(fd, buf + n, sizeof buf - n, off_t(n));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += size_t(r);
    if (n == sizeof buf) return std::nullopt; // longer than any stats file fxc writes
  }
  return parse_usage(std::string_view(buf, n));
}

/// The stats file of a cache directory, open and exclusively locked while this lives (closing
/// the descriptor releases the lock). fd < 0 when it cannot be opened or locked.
struct StatsLock {
  int fd = -1;
  explicit StatsLock(const std::string& path) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return;
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      fd = -1;
      return;
    }
  }
  StatsLock(const StatsLock&) = delete;
  StatsLock& operator=(const StatsLock&) = delete;
  ~StatsLock() {
    if (fd >= 0) ::close(fd);
  }
  bool write(const CacheUsage& u) const {
    std::string text = format_usage(u);
    return ::pwrite(fd, text.data(), text.size(), 0) == ssize_t(text.size()) &&
           ::ftruncate(fd, off_t(text.size())) == 0;
  }
};

/// One entry file found by a scan.
struct EntryInfo {
  std::string key;
  std::string path;
  uint64_t bytes = 0;
  int64_t mtime_s = 0, mtime_ns = 0; // when it was stored or last hit
};

/// Every `<kk>/<key>.entry` regular file of `dir` (nothing else: not autotune.json, not stats,
/// not temporary files).
std::vector<EntryInfo> scan_entries(const std::string& dir) {
  std::vector<EntryInfo> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string sub = it->path().filename().string();
    if (sub.size() != 2 || sub.find_first_not_of("0123456789abcdef") != std::string::npos) continue;
    std::error_code sec;
    for (fs::directory_iterator jt(it->path(), sec), jend; !sec && jt != jend; jt.increment(sec)) {
      const std::string name = jt->path().filename().string();
      if (name.size() != kKeyDigits + 6 || name.compare(kKeyDigits, 6, ".entry") != 0) continue;
      std::string key = name.substr(0, kKeyDigits);
      if (!is_key(key) || key.compare(0, 2, sub) != 0) continue;
      struct stat st{};
      if (::lstat(jt->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      out.push_back({std::move(key), jt->path().string(), uint64_t(st.st_size),
                     int64_t(st.st_mtim.tv_sec), int64_t(st.st_mtim.tv_nsec)});
    }
  }
  return out;
}

/// Scans `dir` and, when its entries total more than `limit` (0: unlimited), removes the least
/// recently used ones but `keep` until they total at most 90% of it. Returns what is left.
CacheUsage scan_and_evict(const std::string& dir, uint64_t limit, const std::string& keep) {
  std::vector<EntryInfo> all = scan_entries(dir);
  CacheUsage u;
  for (const EntryInfo& e : all) {
    ++u.entries;
    u.bytes += e.bytes;
  }
  if (limit == 0 || u.bytes <= limit) return u;
  const uint64_t target = limit - limit / 10;
  // Oldest first; the key breaks ties so that the order does not depend on the scan's.
  std::sort(all.begin(), all.end(), [](const EntryInfo& a, const EntryInfo& b) {
    return std::tie(a.mtime_s, a.mtime_ns, a.key) < std::tie(b.mtime_s, b.mtime_ns, b.key);
  });
  uint64_t evicted = 0, freed = 0;
  Logger& log = process_logger();
  for (const EntryInfo& e : all) {
    if (u.bytes <= target) break;
    if (e.key == keep) continue;
    // A reader that has the entry open keeps reading it whole; a later open misses.
    if (::unlink(e.path.c_str()) != 0 && errno != ENOENT) {
      warn("cannot evict " + e.path + ": " + std::strerror(errno));
      continue;
    }
    // Its check file and key manifest (--explain-cache), beside it.
    ::unlink(check_path_of(e.path).c_str());
    ::unlink((e.path.substr(0, e.path.size() - 6) + ".manifest").c_str());
    --u.entries;
    u.bytes -= e.bytes;
    ++evicted;
    freed += e.bytes;
    if (log.enabled(Component::Cache, Level::Debug))
      log.log(Component::Cache, Level::Debug,
              "evicted " + e.key + " (" + std::to_string(e.bytes) + " bytes)");
  }
  info("evicted " + std::to_string(evicted) + (evicted == 1 ? " entry (" : " entries (") +
       std::to_string(freed) + " bytes); the cache holds " + std::to_string(u.entries) +
       (u.entries == 1 ? " entry, " : " entries, ") + std::to_string(u.bytes) + " bytes (limit " +
       std::to_string(limit) + ")");
  if (u.bytes > limit)
    info("the entry just stored (" + keep + ") alone is over the limit; it is kept");
  return u;
}

} // namespace

std::optional<uint64_t> parse_cache_size(std::string_view text) {
  if (text.empty() || text.size() > 32) return std::nullopt;
  constexpr std::pair<char, unsigned> kSuffixes[] = {{'K', 10}, {'M', 20}, {'G', 30}, {'T', 40}};
  unsigned shift = 0;
  for (auto [letter, bits] : kSuffixes)
    if (text.back() == letter || text.back() == letter - 'A' + 'a') shift = bits;
  if (shift) text.remove_suffix(1);
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (shift && n > (UINT64_MAX >> shift)) return std::nullopt;
  return n << shift;
}

uint64_t cache_max_size(const Options& o) {
  if (!o.cache_max_size.empty()) {
    if (std::optional<uint64_t> n = parse_cache_size(o.cache_max_size)) return *n;
    throw Error("--cache-max-size", "invalid size '" + o.cache_max_size + "': " + kCacheSizeSyntax);
  }
  const char* env = std::getenv("FXC_CACHE_MAX_SIZE");
  if (!env || !*env) return kDefaultCacheMaxSize;
  if (std::optional<uint64_t> n = parse_cache_size(env)) return *n;
  throw Error("FXC_CACHE_MAX_SIZE", "invalid size '" + std::string(env) + "': " + kCacheSizeSyntax);
}

std::optional<CacheUsage> CompileCache::usage() const {
  if (!enabled()) return std::nullopt;
  int fd = ::open((dir_ + "/" + kStatsFile).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<CacheUsage> u = read_usage(fd);
  ::close(fd);
  return u;
}

namespace {

/// Creates `tmp` exclusively, read-only to everyone (an entry is never written in place), and
/// fills it by `fill`. False with errno set when it cannot (EEXIST: the name is taken).
bool create_entry_file(const std::string& tmp, const std::function<bool(int)>& fill) {
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
  if (fd < 0) return false;
  bool ok = fill(fd);
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    errno = err == EEXIST ? EIO : err; // EEXIST means "try another name" to the caller
  }
  return ok;
}

} // namespace

bool CompileCache::store(const std::string& key, std::string_view payload) const {
  return store_entry(key, payload.size(), XXH3_64bits(payload.data(), payload.size()),
                     [&](const std::string& tmp) {
                       return create_entry_file(tmp, [&](int fd) {
                         return write_all(fd, payload.data(), payload.size());
                       });
                     });
}

bool CompileCache::store_file(const std::string& key, const std::string& path) const {
  if (!enabled()) return false;
  int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st{};
  if (in < 0 || ::fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (in >= 0) ::close(in);
    warn("cannot read " + path + ": " + std::strerror(errno) + "; not stored");
    return false;
  }
  const uint64_t size = uint64_t(st.st_size);
  uint64_t sum = 0;
  // The checksum by chunks (the page cache, not this process, holds the bytes).
  if (!checksum_range(in, 0, size, &sum)) {
    ::close(in);
    warn("cannot read " + path + ": " + std::strerror(errno) + "; not stored");
    return false;
  }
  bool stored = store_entry(key, size, sum, [&](const std::string& tmp) {
    // A hard link to the output where both are on one file system: the entry is the output's
    // bytes, read-only from now on (a rebuild finds the output is the entry already).
    if (::link(path.c_str(), tmp.c_str()) == 0) {
      (void)::chmod(tmp.c_str(), 0444);
      return true;
    }
    if (errno == EEXIST) return false;
    return create_entry_file(tmp, [&](int fd) {
      // A reflink of the file's blocks where the file system has them, else an in-kernel copy.
      file_clone_range clone{in, 0, 0, 0};
      if (size > 0 && ::ioctl(fd, FICLONERANGE, &clone) == 0) return true;
      loff_t in_off = 0;
      for (uint64_t left = size; left > 0;) {
        ssize_t n = ::copy_file_range(in, &in_off, fd, nullptr,
                                      size_t(std::min<uint64_t>(left, 1u << 30)), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { // no in-kernel copy here: through a buffer
          std::vector<char> buf(kChunk);
          for (uint64_t off = uint64_t(in_off); off < size; off += kChunk) {
            size_t k = size_t(std::min<uint64_t>(kChunk, size - off));
            if (!pread_all(in, buf.data(), k, off) || !write_all(fd, buf.data(), k)) return false;
          }
          return true;
        }
        left -= uint64_t(n);
      }
      return true;
    });
  });
  ::close(in);
  return stored;
}

bool CompileCache::store_entry(const std::string& key, uint64_t size, uint64_t sum,
                               const std::function<bool(const std::string&)>& make_temp) const {
  if (!enabled()) return false;
  const fs::path final_path = entry_path(key);
  const fs::path folder = final_path.parent_path();
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) {
    warn("cannot create " + folder.string() + ": " + ec.message() + "; not stored");
    return false;
  }
  // A name no other writer uses, in the entry's folder so that the rename stays within one file
  // system.
  std::string tmp;
  bool ok = false;
  for (int attempt = 0; attempt < 16 && !ok; ++attempt) {
    tmp = temp_name(final_path.string());
    ok = make_temp(tmp);
    if (!ok && errno != EEXIST) break;
  }
  if (!ok) {
    warn("cannot write " + final_path.string() + ": " + std::strerror(errno) + "; not stored");
    return false;
  }
  // The rename, the usage it changes and any eviction happen under the stats file's lock, so
  // that concurrent stores count each entry once.
  StatsLock lock(dir_ + "/" + kStatsFile);
  if (lock.fd < 0)
    warn("cannot lock " + dir_ + "/" + kStatsFile + ": " + std::strerror(errno) +
         "; the entry is stored but not counted");
  struct stat old{};
  const bool replaces = ::lstat(final_path.c_str(), &old) == 0 && S_ISREG(old.st_mode);
  struct stat now{};
  if (::rename(tmp.c_str(), final_path.c_str()) != 0 || ::stat(final_path.c_str(), &now) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    warn("cannot write " + final_path.string() + ": " + std::strerror(err) + "; not stored");
    return false;
  }
  // The check file last: a reader that finds none sees no entry. The payload was just written
  // from bytes of known checksum: it is verified in the state it is in now.
  try {
    write_file_bytes(check_path_of(final_path.string()),
                     check_text(key, size, sum, file_identity(now)));
  } catch (const Error& e) {
    ::unlink(final_path.c_str());
    warn(std::string(e.what()) + "; not stored");
    return false;
  }
  info("stored " + key + " (" + std::to_string(size) + " bytes)");
  if (lock.fd >= 0) {
    const uint64_t entry_bytes = size;
    std::optional<CacheUsage> u = read_usage(lock.fd);
    if (u) {
      if (replaces)
        u->bytes -= std::min(u->bytes, uint64_t(old.st_size));
      else
        ++u->entries;
      u->bytes += entry_bytes;
    }
    // No (or a damaged) stats file: count the entries; over the limit: evict.
    if (!u || (max_size_ != 0 && u->bytes > max_size_)) u = scan_and_evict(dir_, max_size_, key);
    if (!lock.write(*u))
      warn("cannot write " + dir_ + "/" + kStatsFile + ": " + std::strerror(errno));
  }
  remove_stale_temps(folder);
  return true;
}

} // namespace fxc
