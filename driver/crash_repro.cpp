// Crash reproducers: precomputed at startup, written async-signal-safely on an internal error.
#include "driver/crash_repro.h"

#include "frontend/io_util.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

extern char** environ;

#include <nlohmann/json.hpp>

namespace fxc {

namespace {

namespace fs = std::filesystem;

// Everything the handler touches, built before compiling begins; never resized afterwards.
struct Prepared {
  bool ready = false;
  std::string dir;                                        // the reproducer directory
  std::string input, input_copy;                          // the graph and its copy
  std::vector<std::pair<std::string, std::string>> links; // symlink target, link path
  std::string script_path, script;                        // repro.sh and its text
  std::string json_path;                                  // script_path escaped for JSON
};
Prepared prep;
char copy_buf[1 << 16];

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool copy_file(const char* from, const char* to) {
  int in = ::open(from, O_RDONLY | O_CLOEXEC);
  if (in < 0) return false;
  int out = ::open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = out >= 0;
  while (ok) {
    ssize_t r = ::read(in, copy_buf, sizeof copy_buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      ok = r == 0;
      break;
    }
    ok = write_all(out, copy_buf, size_t(r));
  }
  ::close(in);
  if (out >= 0) ::close(out);
  return ok;
}

// The external weight files a .fxg names ("file", relative to the graph's folder), as plain
// names that can sit next to the copy. Returns the names that cannot (a path with folders).
std::vector<std::string> fxg_weight_files(const std::string& path, std::vector<std::string>* odd) {
  std::vector<std::string> names;
  std::ifstream f(path);
  nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("inputs") || !j["inputs"].is_array()) return names;
  for (const auto& in : j["inputs"]) {
    if (!in.is_object() || !in.contains("file") || !in["file"].is_string()) continue;
    std::string name = in["file"].get<std::string>();
    bool plain =
        !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
    auto& list = plain ? names : *odd;
    bool seen = false;
    for (const auto& n : list) seen = seen || n == name;
    if (!seen) list.push_back(name);
  }
  return names;
}

} // namespace

void prepare_crash_repro(int argc, char** argv, const Options& opts) {
  if (opts.input.empty() || opts.input == "-") return;
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  if (ec) return;
  fs::path input = fs::absolute(opts.input, ec);
  if (ec) return;
  const char* tmpdir = std::getenv("TMPDIR");
  prep.dir =
      std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/fxc-crash-" + std::to_string(::getpid());
  prep.input = input.string();
  std::string base = input.filename().string();
  prep.input_copy = prep.dir + "/" + base;
  prep.script_path = prep.dir + "/repro.sh";

  std::vector<std::string> odd;
  if (input.extension() == ".fxg")
    for (const std::string& name : fxg_weight_files(prep.input, &odd))
      prep.links.emplace_back((input.parent_path() / name).string(), prep.dir + "/" + name);

  std::string exe = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) exe = argv[0];
  std::string s =
      "#!/bin/sh\n# fxc internal compiler error reproducer: the same command line, from "
      "the same\n# folder, on the copy of the input graph next to this script.\n";
  for (const std::string& name : odd)
    s += "# note: weight file " + quote(name) + " is not copied; it is read relative to " +
         quote(input.parent_path().string()) + "\n";
  std::vector<std::string> env; // fxc's own variables (FXC_*), sorted, so the run is the same
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "FXC_", 4) == 0 && std::strchr(*e, '=')) env.emplace_back(*e);
  std::sort(env.begin(), env.end());
  for (const std::string& kv : env) {
    size_t eq = kv.find('=');
    s += "export " + kv.substr(0, eq) + "=" + quote(kv.substr(eq + 1)) + "\n";
  }
  s += "d=$(cd \"$(dirname \"$0\")\" && pwd) || exit 1\n";
  s += "cd " + quote(cwd.string()) + " || exit 1\n";
  s += "exec " + quote(exe);
  for (int i = 1; i < argc; ++i)
    s += std::string(" ") + (argv[i] == opts.input ? "\"$d\"/" + quote(base) : quote(argv[i]));
  s += "\n";
  prep.script = s;
  prep.json_path = nlohmann::json(prep.script_path).dump();
  prep.json_path = prep.json_path.substr(1, prep.json_path.size() - 2);
  prep.ready = true;
}

const char* write_crash_repro() {
  if (!prep.ready) return nullptr;
  if (::mkdir(prep.dir.c_str(), 0755) != 0 && errno != EEXIST) return nullptr;
  if (!copy_file(prep.input.c_str(), prep.input_copy.c_str())) return nullptr;
  for (const auto& [target, link] : prep.links) {
    ::unlink(link.c_str());
    if (::symlink(target.c_str(), link.c_str()) != 0) return nullptr;
  }
  int fd = ::open(prep.script_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  if (fd < 0) return nullptr;
  bool ok = write_all(fd, prep.script.data(), prep.script.size());
  ::close(fd);
  return ok ? prep.script_path.c_str() : nullptr;
}

const char* crash_repro_json_path() {
  return prep.json_path.c_str();
}

} // namespace fxc
