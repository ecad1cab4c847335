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

constexpr char kMagic[8] = {'F', 'X', 'C', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kFormatVersion = 2;
constexpr size_t kKeyDigits = 32;
/// The header's fields: magic, version, payload offset, key, payload size, checksum.
constexpr size_t kHeaderFields = 64;
/// Where the payload starts: the fields zero-padded to a file-system block, so that a hit can
/// clone the payload's blocks (FICLONERANGE needs block-aligned offsets).
constexpr uint64_t kPayloadOffset = 4096;
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

void put_u32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = char((v >> (8 * i)) & 0xff);
}
void put_u64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = char((v >> (8 * i)) & 0xff);
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(p[i])) << (8 * i);
  return v;
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(p[i])) << (8 * i);
  return v;
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

/// An entry file opened for reading, closed with it.
struct EntryFile {
  int fd = -1;
  struct stat st{};
  uint64_t size = 0;     // the payload's, from the header (checked against the file's size)
  uint64_t checksum = 0; // the payload's XXH3-64, from the header
  EntryFile() = default;
  EntryFile(const EntryFile&) = delete;
  EntryFile& operator=(const EntryFile&) = delete;
  ~EntryFile() {
    if (fd >= 0) ::close(fd);
  }
};

/// Checks the header of the entry open as `e` against `key` and the file's size, and fills in
/// the payload's size and checksum. Returns "" when it checks out, else why not; `*io_error` says
/// the file could not be read (not that it is corrupt).
std::string check_header(EntryFile& e, const std::string& key, bool* io_error) {
  *io_error = false;
  if (uint64_t(e.st.st_size) < kPayloadOffset) return "shorter than its header";
  char h[kHeaderFields];
  if (!pread_all(e.fd, h, sizeof h, 0)) {
    *io_error = true;
    return std::strerror(errno);
  }
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0) return "bad magic";
  if (get_u32(h + 8) != kFormatVersion) return "format version " + std::to_string(get_u32(h + 8));
  if (get_u32(h + 12) != kPayloadOffset) return "bad payload offset";
  if (std::string_view(h + 16, kKeyDigits) != key) return "holds another key";
  e.size = get_u64(h + 48);
  e.checksum = get_u64(h + 56);
  const uint64_t have = uint64_t(e.st.st_size) - kPayloadOffset;
  if (have < e.size) return "payload shorter than its header says";
  if (have > e.size) return "bytes after the payload";
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

/// The XXH3-64 of the payload of `e`.
bool payload_checksum(const EntryFile& e, uint64_t* sum) {
  return checksum_range(e.fd, kPayloadOffset, e.size, sum);
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
    if (!pread_all(e.fd, buf.data(), n, kPayloadOffset + off) || !write_all(out, buf.data(), n))
      return false;
    off += n;
  }
  return true;
}

