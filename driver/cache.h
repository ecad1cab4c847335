// The compile cache: opaque artifact bytes stored on disk under a key of everything that decides
// them.
//
// A key is an XXH3-128 digest (32 hex digits) over named fields: fxc's version and the digest of
// its executable, the target, every flag that changes the output, and the digests of the graph file
// and its external weights files (CacheKeyBuilder). An entry is `<dir>/<key[0..1]>/<key>.entry`: a
// 4096-byte header (magic "FXCCACHE", format version, payload offset, the key, the payload's size
// and XXH3-64 checksum, zero padding) followed by the payload as is. Artifacts are compressed
// already (an .fxo holds one zstd frame), so a second compression would save nothing and cost a
// decompression of every hit; the padding puts the payload on a file-system block, so that a hit
// (write_hit) can clone its blocks into the output where the file system shares blocks (reflink),
// else copy them in the kernel, without the payload passing through fxc's memory. Entries are
// written to a temporary file in the same folder and renamed into place, so a concurrent reader
// sees either no entry or a whole one; writers racing on one key all write the same bytes, and the
// last rename wins. A reader that finds an entry that does not check out (bad header, wrong key,
// a size that is not the file's, checksum mismatch) removes it and reports a miss, so the caller
// compiles and stores it again. Hits, misses, stores and discarded entries are logged under the
// `cache` log component (`--log=+cache`). Covered by test/unit/cache_test.cpp and test/cache.sh.
#pragma once

#include "driver/options.h"
#include "frontend/graph.h"

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

/// Accumulates the fields of a cache key. Each field is hashed as its name and value, both
/// length-prefixed, so no two different field lists produce the same stream.
class CacheKeyBuilder {
public:
  CacheKeyBuilder();
  CacheKeyBuilder& add(std::string_view name, std::string_view value);
  /// Adds the file_digest of `path` under `name` (the path itself is not part of the key).
  CacheKeyBuilder& add_file(std::string_view name, const std::string& path);
  /// The key: 32 lowercase hex digits.
  std::string key() const;
  /// "name=value" lines of every field added, for --log=+cache.
  const std::string& description() const { return description_; }

private:
  std::string stream_;
  std::string description_;
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

/// The cache directory `opts` selects: "" under --no-cache; else --cache-dir, else
/// $FXC_CACHE_DIR, else $XDG_CACHE_HOME/fxc, else $HOME/.cache/fxc ("" when none is set).
std::string cache_directory(const Options& opts);

/// One cache directory. Disabled (lookups miss, stores do nothing) when constructed with "".
/// The directory is created on the first store.
class CompileCache {
public:
  explicit CompileCache(std::string dir) : dir_(std::move(dir)) {}

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  /// `<dir>/<key[0..1]>/<key>.entry`.
  std::string entry_path(const std::string& key) const;

  /// The payload stored under `key`, or nullopt on a miss. An entry that fails its checks is
  /// removed (logged as a warning naming the reason) and counts as a miss.
  std::optional<std::string> lookup(const std::string& key) const;

  /// On a hit, writes the payload stored under `key` to the file `path` ("" or "-": standard
  /// output), as writing those bytes would, and returns true; on a miss (as lookup counts them)
  /// returns false and leaves `path` alone. The checksum is verified before `path` is opened. An
  /// existing regular file is overwritten in place and then cut to the payload's size (its pages
  /// are reused rather than freed and allocated again). Throws fxc::Error naming `path` when it
  /// cannot be written.
  bool write_hit(const std::string& key, const std::string& path) const;

  /// Stores `payload` under `key` (temporary file + rename). A cache that cannot be written
  /// (read-only, disk full) is not an error of the compile: that is logged as a warning and
  /// store returns false.
  bool store(const std::string& key, std::string_view payload) const;

private:
  std::string dir_;
};

/// What the compiled code of `o` targets, for the key: the CUDA architecture, the host CPU as
/// LLVM's code generator sees it (codegen/host_cpu.h), or nothing machine-specific for the
/// backends whose graphs the reference interpreter runs.
std::string code_target(const Options& o);

/// The cache of one compile into an .fxo (the default action, and --run with inductor).
struct CompileCacheUse {
  CompileCache cache;
  std::string key;
  /// False when the compile's own output was asked for (a debug trace, --time-passes, --trace,
  /// or compile-time logs such as output_code): a hit would skip the compile that writes it.
  /// Stores still happen.
  bool lookup = true;
};

/// Opens the cache `o` selects for compiling `g` (imported from o.input, with
/// `external_files`); logs the key's fields under --log=+cache and why a lookup is skipped.
CompileCacheUse open_compile_cache(const Options& o, const Graph& g,
                                   const std::vector<std::string>& external_files,
                                   bool debug_trace);

} // namespace fxc
