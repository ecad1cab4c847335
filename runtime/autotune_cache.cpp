// The persistent autotune cache (autotune.json): parse, look up, merge and write atomically.
#include "runtime/autotune_cache.h"

#include "frontend/io_util.h"

#include <nlohmann/json.hpp>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fxc {

namespace {

using json = nlohmann::json;

constexpr int kFormatVersion = 1;
/// A bigger file is not ours (an entry is a few hundred bytes): discarded, not read.
constexpr uint64_t kMaxFileBytes = uint64_t(64) << 20;

/// mkdir -p; true when `dir` exists afterwards.
bool make_dirs(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i)
    if (i == dir.size() || dir[i] == '/') {
      std::string part = dir.substr(0, i);
      if (::mkdir(part.c_str(), 0777) != 0 && errno != EEXIST) return false;
    }
  struct stat st;
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// The file's text; false when it does not exist; *too_big when it is over the limit.
bool read_small_file(const std::string& path, std::string* text, bool* too_big) {
  struct stat st;
  *too_big = false;
  if (::stat(path.c_str(), &st) != 0) return false;
  if (uint64_t(st.st_size) > kMaxFileBytes) {
    *too_big = true;
    return true;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *text = ss.str();
  return true;
}

} // namespace

std::string AutotuneCache::kernel_key(std::string_view code, std::string_view problem) {
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  uint64_t n = code.size();
  XXH3_64bits_update(&st, &n, sizeof n);
  XXH3_64bits_update(&st, code.data(), code.size());
  XXH3_64bits_update(&st, problem.data(), problem.size());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)XXH3_64bits_digest(&st));
  return buf;
}

std::string AutotuneCache::to_json(const std::map<std::string, AutotuneEntry>& entries) {
  json es = json::object();
  for (const auto& [key, e] : entries) {
    json cands = json::array();
    for (const auto& [config, ms] : e.candidates) cands.push_back(json::array({config, ms}));
    es[key] = {{"kernel", e.kernel}, {"choice", e.choice}, {"candidates", cands}};
  }
  json root = {{"version", kFormatVersion}, {"entries", es}};
  return root.dump(2) + "\n";
}

bool AutotuneCache::from_json(const std::string& text,
                              std::map<std::string, AutotuneEntry>* entries, std::string* error) {
  entries->clear();
  if (json_nesting_depth(text) > kMaxJsonDepth) {
    *error = "nested too deeply";
    return false;
  }
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    *error = "not valid JSON";
    return false;
  }
  if (!root.is_object() || !root.contains("version") || root["version"] != kFormatVersion) {
    *error = "not an autotune file of format version " + std::to_string(kFormatVersion);
    return false;
  }
  if (!root.contains("entries") || !root["entries"].is_object()) {
    *error = "no \"entries\" object";
    return false;
  }
  for (const auto& [key, v] : root["entries"].items()) {
    auto bad = [&](const std::string& why) {
      *error = "entry '" + key + "': " + why;
      entries->clear();
      return false;
    };
    if (!v.is_object()) return bad("not an object");
    if (!v.contains("kernel") || !v["kernel"].is_string()) return bad("no \"kernel\" string");
    if (!v.contains("choice") || !v["choice"].is_string()) return bad("no \"choice\" string");
    if (!v.contains("candidates") || !v["candidates"].is_array())
      return bad("no \"candidates\" array");
    AutotuneEntry e;
    e.kernel = v["kernel"].get<std::string>();
    e.choice = v["choice"].get<std::string>();
    for (const json& c : v["candidates"]) {
      if (!c.is_array() || c.size() != 2 || !c[0].is_string() || !c[1].is_number())
        return bad("a candidate is not [\"<config>\", <ms>]");
      e.candidates.push_back({c[0].get<std::string>(), c[1].get<double>()});
    }
    (*entries)[key] = std::move(e);
  }
  return true;
}

void AutotuneCache::load(std::string* note) {
  note->clear();
  entries_.clear();
  if (!enabled()) return;
  std::string text, why;
  bool too_big = false;
  if (!read_small_file(path(), &text, &too_big)) return;
  if (too_big)
    why = "larger than " + std::to_string(kMaxFileBytes) + " bytes";
  else if (from_json(text, &entries_, &why))
    return;
  entries_.clear();
  std::remove(path().c_str());
  *note = "discarded corrupt " + path() + ": " + why;
}

const AutotuneEntry* AutotuneCache::lookup(const std::string& device,
                                           const std::string& key) const {
  auto it = entries_.find(device + "/" + key);
  return it == entries_.end() ? nullptr : &it->second;
}

void AutotuneCache::insert(const std::string& device, const std::string& key, AutotuneEntry e) {
  entries_[device + "/" + key] = std::move(e);
}

bool AutotuneCache::save(std::string* error) const {
  if (!enabled()) return true;
  std::map<std::string, AutotuneEntry> merged;
  std::string text, ignored;
  bool too_big = false;
  if (read_small_file(path(), &text, &too_big) && !too_big) from_json(text, &merged, &ignored);
  for (const auto& [k, e] : entries_) merged[k] = e;
  if (!make_dirs(dir_)) {
    *error = "cannot create " + dir_ + ": " + std::strerror(errno);
    return false;
  }
  std::string tmp = path() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << to_json(merged);
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      *error = "cannot write " + tmp;
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path().c_str()) != 0) {
    *error = "cannot rename " + tmp + " to " + path() + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

} // namespace fxc
