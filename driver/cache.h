// The compile cache: opaque artifact bytes stored on disk under a key of everything that decides
// them.
//
// A key is an XXH3-128 digest (32 hex digits) over named fields: fxc's version and the digest of
// its executable, the target, every flag that changes the output, and the digests of the graph file
// and its external weights files (CacheKeyBuilder). An entry is two files:
// `<dir>/<key[0..1]>/<key>.entry`, the payload as is and read-only (artifacts are compressed
// already: a second compression would save nothing and cost a decompression of every hit); and
// `<key>.check` beside it, a few lines of text: format version, key, the payload's size and
// XXH3-64 checksum, and the payload file's identity (device, inode, size, modification and change
// times) when the checksum was last verified. A hit (write_hit) places the payload in the output
// with a hard link where both are on one file system (no byte copied; ccache's `hard_link`
// mode), else clones its blocks (reflink), else copies them in the kernel; a compile's output is
// linked into the cache the same way when it is stored. So an output placed by the cache is
// read-only, and a rebuild of unchanged inputs finds the output is the entry already. A hit hashes
// the payload only when its identity differs from the verified one: anything that writes the file
// (through any of its links) or changes its times changes the identity, so a changed entry is
// hashed, found corrupt and discarded. Entries and check files are written to temporary files in
// the same folder and renamed into place, the check file last, so a concurrent reader sees either
// no entry or a whole one; writers racing on one key all write the same bytes, and the last
// rename wins. A reader that finds an entry that does not check out (bad check file, wrong key, a
// size that is not the file's, checksum mismatch) removes it and reports a miss, so the caller
// compiles and stores it again.
//
// Eviction: the cache holds at most a size limit of entries (--cache-max-size,
// $FXC_CACHE_MAX_SIZE, default 5 GiB; 0 = unlimited), counted as the entries' file sizes. A hit
// marks its entry used by setting its modification time to now (futimens: no rewrite). The
// directory's `stats` file holds the entries' count and total size; a store renames its entry into
// place and updates `stats` under an exclusive flock of that file, so a store costs no directory
// scan. When a store brings the total over the limit, it scans the entries and removes the least
// recently used (oldest modification time first) until the total is at most 90% of the limit,
// never the entry it just wrote; a missing or unreadable `stats` file is rebuilt by a scan. Only
// `<kk>/<key>.entry` files are counted or evicted (autotune.json and anything else are left alone).
// A reader racing with an eviction either fails to open the entry (a miss) or holds it open and
// reads it whole: unlinking a file does not take it from a reader that has it open. Entries a
// reader discards outside the lock only make `stats` overcount until the next scan.
//
// Hits, misses, stores, evictions and discarded entries are logged under the `cache` log
// component (`--log=+cache`). Covered by test/unit/cache_test.cpp and test/cache.sh.
#pragma once

#include "driver/options.h"
#include "frontend/graph.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fxc {

/// XXH3-128 of `bytes` as 32 lowercase hex digits.
std::string content_digest(std::string_view bytes);

/// content_digest of a file's bytes, read in chunks. Throws fxc::Error naming `path` when it
/// cannot be read.
std::string file_digest(const std::string& path);
/// file_digest(), remembered in `memo_dir` (the cache directory's `digests/`; "" remembers
/// nothing) under the file's identity: device, inode, size and modification and change times in
/// nanoseconds. A file whose times are within the last two seconds is hashed and not
/// remembered (a write in the same clock tick would not change them), as ccache's direct mode
/// does. A memo that does not parse or does not match is ignored and rewritten.
std::string file_digest(const std::string& path, const std::string& memo_dir);

/// One component of a cache key as a manifest records it (driver/remote_cache.h).
struct KeyComponent {
  std::string name;   ///< "allow-tf32", "graph", "weights"
  std::string value;  ///< the value, or the file's path for file components (not in the key)
  std::string digest; ///< content_digest of the value, or the file's digest
};

