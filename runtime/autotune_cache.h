// The persistent autotune cache: autotune.json in the compile-cache directory (--max-autotune).
//
// One JSON object, {"version": 1, "entries": {"<device>/<kernel key>": entry}}, where an entry
// is {"kernel": name, "choice": "grain=8", "candidates": [["grain=1", 0.12], ...]} (times in
// milliseconds). The device names the machine the times were measured on ("cpu <triple> <cpu>
// threads=N"); the kernel key is kernel_key() of the kernel's code and problem size, so a
// kernel whose code or size changes is tuned again. Written to a temporary file in the same
// directory and renamed into place; keys are sorted, so the file's text depends only on its
// entries. A file that does not parse or has the wrong shape is discarded (removed, and
// load() says why) and rebuilt. Covered by test/unit/autotune_cache_test.cpp and
// test/autotune.sh.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fxc {

struct AutotuneEntry {
  std::string kernel; ///< the kernel's name when it was tuned (for people reading the file)
  std::string choice; ///< the chosen configuration: "grain=8"
  /// Every candidate with its measured time (ms), in the order tried.
  std::vector<std::pair<std::string, double>> candidates;
};

class AutotuneCache {
public:
  /// The cache file `<dir>/autotune.json`; disabled (lookups miss, save does nothing) with "".
  explicit AutotuneCache(std::string dir) : dir_(std::move(dir)) {}

  bool enabled() const { return !dir_.empty(); }
  std::string path() const { return dir_ + "/autotune.json"; }

  /// 16 hex digits of XXH3-64 over `code` and `problem` (the sizes the kernel runs at).
  static std::string kernel_key(std::string_view code, std::string_view problem);

  /// Reads the file. A missing file is an empty cache; a corrupt one is removed and
  /// `*note` says why (else *note is left empty). Never throws.
  void load(std::string* note);
  const AutotuneEntry* lookup(const std::string& device, const std::string& key) const;
  void insert(const std::string& device, const std::string& key, AutotuneEntry e);
  size_t size() const { return entries_.size(); }

  /// Merges the file's current entries (another compile may have added some) under this
  /// cache's and writes them atomically. Returns false with *error set when it cannot write
  /// (the choices are then only not remembered). Never throws.
  bool save(std::string* error) const;

  /// The file's text for `entries` (sorted keys, two-space indentation, trailing newline).
  static std::string to_json(const std::map<std::string, AutotuneEntry>& entries);
  /// Parses a file's text; false with *error set when it is not a valid autotune file.
  static bool from_json(const std::string& text, std::map<std::string, AutotuneEntry>* entries,
                        std::string* error);

private:
  std::string dir_;
  std::map<std::string, AutotuneEntry> entries_; ///< "<device>/<kernel key>" -> entry
};

} // namespace fxc
