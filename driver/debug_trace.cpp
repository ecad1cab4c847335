// The debug directory (docs/design.md §4): per-run folder, per-graph folders, debug.log,
// index.json.
#include "driver/debug_trace.h"

#include "frontend/diag.h"
#include "frontend/log.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fxc {

namespace fs = std::filesystem;

std::string fnv1a_hex(const std::string& data) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

DebugTrace::DebugTrace(const std::string& dir) {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  long micro =
      long(std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
           1000000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char name[96];
  std::snprintf(name, sizeof name, "run_%04d_%02d_%02d_%02d_%02d_%02d_%06ld-pid_%d",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                micro, int(getpid()));
  root_ = (fs::path(dir) / name).string();
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) throw Error(dir, "cannot create debug directory: " + ec.message());
}

void DebugTrace::write(const std::string& relpath, const std::string& content,
                       const std::string& stage, const std::string& graph) {
  if (!enabled()) return;
  if (content.empty())
    throw Error(relpath, "debug trace artifact is empty (stage '" + stage + "')");
  fs::path p = fs::path(root_) / relpath;
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  std::ofstream f(p, std::ios::binary);
  f.write(content.data(), std::streamsize(content.size()));
  if (!f) throw Error(p.string(), "cannot write debug trace file");
  for (Entry& e : entries_)
    if (e.path == relpath) { // rewritten by a later stage: the index describes the final file
      e = {relpath, stage, graph, fnv1a_hex(content), content.size()};
      return;
    }
  entries_.push_back({relpath, stage, graph, fnv1a_hex(content), content.size()});
}

void DebugTrace::record(const std::string& relpath, const std::string& stage,
                        const std::string& graph) {
  if (!enabled()) return;
  std::ifstream f(fs::path(root_) / relpath, std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f.good() && !f.eof()) throw Error(relpath, "cannot read debug trace file");
  if (content.empty())
    throw Error(relpath, "debug trace artifact is empty (stage '" + stage + "')");
  entries_.push_back({relpath, stage, graph, fnv1a_hex(content), content.size()});
}

void DebugTrace::log(const std::string& stage, const std::string& message, double ms) {
  bool driver_log = log_enabled(Component::Driver, Level::Info);
  if (!enabled() && !driver_log) return;
  std::string time;
  if (ms >= 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%.3f ms)", ms);
    time = buf;
  }
  if (driver_log) log_message(Component::Driver, Level::Info, stage + ": " + message + time);
  if (enabled()) log_ += "[" + stage + "] " + message + time + "\n";
}

void DebugTrace::finish() {
  if (!enabled()) return;
  write("fxc/debug.log", log_, "driver");
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const Entry& e : entries_)
    files.push_back({{"path", e.path},
                     {"stage", e.stage},
                     {"graph", e.graph},
                     {"size", e.size},
                     {"fnv1a64", e.hash}});
  nlohmann::ordered_json index = {{"format", "fxc-debug-index"}, {"version", 1}, {"files", files}};
  std::ofstream f(fs::path(root_) / "index.json");
  f << index.dump(1) << "\n";
  if (!f) throw Error(root_ + "/index.json", "cannot write debug index");
}

} // namespace fxc