/// Copies the payload of `e` to the start of the regular file `out`: clones its blocks where the
/// file system shares blocks between files (btrfs, XFS), else copies them in the kernel, else
/// through a buffer (another file system than the cache's on an old kernel).
bool copy_to_regular(const EntryFile& e, int out) {
  file_clone_range clone{e.fd, kPayloadOffset, e.size, 0};
  if (e.size > 0 && ::ioctl(out, FICLONERANGE, &clone) == 0) return true;
  loff_t in_off = loff_t(kPayloadOffset), out_off = 0;
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
  return std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " +
         std::to_string(st.st_size) + " " + std::to_string(ns(st.st_mtim)) + " " +
         std::to_string(ns(st.st_ctim));
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

CacheKeyBuilder compile_cache_key(const Options& o, const std::string& product,
                                  const std::string& target, const Graph& g,
                                  const std::vector<std::string>& external_files) {
  CacheKeyBuilder k;
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
  // --dtype rewrites the graph after import: the graph file's digest does not show it.
  k.add("dtype", o.dtype.empty() ? "none" : o.dtype);
  k.add("max-autotune", o.max_autotune ? "1" : "0");
  // CUDA choices are measured on one GPU: a tuned artifact is not another device's.
  if (o.max_autotune && o.device == DeviceKind::Cuda) k.add("autotune-device", cuda_device_name());
  k.add("verify-each", o.verify_each ? "1" : "0");
  // Inputs' digests are remembered beside the local cache's entries (file_digest).
  const std::string dir = cache_directory(o);
  const std::string memo = dir.empty() ? "" : dir + "/digests";
  for (const std::string& p : o.plugins) k.add_file("plugin", p, memo);
  k.add_file("graph", o.input, memo);
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

/// Removes the entry at `path` that `e` read, because of `why`, and logs the miss.
void discard(const std::string& path, const std::string& key, const EntryFile& e,
             const std::string& why) {
  // Remove the entry only if it is still the file that was read: a writer may have renamed a
  // good entry into place meanwhile.
  struct stat now{};
  if (::stat(path.c_str(), &now) == 0 && now.st_ino == e.st.st_ino && now.st_dev == e.st.st_dev)
    ::unlink(path.c_str());
  warn("discarding corrupt entry " + path + " (" + why + "); it will be rebuilt");
  info("miss " + key);
}

/// Marks the entry open as `e` used: its modification time becomes now, which eviction orders
/// by. A cache this process may read but not change (another user's) keeps the old time.
void mark_used(const EntryFile& e) {
  (void)::futimens(e.fd, nullptr);
}

/// Opens the entry of `key` at `path` and checks its header. On a miss (no entry, an unreadable
/// one, or one that does not check out, which is removed) logs it and returns false.
bool open_entry(const std::string& path, const std::string& key, EntryFile& e) {
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
  bool io_error = false;
  std::string why = check_header(e, key, &io_error);
  if (io_error) {
    warn("cannot read " + path + ": " + why);
    info("miss " + key);
    return false;
  }
  if (!why.empty()) {
    discard(path, key, e, why);
    return false;
  }
  return true;
}

} // namespace

std::optional<std::string> CompileCache::lookup(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  const std::string path = entry_path(key);
  EntryFile e;
  if (!open_entry(path, key, e)) return std::nullopt;
  // e.size is the file's own size less the header (check_header), not a number taken on trust.
  std::string payload(size_t(e.size), '\0');
  if (!pread_all(e.fd, payload.data(), payload.size(), kPayloadOffset)) {
    warn("cannot read " + path + ": " + std::strerror(errno));
    info("miss " + key);
    return std::nullopt;
  }
  if (XXH3_64bits(payload.data(), payload.size()) != e.checksum) {
    discard(path, key, e, "checksum mismatch");
    return std::nullopt;
  }
  mark_used(e);
  info("hit " + key + " (" + std::to_string(payload.size()) + " bytes)");
  return payload;
}

bool CompileCache::write_hit(const std::string& key, const std::string& out_path) const {
  if (!enabled()) return false;
  const std::string path = entry_path(key);
  EntryFile e;
  if (!open_entry(path, key, e)) return false;
  // Verified before the output is touched. (Hashing on a second thread during the copy measured
  // no faster on 2 cores: the copy is bound by the page cache, the hash by memory.)
  uint64_t sum = 0;
  if (!payload_checksum(e, &sum)) {
    warn("cannot read " + path + ": " + std::strerror(errno));
    info("miss " + key);
    return false;
  }
  if (sum != e.checksum) {
    discard(path, key, e, "checksum mismatch");
    return false;
  }
  mark_used(e);
  info("hit " + key + " (" + std::to_string(e.size) + " bytes)");
  // An output that already holds the payload (a rebuild of unchanged inputs) is left as it is
  // and only gets a new modification time (about 8 ms of reading for ResNet-50's 94 MB). Else
  // into a new file renamed over the output (OutputFile): a killed run leaves the old output.
  if (!out_path.empty() && out_path != "-" && file_holds(out_path, e.size, sum) &&
      ::utimensat(AT_FDCWD, out_path.c_str(), nullptr, 0) == 0) {
    info("hit " + key + ": " + out_path + " holds it already");
    return true;
  }
  OutputFile out(out_path);
  if (!(out.regular() ? copy_to_regular(e, out.fd()) : copy_buffered(e, out.fd()))) out.fail();
  out.commit();
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
    // Its key manifest (--explain-cache), beside it.
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

bool CompileCache::store(const std::string& key, std::string_view payload) const {
  return store_entry(key, payload.size(), XXH3_64bits(payload.data(), payload.size()),
                     [&](int fd) { return write_all(fd, payload.data(), payload.size()); });
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
  // The checksum by chunks (the page cache, not this process, holds the bytes).
  XXH3_state_t* h = XXH3_createState();
  XXH3_64bits_reset(h);
  std::vector<char> buf(kChunk);
  bool ok = true;
  for (uint64_t off = 0; ok && off < size; off += kChunk) {
    size_t n = size_t(std::min<uint64_t>(kChunk, size - off));
    ok = pread_all(in, buf.data(), n, off);
    if (ok) XXH3_64bits_update(h, buf.data(), n);
  }
  const uint64_t sum = XXH3_64bits_digest(h);
  XXH3_freeState(h);
  if (!ok) {
    ::close(in);
    warn("cannot read " + path + ": " + std::strerror(errno) + "; not stored");
    return false;
  }
  bool stored = store_entry(key, size, sum, [&](int fd) {
    // A reflink of the file's blocks where the file system has them, else an in-kernel copy.
    file_clone_range clone{in, 0, 0, kPayloadOffset};
    if (size > 0 && ::ioctl(fd, FICLONERANGE, &clone) == 0) return true;
    loff_t in_off = 0;
    for (uint64_t left = size; left > 0;) {
      ssize_t n = ::copy_file_range(in, &in_off, fd, nullptr,
                                    size_t(std::min<uint64_t>(left, 1u << 30)), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) { // no in-kernel copy here: through a buffer
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
  ::close(in);
  return stored;
}

bool CompileCache::store_entry(const std::string& key, uint64_t size, uint64_t sum,
                               const std::function<bool(int)>& write_payload) const {
  if (!enabled()) return false;
  const fs::path final_path = entry_path(key);
  const fs::path folder = final_path.parent_path();
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) {
    warn("cannot create " + folder.string() + ": " + ec.message() + "; not stored");
    return false;
  }

  std::string header(kPayloadOffset, '\0');
  std::memcpy(header.data(), kMagic, sizeof kMagic);
  put_u32(header.data() + 8, kFormatVersion);
  put_u32(header.data() + 12, uint32_t(kPayloadOffset));
  std::memcpy(header.data() + 16, key.data(), kKeyDigits);
  put_u64(header.data() + 48, size);
  put_u64(header.data() + 56, sum);

  // A name no other writer uses (pid + random), created exclusively, in the entry's folder so
  // that the rename stays within one file system.
  std::random_device rd;
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    char suffix[64];
    std::snprintf(suffix, sizeof suffix, ".tmp-%ld-%08x", long(::getpid()), unsigned(rd()));
    tmp = final_path.string() + suffix;
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    warn("cannot create a temporary file in " + folder.string() + ": " + std::strerror(errno) +
         "; not stored");
    return false;
  }
  bool ok = write_all(fd, header.data(), header.size()) && write_payload(fd);
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    warn("cannot write " + final_path.string() + ": " + std::strerror(err) + "; not stored");
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
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
    warn("cannot write " + final_path.string() + ": " + std::strerror(err) + "; not stored");
    return false;
  }
  info("stored " + key + " (" + std::to_string(size) + " bytes)");
  if (lock.fd >= 0) {
    const uint64_t entry_bytes = kPayloadOffset + size;
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
