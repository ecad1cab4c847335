// Graph import dispatch: picks the .pt2 or .fxg reader from the file's first bytes.
#include "frontend/import.h"

#include "frontend/diag.h"
#include "frontend/dtype.h"
#include "frontend/log.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>

namespace fxc {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
int64_t weight_bytes(const WeightData& w) {
  return w.meta.numel() * int64_t(dtype_size(w.meta.dtype));
}

// --log=frontend: what was imported. INFO: the format, node, input and weight counts and the
// time; the nodes by op. DEBUG: every input and output with its metadata.
void log_import(const Graph& g, const std::string& path, const char* format, double ms) {
  if (!log_enabled(Component::Frontend, Level::Info)) return;
  std::map<std::string, int> by_op;
  for (const Node& n : g.nodes) ++by_op[n.target];
  int count[4] = {};
  for (const GraphInput& in : g.inputs) ++count[size_t(in.kind)];
  int64_t bytes = 0;
  for (const auto& [fqn, w] : g.weights) bytes += weight_bytes(w);
  char time[32];
  std::snprintf(time, sizeof time, "%.1f", ms);
  log_message(
      Component::Frontend, Level::Info,
      "imported " + path + " (" + format + ") in " + time +
          " ms: " + std::to_string(g.nodes.size()) + " nodes, " + std::to_string(g.inputs.size()) +
          " inputs (" + std::to_string(count[size_t(InputKind::UserInput)]) + " user inputs, " +
          std::to_string(count[size_t(InputKind::Parameter)]) + " parameters, " +
          std::to_string(count[size_t(InputKind::Buffer)]) + " buffers, " +
          std::to_string(count[size_t(InputKind::Constant)]) + " constants), " +
          std::to_string(g.outputs.size()) + " outputs; " + std::to_string(g.weights.size()) +
          " weights, " + std::to_string(bytes) + " bytes");
  std::string ops;
  for (const auto& [op, n] : by_op) ops += (ops.empty() ? "" : ", ") + op + " " + std::to_string(n);
  log_message(Component::Frontend, Level::Info,
              path + ": nodes by op: " + (ops.empty() ? std::string("none") : ops));
  if (!log_enabled(Component::Frontend, Level::Debug)) return;
  std::string text = path + ": inputs and outputs:";
  for (const GraphInput& in : g.inputs) {
    const Value& v = g.values[size_t(in.value)];
    text += "\n  input '" + v.name + "': " +
            (in.kind == InputKind::UserInput ? std::string("user input")
                                             : std::string(input_kind_name(in.kind)));
    if (in.kind != InputKind::UserInput) text += " " + in.fqn;
    text += " " + format_meta(v.meta);
    auto w = g.weights.find(in.fqn);
    if (in.kind != InputKind::UserInput && w != g.weights.end()) {
      text += ", " + std::to_string(weight_bytes(w->second)) + " bytes";
      if (w->second.init) text += ", initialized by " + w->second.init->rule;
    }
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const Value& v = g.values[size_t(g.outputs[i])];
    text += "\n  output " + std::to_string(i) + " '" + v.name + "': " + format_meta(v.meta);
  }
  log_message(Component::Frontend, Level::Debug, text);
}

Graph import_by_contents(const std::string& path, std::vector<std::string>* external_files,
                         const char** format) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(path, std::string("cannot read: ") + std::strerror(errno));
  unsigned char head[64];
  size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  *format = "torch.export archive";
  if (n >= 4 && head[0] == 'P' && head[1] == 'K' && head[2] < 9 && head[3] < 9)
    return import_pt2(path);
  *format = "zstd-compressed fxg";
  if (n >= 4 && head[0] == 0x28 && head[1] == 0xB5 && head[2] == 0x2F && head[3] == 0xFD)
    return import_fxg(path, external_files);
  *format = "fxg";
  size_t i = 0;
  if (n >= 3 && head[0] == 0xEF && head[1] == 0xBB && head[2] == 0xBF) i = 3; // UTF-8 BOM
  while (i < n && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r')) ++i;
  if (i < n && head[i] == '{') return import_fxg(path, external_files);
  // Unrecognised contents: let the reader the name asks for explain what is wrong.
  if (ends_with(path, ".pt2")) return import_pt2(path);
  if (ends_with(path, ".fxg") || ends_with(path, ".fxg.zst"))
    return import_fxg(path, external_files);
  throw Error(path, "not a graph file: expected a .pt2 archive (zip) or an .fxg / .fxg.zst graph");
}

} // namespace

Graph import_graph(const std::string& path, std::vector<std::string>* external_files) {
  auto t0 = std::chrono::steady_clock::now();
  const char* format = "";
  Graph g = import_by_contents(path, external_files, &format);
  log_import(
      g, path, format,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return g;
}

} // namespace fxc