/// Accumulates the fields of a cache key. Each field is hashed as its name and value, both
/// length-prefixed, so no two different field lists produce the same stream.
class CacheKeyBuilder {
public:
  CacheKeyBuilder();
  CacheKeyBuilder& add(std::string_view name, std::string_view value);
  /// Adds the file_digest of `path` under `name` (the path itself is not part of the key).
  CacheKeyBuilder& add_file(std::string_view name, const std::string& path,
                            const std::string& memo_dir = "");
  /// The key: 32 lowercase hex digits.
  std::string key() const;
  /// "name=value" lines of every field added, for --log=+cache.
  const std::string& description() const { return description_; }
  /// Every field added, in order, with its digest.
  const std::vector<KeyComponent>& components() const { return components_; }

private:
  std::string stream_;
  std::string description_;
  std::vector<KeyComponent> components_;
};

/// The key of compiling `g` (imported from o.input, which read `external_files`) as `o` asks, for
/// the output `product` ("fxo"): fxc's version and executable, `target` (what the code is compiled
/// for: the host CPU or the CUDA architecture), every option that changes the output, the digests
/// of the graph file and of each external weights file, and the graph's name and user-input
/// metadata (the artifact records both; the inputs change when --inputs re-specializes the graph).
/// Throws fxc::Error when a file cannot be read.
CacheKeyBuilder compile_cache_key(const Options& o, const std::string& product,
                                  const std::string& target, const Graph& g,
                                  const std::vector<std::string>& external_files);

/// The direct key (ccache's direct mode) of compiling o.input as `o` asks, for `product` and
/// `target`: compile_cache_key's fields that need no import (fxc, target, options, plugins, the
/// graph file's digest), the graph file's absolute path, the --inputs file's digest and the seed.
/// It names a memo of the full key (direct_remember), so that a hit needs no import.
std::string direct_cache_key(const Options& o, const std::string& product,
                             const std::string& target);

/// What a direct memo says: the full key, and the files the import read besides the graph.
struct DirectHit {
  std::string key;
  std::vector<std::string> external_files;
};

/// The direct memo of `direct_key` in o's cache directory, when there is one, it parses, and
/// every external file it names has the digest it had (file_digest, remembered by identity).
std::optional<DirectHit> direct_lookup(const Options& o, const std::string& direct_key);

/// Remembers that `direct_key` imports to the full `key`, reading `external_files` (with their
/// digests now). A memo that cannot be written is logged and forgotten.
void direct_remember(const Options& o, const std::string& direct_key, const std::string& key,
                     const std::vector<std::string>& external_files);

/// The cache directory `opts` selects: "" under --no-cache; else --cache-dir, else
/// $FXC_CACHE_DIR, else $XDG_CACHE_HOME/fxc, else $HOME/.cache/fxc ("" when none is set).
std::string cache_directory(const Options& opts);

/// The default size limit of a cache directory's entries: 5 GiB.
constexpr uint64_t kDefaultCacheMaxSize = uint64_t(5) << 30;

/// What a cache size may be, for messages.
constexpr const char* kCacheSizeSyntax =
    "expected a number of bytes, optionally with a K, M, G or T suffix (powers of 1024), e.g. "
    "500M; 0 means unlimited";

/// Parses a cache size: decimal digits, optionally followed by K, M, G or T (either case; powers
/// of 1024). nullopt when `text` is anything else or the size does not fit 64 bits.
std::optional<uint64_t> parse_cache_size(std::string_view text);

/// The size limit `o` selects: --cache-max-size, else $FXC_CACHE_MAX_SIZE (when set and not
/// empty), else kDefaultCacheMaxSize; 0 means unlimited. Throws fxc::Error naming the flag or the
/// variable when its value is not a size (parse_options reports that as a usage error first).
uint64_t cache_max_size(const Options& o);

/// The entries' count and total size (bytes of their files), as the `stats` file keeps them.
struct CacheUsage {
  uint64_t entries = 0;
  uint64_t bytes = 0;
};

