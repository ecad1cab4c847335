// Graph import dispatch: picks the .pt2 or .fxg reader from the file's first bytes.
#include "frontend/import.h"

#include "frontend/diag.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fxc {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
} // namespace

Graph import_graph(const std::string& path, std::vector<std::string>* external_files) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(path, std::string("cannot read: ") + std::strerror(errno));
  unsigned char head[64];
  size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (n >= 4 && head[0] == 'P' && head[1] == 'K' && head[2] < 9 && head[3] < 9)
    return import_pt2(path);
  if (n >= 4 && head[0] == 0x28 && head[1] == 0xB5 && head[2] == 0x2F && head[3] == 0xFD)
    return import_fxg(path, external_files);
  size_t i = 0;
  if (n >= 3 && head[0] == 0xEF && head[1] == 0xBB && head[2] == 0xBF) i = 3; // UTF-8 BOM
  while (i < n && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r')) ++i;
  if (i < n && head[i] == '{') return import_fxg(path, external_files);
  // Unrecognised contents: let the reader the name asks for explain what is wrong.
  if (ends_with(path, ".pt2")) return import_pt2(path);
  if (ends_with(path, ".fxg") || ends_with(path, ".fxg.zst")) return import_fxg(path, external_files);
  throw Error(path, "not a graph file: expected a .pt2 archive (zip) or an .fxg / .fxg.zst graph");
}

} // namespace fxc
