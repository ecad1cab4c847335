// Test helpers for files: a scratch directory removed at the end of a test, whole-file I/O.
#pragma once

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

namespace fxc::testing {

/// A fresh directory under the system temp dir ("<prefix><random number>"), removed with
/// everything in it when the object goes.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix) {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / (prefix + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

inline std::string read_all(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void write_all(const std::filesystem::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(s.data(), std::streamsize(s.size()));
}

} // namespace fxc::testing
