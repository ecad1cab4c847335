// Make dependency files: escaping, the rule's text, and writing it atomically.
#include "driver/depfile.h"

#include "frontend/diag.h"
#include "frontend/io_util.h"

#include <filesystem>
#include <set>

namespace fxc {

std::string make_escape(std::string_view path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    char c = path[i];
    if (c == ' ' || c == '\t') {
      // Backslashes right before a blank must be doubled so the blank stays escaped.
      for (size_t j = i; j > 0 && path[j - 1] == '\\'; --j) out += '\\';
      out += '\\';
      out += c;
    } else if (c == '#') {
      out += "\\#";
    } else if (c == '$') {
      out += "$$";
    } else {
      out += c;
    }
  }
  return out;
}

std::string depfile_text(const std::string& target, const std::vector<std::string>& deps) {
  std::string out = target + ":";
  std::set<std::string> seen;
  for (const std::string& d : deps) {
    if (!seen.insert(d).second) continue;
    out += " \\\n  " + make_escape(d);
  }
  return out + "\n";
}

std::string default_depfile_path(const std::string& output) {
  std::filesystem::path p(output);
  return p.replace_extension(".d").string();
}

void write_depfile(const std::string& path, const std::string& text) {
  write_file_bytes(path, text, "cannot write the dependency file");
}

} // namespace fxc
