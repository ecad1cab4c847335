// Shared by the libFuzzer harnesses of fxc's readers: the input as a file, and what fxc does
// with a graph once it is read (verify, print, load every weight of a sane size).
#pragma once

#include "frontend/graph.h"
#include "frontend/printer.h"
#include "frontend/verify.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace fxc::fuzz {

/// Weights larger than this are not loaded: a graph may legitimately declare a 40 GB tensor,
/// and allocating it would only report the fuzzer's memory limit.
constexpr size_t kMaxLoadBytes = size_t(1) << 20;

/// Writes the input to a file of its own (the readers take paths): `<dir>/input<suffix>` in a
/// directory private to this process, on /dev/shm when it exists, removed at exit.
inline std::string write_input(const uint8_t* data, size_t size, const char* suffix) {
  struct InputDir {
    std::string dir, file;
    ~InputDir() {
      unlink(file.c_str());
      rmdir(dir.c_str());
    }
  };
  static InputDir input = [] {
    const char* base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : std::getenv("TMPDIR");
    std::string d = std::string(base ? base : "/tmp") + "/fxc-fuzz-" + std::to_string(getpid());
    mkdir(d.c_str(), 0700);
    return InputDir{d, ""};
  }();
  std::string path = input.dir + "/input" + suffix;
  input.file = path;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) std::abort();
  return path;
}

/// What the driver does with an imported graph before compiling it.
inline void exercise(const Graph& g) {
  verify_graph(g);
  (void)print_readable(g);
  for (const auto& [fqn, w] : g.weights)
    if (w.storage && w.storage->nbytes() <= kMaxLoadBytes) (void)w.storage->data();
}

} // namespace fxc::fuzz
