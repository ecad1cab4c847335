// The compile cache: key digests, and checksummed entries written atomically and copied in-kernel.
#include "driver/cache.h"

#include "driver/logging.h"
#ifdef FXC_HAVE_CODEGEN
#include "codegen/host_cpu.h"
#endif
#include "frontend/diag.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <linux/fs.h>
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

[[maybe_unused]] bool is_key(const std::string& key) {
  return key.size() == kKeyDigits && key.find_first_not_of("0123456789abcdef") == std::string::npos;
}

void warn(const std::string& msg) {
  process_logger().log(Component::Cache, Level::Warning, msg);
}
void info(const std::string& msg) {
  process_logger().log(Component::Cache, Level::Info, msg);
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= size_t(w);
  }
  return true;
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
  struct stat st {};
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

/// The XXH3-64 of the payload of `e`, read a chunk at a time. False on a read error.
bool payload_checksum(const EntryFile& e, uint64_t* sum) {
  XXH3_state_t* st = XXH3_createState();
  assert(st && "XXH3_createState failed");
  XXH3_64bits_reset(st);
  std::string buf(std::min<uint64_t>(e.size, kChunk), '\0');
  bool ok = true;
  for (uint64_t off = 0; off < e.size && ok;) {
    size_t n = size_t(std::min<uint64_t>(buf.size(), e.size - off));
    ok = pread_all(e.fd, buf.data(), n, kPayloadOffset + off);
    if (ok) XXH3_64bits_update(st, buf.data(), n);
    off += n;
  }
  *sum = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return ok;
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
  return *this;
}

CacheKeyBuilder& CacheKeyBuilder::add_file(std::string_view name, const std::string& path) {
  return add(name, file_digest(path));
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
  k.add("allow-tf32", o.allow_tf32 ? "1" : "0");
  k.add("max-autotune", o.max_autotune ? "1" : "0");
  k.add("verify-each", o.verify_each ? "1" : "0");
  for (const std::string& p : o.plugins) k.add_file("plugin", p);
  k.add_file("graph", o.input);
  for (const std::string& f : external_files) k.add_file("weights", f);
  k.add("name", g.name);
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
  return host_cpu_description();
#else
  return "no code generator";
#endif
}

CompileCacheUse open_compile_cache(const Options& o, const Graph& g,
                                   const std::vector<std::string>& external_files,
                                   bool debug_trace) {
  CompileCacheUse u{CompileCache(cache_directory(o)), "", true};
  if (!u.cache.enabled()) return u;
  try {
    fxc_binary_digest();
  } catch (const Error& e) {
    warn(std::string(e.what()) + "; the compile cache is off");
    return {CompileCache(""), "", false};
  }
  CacheKeyBuilder k = compile_cache_key(o, "fxo", code_target(o), g, external_files);
  u.key = k.key();
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
  if (!asked.empty()) {
    u.lookup = false;
    log.log(Component::Cache, Level::Info,
            "not looking up " + u.key + ": " + asked + " needs the compile to run");
  }
  return u;
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
  struct stat now {};
  if (::stat(path.c_str(), &now) == 0 && now.st_ino == e.st.st_ino && now.st_dev == e.st.st_dev)
    ::unlink(path.c_str());
  warn("discarding corrupt entry " + path + " (" + why + "); it will be rebuilt");
  info("miss " + key);
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
  info("hit " + key + " (" + std::to_string(e.size) + " bytes)");
  if (out_path.empty() || out_path == "-") {
    std::fflush(stdout);
    if (!copy_buffered(e, STDOUT_FILENO)) throw Error(out_path, "cannot write output file");
    return true;
  }
  // Not O_TRUNC: overwriting an existing output in place reuses its pages, where truncating frees
  // them all and the copy allocates them again; the file is cut to the payload's size after.
  int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) throw Error(out_path, "cannot write output file");
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0;
  if (ok && S_ISREG(st.st_mode))
    ok = copy_to_regular(e, fd) && ::ftruncate(fd, off_t(e.size)) == 0;
  else if (ok)
    ok = copy_buffered(e, fd); // a device or a pipe: nothing to cut
  if (::close(fd) != 0) ok = false;
  if (!ok) throw Error(out_path, "cannot write output file");
  return true;
}

bool CompileCache::store(const std::string& key, std::string_view payload) const {
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
  put_u64(header.data() + 48, payload.size());
  put_u64(header.data() + 56, XXH3_64bits(payload.data(), payload.size()));

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
  bool ok =
      write_all(fd, header.data(), header.size()) && write_all(fd, payload.data(), payload.size());
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmp.c_str(), final_path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    warn("cannot write " + final_path.string() + ": " + std::strerror(err) + "; not stored");
    return false;
  }
  remove_stale_temps(folder);
  info("stored " + key + " (" + std::to_string(payload.size()) + " bytes)");
  return true;
}

} // namespace fxc
