// The debug directory (docs/design.md §4): per-run folder, per-graph folders, debug.log,
// index.json.
#pragma once

#include <string>
#include <vector>

namespace fxc {

/// Collects the files of one run's debug trace. Disabled (every call a no-op) unless created
/// with a directory. Files are written immediately; index.json is written by finish().
class DebugTrace {
public:
  DebugTrace() = default;
  /// Creates `<dir>/run_<YYYY_MM_DD_HH_MM_SS_micro>-pid_<pid>/`. Throws fxc::Error when the
  /// directory cannot be created.
  explicit DebugTrace(const std::string& dir);

  bool enabled() const { return !root_.empty(); }
  const std::string& root() const { return root_; }

  /// Writes `content` to `<root>/<relpath>` and records it in the index under `stage` and
  /// `graph` ("" when not per graph). An empty artifact is an error (fxc::Error): asking for
  /// a trace and getting an empty file must never pass silently.
  void write(const std::string& relpath, const std::string& content, const std::string& stage,
             const std::string& graph = {});
  /// Records a file that was written under root() by other means (e.g. write_fxg) in the
  /// index; an empty or missing file is an error (fxc::Error).
  void record(const std::string& relpath, const std::string& stage, const std::string& graph = {});
  /// Appends a line to fxc/debug.log: "[<stage>] <message>" (+ " (<ms> ms)" when ms >= 0).
  /// Also logged, trace or not, as "[fxc:driver] info: <stage>: <message> (<ms> ms)".
  void log(const std::string& stage, const std::string& message, double ms = -1);
  /// Writes fxc/debug.log and index.json (every file with stage, graph, size and hash).
  void finish();

private:
  struct Entry {
    std::string path, stage, graph, hash;
    size_t size;
  };
  std::string root_;
  std::string log_;
  std::vector<Entry> entries_;
};

/// FNV-1a 64-bit hash of `data` as 16 hex digits (content fingerprints in index.json).
std::string fnv1a_hex(const std::string& data);

} // namespace fxc