/// One cache directory. Disabled (lookups miss, stores do nothing) when constructed with "".
/// The directory is created on the first store.
class CompileCache {
public:
  explicit CompileCache(std::string dir, uint64_t max_size = kDefaultCacheMaxSize)
      : dir_(std::move(dir)), max_size_(max_size) {}

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  /// The size limit of the entries; 0: unlimited.
  uint64_t max_size() const { return max_size_; }
  /// What the `stats` file says (nullopt when there is none or it does not parse).
  std::optional<CacheUsage> usage() const;
  /// `<dir>/<key[0..1]>/<key>.entry`.
  std::string entry_path(const std::string& key) const;

  /// The payload stored under `key`, or nullopt on a miss. An entry that fails its checks is
  /// removed (logged as a warning naming the reason) and counts as a miss. A hit marks the entry
  /// used (its modification time becomes now), as write_hit does.
  std::optional<std::string> lookup(const std::string& key) const;

  /// On a hit, writes the payload stored under `key` to the file `path` ("" or "-": standard
  /// output), as writing those bytes would, and returns true; on a miss (as lookup counts them)
  /// returns false and leaves `path` alone. The payload is verified (see above) before `path` is
  /// touched. A new output or a regular file becomes a hard link to the entry (renamed over the
  /// path), else gets a copy; an output that is the entry already only gets a new modification
  /// time. Throws fxc::Error naming `path` when it cannot be written.
  bool write_hit(const std::string& key, const std::string& path) const;

  /// Stores `payload` under `key` (temporary file + rename), updates `stats`, and evicts the
  /// least recently used other entries when the total is over max_size() (down to 90% of it).
  /// A cache that cannot be written (read-only, disk full) is not an error of the compile: that
  /// is logged as a warning and store returns false.
  bool store(const std::string& key, std::string_view payload) const;
  /// store() of the bytes of the file `path`, which are not read into memory: checksummed in
  /// chunks, then hard-linked into the cache (and made read-only) where both are on one file
  /// system, else placed with a reflink (FICLONERANGE) where the file system has them, else
  /// copy_file_range.
  bool store_file(const std::string& key, const std::string& path) const;

private:
  /// store()'s work: `make_temp(path)` creates the payload file at the unused path given (false
  /// with errno EEXIST: try another name), `size` bytes of checksum `sum`; it is renamed into
  /// place and its check file written beside it.
  bool store_entry(const std::string& key, uint64_t size, uint64_t sum,
                   const std::function<bool(const std::string&)>& make_temp) const;
  std::string dir_;
  uint64_t max_size_;
};

/// What the compiled code of `o` targets, for the key: the CUDA architecture, the host CPU as
/// LLVM's code generator sees it (codegen/host_cpu.h), or nothing machine-specific for the
/// backends whose graphs the reference interpreter runs.
std::string code_target(const Options& o);

class RemoteCache;

/// The cache of one compile into an .fxo (the default action, and --run with inductor).
struct CompileCacheUse {
  CompileCache cache;
  std::string key;
  /// False when the compile's own output was asked for (a debug trace, --time-passes, --trace,
  /// or compile-time logs such as output_code): a hit would skip the compile that writes it.
  /// Stores still happen.
  bool lookup = true;
  std::string no_lookup_reason; ///< why lookup is false ("--log=output_code needs ...")
  /// The key's components, stored beside the entry (--explain-cache).
  std::vector<KeyComponent> components;
  /// The second level (--remote-cache), or null.
  std::shared_ptr<RemoteCache> remote;
};

/// What output of the compile itself `o` asks for (a debug trace, --time-passes, --trace, or
/// compile-time logs), which a cache hit would skip: "" when nothing, else what ("--trace").
std::string compile_output_asked(const Options& o, bool debug_trace);

/// Opens the cache `o` selects for compiling `g` (imported from o.input, with
/// `external_files`); logs the key's fields under --log=+cache and why a lookup is skipped.
CompileCacheUse open_compile_cache(const Options& o, const Graph& g,
                                   const std::vector<std::string>& external_files,
                                   bool debug_trace);

/// --log=driver: whether this compile came from the cache (`hit`) or runs the stages, and why.
void log_cache_decision(const CompileCacheUse& u, bool hit);

} // namespace fxc
