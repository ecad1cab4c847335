// --report=DIR: the debug trace of one fxc run as a static HTML site; --compare=OTHER.
#include "driver/report.h"

#include "driver/report_html.h"
#include "frontend/diag.h"
#include "runtime/cuda_driver.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <unistd.h>

namespace fxc {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return "";
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_page(const fs::path& p, const std::string& text) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  std::ofstream f(p, std::ios::binary);
  f.write(text.data(), std::streamsize(text.size()));
  if (!f) throw Error(p.string(), "cannot write report page");
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

bool starts_with(const std::string& s, const std::string& p) {
  return s.rfind(p, 0) == 0;
}

std::string esc(const std::string& s) {
  return html_escape(s);
}

// A relative file path and an optional fragment (an html_id: nothing to encode) as an href.
std::string href_of(const std::string& path, const std::string& id = "") {
  return url_path(path) + (id.empty() ? "" : "#" + id);
}

std::string link(const std::string& path, const std::string& text, const std::string& id = "") {
  return "<a href=\"" + esc(href_of(path, id)) + "\">" + esc(text) + "</a>";
}

std::string pre(const std::string& text, const std::string& cls = "") {
  return "<pre" + (cls.empty() ? std::string() : " class=\"" + cls + "\"") + ">" + esc(text) +
         "</pre>\n";
}

// A file of the trace as a link relative to a page `depth` folders below the report's root.
std::string trace_href(const std::string& rel, int depth) {
  std::string up;
  for (int i = 0; i < depth; ++i) up += "../";
  return up + "trace/" + rel;
}

// One generated kernel or extern call of ir_post_fusion.txt, with the FX nodes (of
// fx_graph_transformed.txt) its buffers came from (their "origins" in ir_pre_fusion.txt).
struct KernelEntry {
  std::string name; ///< the kernel's name, or the extern call's buffer
  bool is_extern = false;
  std::string header; ///< its first line in ir_post_fusion.txt
  std::string body;   ///< its lines, header included
  std::vector<std::string> buffers, nodes;
  std::string id() const { return html_id(is_extern ? "extern-" : "kernel-", name); }
};

struct GraphTrace {
  std::string folder, role;
  std::string readable, transformed, pre_fusion, post_fusion, output_code;
  std::vector<KernelEntry> kernels;
  std::vector<std::string> post_fusion_other; ///< blocks that are neither kernel nor extern
  std::map<std::string, std::vector<size_t>> node_kernels; ///< FX node -> kernels computing it
};

struct TraceData {
  std::string root;
  std::vector<GraphTrace> graphs; ///< in the order the trace wrote them
  std::string aot_log, debug_log;
  json bench; ///< fxc/bench.json, or null
};

std::string role_of(const std::string& folder) {
  // <model>__<id>_<role>_<n>.<k>
  size_t dot = folder.rfind('.');
  size_t u2 = folder.rfind('_', dot);
  size_t u1 = u2 == std::string::npos || u2 == 0 ? std::string::npos : folder.rfind('_', u2 - 1);
  if (u1 == std::string::npos) return "graph";
  return folder.substr(u1 + 1, u2 - u1 - 1);
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    size_t b = item.find_first_not_of(' ');
    if (b != std::string::npos) out.push_back(item.substr(b));
  }
  return out;
}

void parse_kernels(GraphTrace& g) {
  // ir_pre_fusion.txt: "<buf>: <Kind>" blocks with an "  origins: a, b" line.
  std::map<std::string, std::vector<std::string>> origins;
  std::string current;
  for (const std::string& l : lines_of(g.pre_fusion)) {
    if (!l.empty() && l[0] != ' ')
      current = l.substr(0, l.find(':'));
    else if (starts_with(l, "  origins: "))
      origins[current] = split_list(l.substr(11));
  }
  // ir_post_fusion.txt: top-level "kernel <name>: ..." and "extern <buf> = ..." blocks; the
  // kernel's buffers are its lines indented by exactly four spaces.
  KernelEntry* k = nullptr;
  std::string other;
  auto flush_other = [&] {
    if (!other.empty()) g.post_fusion_other.push_back(other);
    other.clear();
  };
  for (const std::string& l : lines_of(g.post_fusion)) {
    if (starts_with(l, "kernel ") || starts_with(l, "extern ")) {
      flush_other();
      KernelEntry e;
      e.is_extern = l[0] == 'e';
      size_t end = e.is_extern ? l.find(' ', 7) : l.find(':', 7);
      e.name = l.substr(7, end == std::string::npos ? std::string::npos : end - 7);
      e.header = l;
      if (e.is_extern) e.buffers.push_back(e.name);
      g.kernels.push_back(e);
      k = &g.kernels.back();
      k->body = l + "\n";
      continue;
    }
    if (!l.empty() && l[0] != ' ') {
      flush_other();
      k = nullptr;
    }
    if (!k) {
      other += l + "\n";
      continue;
    }
    k->body += l + "\n";
    if (l.size() > 4 && starts_with(l, "    ") && l[4] != ' ') {
      std::string buf = l.substr(4, l.find(' ', 4) - 4);
      if (starts_with(buf, "buf")) k->buffers.push_back(buf);
    }
  }
  flush_other();
  for (size_t i = 0; i < g.kernels.size(); ++i) {
    KernelEntry& e = g.kernels[i];
    std::set<std::string> seen;
    for (const std::string& b : e.buffers)
      for (const std::string& n : origins[b])
        if (seen.insert(n).second) {
          e.nodes.push_back(n);
          g.node_kernels[n].push_back(i);
        }
  }
}

} // namespace

std::string compare_trace_dir(const std::string& path) {
  if (fs::exists(fs::path(path) / "index.json")) return path;
  if (fs::exists(fs::path(path) / "trace" / "index.json"))
    return (fs::path(path) / "trace").string();
  std::vector<std::string> runs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(path, ec))
    if (e.is_directory() && starts_with(e.path().filename().string(), "run_") &&
        fs::exists(e.path() / "index.json"))
      runs.push_back(e.path().string());
  if (runs.empty())
    throw Error(path, "--compare: no debug trace here (expected index.json, trace/index.json or "
                      "run_*/index.json)");
  std::sort(runs.begin(), runs.end());
  return runs.back();
}

namespace {

TraceData read_trace(const std::string& root) {
  TraceData t;
  t.root = root;
  if (root.empty()) return t;
  // A run that stopped before the trace was finished (FXC_REPRO_LEVEL's early exit) has no
  // index.json yet: the report then shows no graphs.
  if (!fs::exists(fs::path(root) / "index.json")) return t;
  json index;
  try {
    index = json::parse(read_text(fs::path(root) / "index.json"));
  } catch (const json::exception& e) {
    throw Error(root + "/index.json", std::string("cannot read the debug index: ") + e.what());
  }
  std::vector<std::string> folders;
  for (const json& f : index.value("files", json::array())) {
    std::string path = f.value("path", "");
    std::string graph = f.value("graph", "");
    if (!graph.empty() && starts_with(path, "inductor/" + graph + "/") &&
        std::find(folders.begin(), folders.end(), graph) == folders.end())
      folders.push_back(graph);
    if (starts_with(path, "aot/") && path.size() > 4 && t.aot_log.empty())
      t.aot_log = read_text(fs::path(root) / path);
  }
  t.debug_log = read_text(fs::path(root) / "fxc/debug.log");
  std::string bench = read_text(fs::path(root) / "fxc/bench.json");
  if (!bench.empty()) t.bench = json::parse(bench, nullptr, false);
  if (t.bench.is_discarded()) t.bench = json();
  for (const std::string& folder : folders) {
    GraphTrace g;
    g.folder = folder;
    g.role = role_of(folder);
    fs::path d = fs::path(root) / "inductor" / folder;
    g.readable = read_text(d / "fx_graph_readable.txt");
    g.transformed = read_text(d / "fx_graph_transformed.txt");
    g.pre_fusion = read_text(d / "ir_pre_fusion.txt");
    g.post_fusion = read_text(d / "ir_post_fusion.txt");
    g.output_code = read_text(d / "output_code.cpp");
    parse_kernels(g);
    t.graphs.push_back(std::move(g));
  }
  return t;
}

// The name a line of a readable FX graph defines ("    name: "f32[2]" = ..." or "    name = ..."),
// or "" for other lines; *rest_at is where the text after the name begins.
std::string defined_name(const std::string& l, size_t* rest_at) {
  size_t i = 0;
  while (i < l.size() && l[i] == ' ') ++i;
  if (i == 0 || i >= l.size() || !(std::isalpha((unsigned char)l[i]) || l[i] == '_')) return "";
  size_t j = i;
  while (j < l.size() && (std::isalnum((unsigned char)l[j]) || l[j] == '_')) ++j;
  std::string rest = l.substr(j);
  if (!starts_with(rest, " = ") && !starts_with(rest, ": \"")) return "";
  if (starts_with(rest, ": \"")) {
    size_t q = rest.find('"', 3);
    if (q == std::string::npos || rest.compare(q + 1, 3, " = ") != 0) return "";
  }
  *rest_at = j;
  return l.substr(i, j - i);
}

// The kernels of `g` computing each node of a graph that defines `names`: a node's own kernels,
// and (for the readable graph, before decompositions) those of the transformed graph's nodes
// decomposed from it: a transformed node that is not itself in `names` belongs to the longest
// name in `names` that it extends by "_...".
std::map<std::string, std::set<size_t>>
kernels_by_node(const GraphTrace& g, const std::set<std::string>& names, bool readable) {
  std::map<std::string, std::set<size_t>> out;
  for (const auto& [t, list] : g.node_kernels) {
    std::string owner = t;
    if (readable && !names.count(t)) {
      owner.clear();
      for (size_t u = t.rfind('_'); u != std::string::npos && u > 0; u = t.rfind('_', u - 1))
        if (names.count(t.substr(0, u))) {
          owner = t.substr(0, u);
          break;
        }
    }
    if (!owner.empty()) out[owner].insert(list.begin(), list.end());
  }
  return out;
}

// A readable FX graph with an anchor on every node it defines and, after a node, links to the
// kernels that compute it.
std::string render_graph(const GraphTrace& g, const std::string& text, const std::string& prefix,
                         bool readable) {
  std::set<std::string> names;
  size_t at = 0;
  for (const std::string& l : lines_of(text)) {
    std::string n = defined_name(l, &at);
    if (!n.empty()) names.insert(n);
  }
  const std::map<std::string, std::set<size_t>> kernels = kernels_by_node(g, names, readable);
  std::set<std::string> done;
  std::string out = "<pre class=\"long graph\">";
  for (const std::string& l : lines_of(text)) {
    std::string n = defined_name(l, &at);
    if (n.empty() || done.count(n)) {
      out += esc(l) + "\n";
      continue;
    }
    done.insert(n);
    size_t indent = l.find_first_not_of(' ');
    out += l.substr(0, indent) + "<span class=\"def\" id=\"" + html_id(prefix, n) + "\">" + esc(n) +
           "</span>" + esc(l.substr(at));
    auto ks = kernels.find(n);
    if (ks != kernels.end())
      for (size_t k : ks->second)
        out += " <a class=\"prov\" href=\"#" + g.kernels[k].id() + "\">&#8594; " +
               esc(g.kernels[k].name) + "</a>";
    out += "\n";
  }
  return out + "</pre>\n";
}

std::string find_ptxas() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string d; std::getline(ss, d, ':');)
      if (!d.empty()) dirs.push_back(d);
  }
  if (const char* cuda = std::getenv("CUDA_HOME"); cuda && *cuda)
    dirs.push_back(std::string(cuda) + "/bin");
  dirs.push_back("/usr/local/cuda/bin");
  for (const std::string& d : dirs) {
    fs::path p = fs::path(d) / "ptxas";
    std::error_code ec;
    if (fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The host's copy bandwidth (read + write) in GB/s: the best of a few 64 MiB memcpys, the
// reference "peak" the --bench steps are measured against on the CPU.
double host_copy_gbps() {
  const size_t n = size_t(64) << 20;
  std::vector<char> a(n, 1), b(n, 0);
  double best = 1e30;
  for (int i = 0; i < 4; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), n);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    a[size_t(i)] = b[n - 1 - size_t(i)]; // keep the copies observable
  }
  return best > 0 ? 2.0 * double(n) / best / 1e9 : 0;
}

// The CUDA device's peak DRAM bandwidth, 0 when there is no device or the driver does not say.
double cuda_peak_gbps() {
  if (!cuda::Context::unavailable_reason().empty()) return 0;
  return cuda::Context::get().info().peak_gbps();
}

struct Section {
  std::string id, title, html;
};

std::string sections_html(const std::vector<Section>& sections) {
  std::string toc = "<p class=\"toc\">";
  std::string body;
  for (const Section& s : sections) {
    toc += "<a href=\"#" + s.id + "\">" + esc(s.title) + "</a> ";
    body += "<h2 id=\"" + s.id + "\">" + esc(s.title) + "</h2>\n" + s.html;
  }
  return toc + "</p>\n" + body;
}

std::string graph_page(const GraphTrace& g, const TraceData& t, const ReportInput& in) {
  std::vector<Section> s;
  std::string head =
      "<h1>" + esc(g.folder) + "</h1>\n<p>" + esc(g.role) + " graph of " + esc(in.input) +
      "; backend " + esc(in.backend) + ", device " + esc(in.device) + ", mode " + esc(in.mode) +
      "; " +
      std::to_string(std::count_if(g.kernels.begin(), g.kernels.end(),
                                   [](const KernelEntry& k) { return !k.is_extern; })) +
      " generated kernels, " +
      std::to_string(std::count_if(g.kernels.begin(), g.kernels.end(),
                                   [](const KernelEntry& k) { return k.is_extern; })) +
      " extern calls.</p>\n";
  if (t.graphs.size() > 1) {
    head += "<p>Other graphs of this run:";
    for (const GraphTrace& o : t.graphs)
      if (o.folder != g.folder) head += " " + link(o.folder + ".html", o.folder);
    head += "</p>\n";
  }
  const std::string dir = "inductor/" + g.folder + "/";
  if (!g.readable.empty())
    s.push_back({"fx-graph", "FX graph (readable)",
                 "<p class=\"note\">" +
                     link(trace_href(dir + "fx_graph_readable.txt", 1), "fx_graph_readable.txt") +
                     ": every value with its shape; &#8594; links go to the kernels computing a "
                     "node (or the nodes decomposed from it).</p>\n" +
                     render_graph(g, g.readable, "node-", true)});
  if (!g.transformed.empty())
    s.push_back(
        {"fx-transformed", "FX graph after decompositions",
         "<p class=\"note\">" +
             link(trace_href(dir + "fx_graph_transformed.txt", 1), "fx_graph_transformed.txt") +
             ": the nodes the kernels' buffers come from.</p>\n" +
             render_graph(g, g.transformed, "t-", false)});
  if (!t.aot_log.empty() && in.mode == "train")
    s.push_back({"aot", "AOT autograd: joint graph and partition",
                 "<details><summary>the joint graph, the partition's saved tensors and recomputed "
                 "nodes</summary>\n" +
                     pre(t.aot_log, "long") + "</details>\n"});
  if (!g.kernels.empty()) {
    std::string table = "<table class=\"kernels\">\n<tr><th>kernel</th><th>loops / call</th>"
                        "<th>FX nodes it computes</th><th>buffers</th><th>code</th></tr>\n";
    std::string bodies;
    for (const KernelEntry& k : g.kernels) {
      std::string nodes;
      for (const std::string& n : k.nodes)
        nodes += (nodes.empty() ? "" : ", ") + std::string("<a href=\"#") + html_id("t-", n) +
                 "\">" + esc(n) + "</a>";
      std::string buffers;
      for (const std::string& b : k.buffers) buffers += (buffers.empty() ? "" : ", ") + esc(b);
      std::string code;
      std::string what = k.header.substr(k.header.find(k.is_extern ? '=' : ':') + 1);
      if (!k.is_extern) {
        std::string ll = dir + "kernels/" + k.name + ".ll",
                    ptx = dir + "kernels/" + k.name + ".ptx";
        std::string ll_text = read_text(fs::path(t.root) / ll),
                    ptx_text = read_text(fs::path(t.root) / ptx);
        if (!ll_text.empty()) code += link(trace_href(ll, 1), "LLVM IR");
        if (!ptx_text.empty()) {
          code += " " + link(trace_href(ptx, 1), "PTX");
          std::string res = ptxas_resources((fs::path(t.root) / ptx).string());
          if (!res.empty()) code += "<br><span class=\"ptxas\">ptxas: " + esc(res) + "</span>";
        }
        bodies += "<h3 id=\"" + html_id("code-", k.name) + "\">" + esc(k.name) +
                  " <a class=\"prov\" href=\"#" + k.id() + "\">&#8593; kernel</a></h3>\n";
        if (!ll_text.empty())
          bodies += "<details><summary>LLVM IR (" + std::to_string(lines_of(ll_text).size()) +
                    " lines)</summary>\n" + pre(ll_text) + "</details>\n";
        if (!ptx_text.empty())
          bodies += "<details><summary>PTX (" + std::to_string(lines_of(ptx_text).size()) +
                    " lines)</summary>\n" + pre(ptx_text) + "</details>\n";
        if (!code.empty()) code += " <a href=\"#" + html_id("code-", k.name) + "\">inline</a>";
      }
      table += "<tr id=\"" + k.id() + "\"><td><code>" +
               esc(k.is_extern ? "extern " + k.name : k.name) + "</code><br><a href=\"#" +
               html_id("ir-", k.name) + "\">IR</a></td><td><code>" + esc(what) +
               "</code></td><td>" + nodes + "</td><td>" + buffers + "</td><td>" + code +
               "</td></tr>\n";
    }
    s.push_back({"kernels", "Kernels and extern calls", table + "</table>\n" + bodies});
  }
  if (!g.pre_fusion.empty())
    s.push_back({"ir-pre", "Loop IR before fusion",
                 "<details><summary>" +
                     link(trace_href(dir + "ir_pre_fusion.txt", 1), "ir_pre_fusion.txt") +
                     ": one block per buffer (" + std::to_string(lines_of(g.pre_fusion).size()) +
                     " lines)</summary>\n" + pre(g.pre_fusion, "long") + "</details>\n"});
  if (!g.post_fusion.empty()) {
    std::string blocks = "<p class=\"note\">" +
                         link(trace_href(dir + "ir_post_fusion.txt", 1), "ir_post_fusion.txt") +
                         ": one box per kernel (its boundary) or extern call, in plan order.</p>\n";
    for (const std::string& o : g.post_fusion_other) blocks += pre(o);
    for (const KernelEntry& k : g.kernels)
      blocks += "<div class=\"kb\" id=\"" + html_id("ir-", k.name) +
                "\"><a class=\"prov\" href=\"#" + k.id() + "\">" +
                esc(k.is_extern ? "extern " + k.name : k.name) + "</a>\n" + pre(k.body) +
                "</div>\n";
    s.push_back({"ir-post", "Loop IR after fusion", blocks});
  }
  if (!g.output_code.empty())
    s.push_back({"output-code", "output_code.cpp",
                 "<p class=\"note\">" +
                     link(trace_href(dir + "output_code.cpp", 1), "output_code.cpp") +
                     ": the host plan as a standalone program.</p>\n<pre class=\"long cpp\">" +
                     highlight_cpp(g.output_code) + "</pre>\n"});
  return html_page(g.folder + " - fxc report", "../index.html", head + sections_html(s));
}

std::string captured_stream(const std::vector<Logger::Captured>& logs, const std::string& stream,
                            const std::string& prefix = "") {
  std::string text;
  for (const Logger::Captured& c : logs)
    if (c.stream == stream && starts_with(c.text, prefix))
      text += c.text + (c.text.empty() || c.text.back() != '\n' ? "\n" : "");
  return text;
}

// Compile time per pass: the driver thread's spans at depth 0 and 1, summed by name.
std::vector<ChartBar> pass_bars(const std::vector<PassSpan>& spans) {
  std::vector<ChartBar> bars;
  std::map<std::pair<int, std::string>, size_t> row;
  for (const PassSpan& s : spans) {
    if (s.thread != 0 || s.depth > 1) continue;
    auto key = std::make_pair(s.depth, s.name);
    auto it = row.find(key);
    if (it == row.end()) {
      row[key] = bars.size();
      bars.push_back({(s.depth ? "\xC2\xB7 " : "") + s.name, 0, "", ""}); // "· " marks nesting
      it = row.find(key);
    }
    bars[it->second].value += s.dur_us / 1000;
  }
  return bars;
}

std::string bench_html(const json& b, const TraceData& t) {
  if (!b.is_object()) return "";
  std::string device = b.value("device", "");
  double peak = device == "cpu" ? host_copy_gbps() : cuda_peak_gbps();
  std::string peak_text =
      peak <= 0         ? "not known for " + device + " (GB/s only)"
      : device == "cpu" ? format_fixed(peak, 1) +
                              " GB/s (this host's memcpy bandwidth, read + write, measured now)"
                        : format_fixed(peak, 1) + " GB/s (the device's memory clock and bus width)";
  auto share = [&](double gbps) {
    return peak > 0 ? ", " + format_fixed(100 * gbps / peak, 1) + "% of peak" : std::string();
  };
  double gbps = b.value("gbps", 0.0);
  std::string h =
      "<table><tr><th>median</th><th>p20</th><th>p80</th><th>runs</th><th>timer</th>"
      "<th>GB/s</th><th>TFLOP/s</th><th>peak bandwidth</th></tr>\n<tr><td class=\"num\">" +
      format_fixed(b.value("median_ms", 0.0), 4) + " ms</td><td class=\"num\">" +
      format_fixed(b.value("p20_ms", 0.0), 4) + " ms</td><td class=\"num\">" +
      format_fixed(b.value("p80_ms", 0.0), 4) + " ms</td><td class=\"num\">" +
      std::to_string(b.value("runs", 0)) + "</td><td>" + esc(b.value("timer", "")) +
      "</td><td class=\"num\">" + format_fixed(gbps, 2) + share(gbps) + "</td><td class=\"num\">" +
      format_fixed(b.value("tflops", 0.0), 3) + "</td><td>" + esc(peak_text) +
      "</td></tr></table>\n";
  std::vector<ChartBar> bars;
  std::map<std::string, const GraphTrace*> folders;
  for (const GraphTrace& g : t.graphs) folders[g.folder] = &g;
  // A kernel step links to its kernel, an extern step (named by its node) to its extern call.
  auto step_anchor = [&](const GraphTrace& g, const std::string& name, bool kernel) {
    if (kernel) return html_id("kernel-", name);
    for (const KernelEntry& k : g.kernels)
      if (k.is_extern && std::find(k.nodes.begin(), k.nodes.end(), name) != k.nodes.end())
        return k.id();
    return html_id("t-", name);
  };
  for (const json& s : b.value("steps", json::array())) {
    std::string graph = s.value("graph", ""), name = s.value("name", "");
    bool kernel = s.value("kind", "") == "kernel";
    double sg = s.value("gbps", 0.0);
    std::string href;
    if (folders.count(graph))
      href = href_of("graphs/" + graph + ".html", step_anchor(*folders[graph], name, kernel));
    bars.push_back({(t.graphs.size() > 1 ? role_of(graph) + " " : std::string()) +
                        (kernel ? "" : "extern ") + name,
                    s.value("median_ms", 0.0), format_fixed(sg, 2) + " GB/s" + share(sg), href});
  }
  h += "<h3>Run time per step (median of the profiled runs)</h3>\n";
  if (peak > 0)
    h += "<p class=\"note\">A step's GB/s counts the bytes it must move; within a run the steps "
         "follow each other with no cache flush between them, so a step whose operands are still "
         "cached can pass 100% of the peak, which is DRAM's.</p>\n";
  h += svg_bar_chart("run time per step", bars, "ms", 4);
  return h;
}

std::string compare_page(const TraceData& cur, const TraceData& old, const ReportInput& in) {
  std::string h = "<h1>What changed</h1>\n<p>This run (" + esc(in.input) + ") against " +
                  esc(in.compare) + " (trace " + esc(old.root) + ").</p>\n";
  std::map<std::string, const GraphTrace*> old_graphs, cur_graphs;
  for (const GraphTrace& g : old.graphs) old_graphs[g.folder] = &g;
  for (const GraphTrace& g : cur.graphs) cur_graphs[g.folder] = &g;
  std::string graphs_changed;
  for (const auto& [f, g] : cur_graphs)
    if (!old_graphs.count(f))
      graphs_changed += "<li class=\"add\">graph added: " + esc(f) + "</li>\n";
  for (const auto& [f, g] : old_graphs)
    if (!cur_graphs.count(f))
      graphs_changed += "<li class=\"del\">graph removed: " + esc(f) + "</li>\n";
  h += "<h2 id=\"graphs\">Graphs</h2>\n" + (graphs_changed.empty()
                                                ? "<p>The same graphs.</p>\n"
                                                : "<ul>\n" + graphs_changed + "</ul>\n");
  std::string kernels, fusion;
  size_t added = 0, removed = 0, moved = 0;
  for (const auto& [f, g] : cur_graphs) {
    auto it = old_graphs.find(f);
    if (it == old_graphs.end()) continue;
    const GraphTrace& o = *it->second;
    std::set<std::string> cur_names, old_names;
    for (const KernelEntry& k : g->kernels)
      if (!k.is_extern) cur_names.insert(k.name);
    for (const KernelEntry& k : o.kernels)
      if (!k.is_extern) old_names.insert(k.name);
    std::string rows;
    for (const KernelEntry& k : g->kernels)
      if (!k.is_extern && !old_names.count(k.name)) {
        ++added;
        std::string nodes;
        for (const std::string& n : k.nodes) nodes += (nodes.empty() ? "" : ", ") + n;
        rows += "<tr class=\"add\"><td>added</td><td>" +
                link("graphs/" + f + ".html", k.name, k.id()) + "</td><td>" + esc(nodes) +
                "</td></tr>\n";
      }
    for (const KernelEntry& k : o.kernels)
      if (!k.is_extern && !cur_names.count(k.name)) {
        ++removed;
        std::string nodes;
        for (const std::string& n : k.nodes) nodes += (nodes.empty() ? "" : ", ") + n;
        rows += "<tr class=\"del\"><td>removed</td><td><code>" + esc(k.name) + "</code></td><td>" +
                esc(nodes) + "</td></tr>\n";
      }
    if (!rows.empty())
      kernels += "<h3>" + esc(f) +
                 "</h3>\n<table><tr><th></th><th>kernel</th><th>FX nodes</th></tr>\n" + rows +
                 "</table>\n";
    // Fusion decisions: the nodes each node shares its kernel with, before and after.
    auto groups = [](const GraphTrace& gt) {
      std::map<std::string, std::pair<std::string, std::string>> m; // node -> (kernel, members)
      for (const KernelEntry& k : gt.kernels) {
        std::string members;
        for (const std::string& n : k.nodes) members += (members.empty() ? "" : ", ") + n;
        for (const std::string& n : k.nodes)
          if (!m.count(n)) m[n] = {(k.is_extern ? "extern " : "") + k.name, members};
      }
      return m;
    };
    auto gc = groups(*g), go = groups(o);
    std::string frows;
    for (const auto& [node, now] : gc) {
      auto was = go.find(node);
      if (was == go.end() || was->second.second == now.second) continue;
      ++moved;
      frows += "<tr><td><code>" + esc(node) + "</code></td><td class=\"del\">" +
               esc(was->second.first) + ": " + esc(was->second.second) + "</td><td class=\"add\">" +
               esc(now.first) + ": " + esc(now.second) + "</td></tr>\n";
    }
    if (!frows.empty())
      fusion += "<h3>" + esc(f) +
                "</h3>\n<table><tr><th>FX node</th><th>before: kernel and its "
                "nodes</th><th>now</th></tr>\n" +
                frows + "</table>\n";
  }
  h += "<h2 id=\"kernels\">Kernels added and removed</h2>\n<p>" + std::to_string(added) +
       " added, " + std::to_string(removed) + " removed.</p>\n" + kernels;
  h += "<h2 id=\"fusion\">Fusion decisions</h2>\n<p>" + std::to_string(moved) +
       " FX nodes share their kernel with other nodes than before.</p>\n" + fusion;
  h += "<h2 id=\"steps\">Step times</h2>\n";
  if (!cur.bench.is_object() || !old.bench.is_object()) {
    h += "<p>Step times need --bench in both runs (fxc/bench.json in the trace): " +
         std::string(cur.bench.is_object() ? "" : "not in this run; ") +
         (old.bench.is_object() ? "" : "not in the other run.") + "</p>\n";
  } else {
    auto pct = [](double a, double b) {
      return b > 0 ? (a >= b ? "+" : "") + format_fixed(100 * (a - b) / b, 1) + "%"
                   : std::string("");
    };
    double mc = cur.bench.value("median_ms", 0.0), mo = old.bench.value("median_ms", 0.0);
    h += "<p>Median " + format_fixed(mo, 4) + " ms &#8594; " + format_fixed(mc, 4) + " ms (" +
         esc(pct(mc, mo)) +
         ").</p>\n<table><tr><th>step</th><th>before ms</th><th>now ms</th>"
         "<th>change</th></tr>\n";
    std::map<std::string, double> before;
    for (const json& s : old.bench.value("steps", json::array()))
      before[s.value("graph", "") + " " + s.value("name", "")] += s.value("median_ms", 0.0);
    std::set<std::string> shown;
    for (const json& s : cur.bench.value("steps", json::array())) {
      std::string key = s.value("graph", "") + " " + s.value("name", "");
      if (!shown.insert(key).second) continue;
      double now = s.value("median_ms", 0.0);
      auto b = before.find(key);
      h += "<tr" + std::string(b == before.end() ? " class=\"add\"" : "") + "><td>" + esc(key) +
           "</td><td class=\"num\">" + (b == before.end() ? "-" : format_fixed(b->second, 4)) +
           "</td><td class=\"num\">" + format_fixed(now, 4) + "</td><td class=\"num\">" +
           (b == before.end() ? "new" : esc(pct(now, b->second))) + "</td></tr>\n";
    }
    for (const auto& [key, ms] : before)
      if (!shown.count(key))
        h += "<tr class=\"del\"><td>" + esc(key) + "</td><td class=\"num\">" + format_fixed(ms, 4) +
             "</td><td class=\"num\">-</td><td>removed</td></tr>\n";
    h += "</table>\n";
  }
  return html_page("compare - fxc report", "index.html", h);
}

std::string index_page(const TraceData& t, const ReportInput& in, bool has_compare,
                       const std::vector<std::string>& minifier_files) {
  std::vector<Section> s;
  std::string head = "<h1>fxc report: " + esc(fs::path(in.input).filename().string()) + "</h1>\n";
  head += "<table class=\"summary\"><tr><th>input</th><td><code>" + esc(in.input) +
          "</code></td></tr>\n<tr><th>action</th><td>" + esc(in.action) +
          "</td></tr>\n<tr><th>backend</th><td>" + esc(in.backend) +
          "</td></tr>\n<tr><th>device</th><td>" + esc(in.device) +
          "</td></tr>\n<tr><th>mode</th><td>" + esc(in.mode) +
          "</td></tr>\n<tr><th>exit status</th><td class=\"" + (in.status == 0 ? "ok" : "bad") +
          "\">" + std::to_string(in.status) + "</td></tr>\n<tr><th>command</th><td><code>" +
          esc(in.command) + "</code></td></tr>\n</table>\n";
  if (has_compare)
    head += "<p>" + link("compare.html", "What changed against " + in.compare) + "</p>\n";

  std::string graphs;
  if (t.graphs.empty()) {
    graphs = "<p>No graph was compiled by this process (" +
             std::string(in.action == "bisect" || in.action == "minify"
                             ? "the failure tools compile each candidate in a child process"
                         : in.action.find("artifact") != std::string::npos
                             ? "an artifact holds its compiled plan"
                             : "nothing reached inductor's stages") +
             ").</p>\n";
  } else {
    graphs = "<table><tr><th>graph</th><th>role</th><th>backend</th><th>device</th><th>mode</th>"
             "<th>kernels</th><th>extern calls</th></tr>\n";
    for (const GraphTrace& g : t.graphs) {
      size_t ext = size_t(std::count_if(g.kernels.begin(), g.kernels.end(),
                                        [](const KernelEntry& k) { return k.is_extern; }));
      graphs += "<tr><td>" + link("graphs/" + g.folder + ".html", g.folder) + "</td><td>" +
                esc(g.role) + "</td><td>" + esc(in.backend) + "</td><td>" + esc(in.device) +
                "</td><td>" + esc(in.mode) + "</td><td class=\"num\">" +
                std::to_string(g.kernels.size() - ext) + "</td><td class=\"num\">" +
                std::to_string(ext) + "</td></tr>\n";
    }
    graphs += "</table>\n";
  }
  s.push_back({"graphs", "Graphs compiled", graphs});

  std::vector<ChartBar> bars = pass_bars(in.passes);
  double total = 0;
  for (const ChartBar& b : bars)
    if (b.label.rfind("\xC2\xB7 ", 0) != 0) total += b.value;
  s.push_back({"compile-time", "Compile time per pass",
               "<p>" + format_fixed(total, 3) +
                   " ms in top-level passes (nested passes marked &#183;; "
                   "the driver's thread).</p>\n" +
                   svg_bar_chart("compile time per pass", bars, "ms")});

  if (t.bench.is_object()) s.push_back({"bench", "Run time (--bench)", bench_html(t.bench, t)});

  auto log_section = [&](const std::string& id, const std::string& title, const std::string& text,
                         const std::string& none) {
    s.push_back(
        {id, title, text.empty() ? "<p class=\"note\">" + esc(none) + "</p>\n" : pre(text)});
  };
  std::string cache =
      captured_stream(in.logs, "cache") + captured_stream(in.logs, "driver", "compile cache");
  log_section("cache", "Compile cache: hits and misses", cache,
              "The compile cache was not consulted (this action does not use it).");
  log_section("guards", "Guards", captured_stream(in.logs, "guards"),
              "No guards were checked (they are checked when a graph runs: --run, --bench).");
  log_section("recompiles", "Recompiles", captured_stream(in.logs, "recompiles"),
              "No recompiles: every input matched the shapes the graph was compiled for.");
  log_section("fallbacks", "Fallbacks (graph breaks)", captured_stream(in.logs, "graph_breaks"),
              "No fallbacks: every op had an inductor lowering.");
  log_section("perf-hints", "Performance hints", captured_stream(in.logs, "perf_hints"),
              "No performance hints.");
  std::string fusion = captured_stream(in.logs, "fusion");
  if (!fusion.empty())
    s.push_back({"fusion", "Fusion decisions",
                 "<details><summary>" + std::to_string(lines_of(fusion).size()) +
                     " lines</summary>\n" + pre(fusion) + "</details>\n"});
  std::string autotune = captured_stream(in.logs, "autotune");
  if (!autotune.empty()) log_section("autotune", "Autotuning", autotune, "");

  if (!in.failure_tool_output.empty() || !minifier_files.empty()) {
    std::string h = in.failure_tool_output.empty() ? "" : pre(in.failure_tool_output);
    if (!minifier_files.empty()) {
      h += "<p>The repro (minifier/):</p>\n<ul>\n";
      for (const std::string& f : minifier_files)
        h += "<li>" + link("minifier/" + f, f) + "</li>\n";
      h += "</ul>\n";
      std::string sh = read_text(fs::path(in.dir) / "minifier" / "repro.sh");
      if (!sh.empty()) h += pre(sh);
    }
    s.push_back({"failure-tools", in.action == "bisect" ? "Bisect" : "Minifier and repro", h});
  }

  std::string files;
  if (!in.chrome_trace.empty())
    files += "<li>" + link(in.chrome_trace, in.chrome_trace) +
             ": a Chrome trace of the compile passes" +
             (t.bench.is_object() ? std::string(" and the kernels of one --bench run") : "") +
             "; open it in <a href=\"https://ui.perfetto.dev\">Perfetto</a> (Open trace file) or "
             "chrome://tracing</li>\n";
  if (!t.root.empty()) {
    files += "<li>" + link("trace/index.json", "trace/index.json") +
             ": the debug trace's manifest</li>\n";
    if (!t.debug_log.empty())
      files += "<li>" + link("trace/fxc/debug.log", "trace/fxc/debug.log") +
               ": what the driver did, stage by stage</li>\n";
  }
  if (!files.empty()) s.push_back({"files", "Files", "<ul>\n" + files + "</ul>\n"});
  if (!t.debug_log.empty()) s.push_back({"debug-log", "Driver log", pre(t.debug_log)});
  return html_page("fxc report: " + fs::path(in.input).filename().string(), "",
                   head + sections_html(s));
}

} // namespace

LogSettings report_log_capture() {
  LogSettings s;
  for (Artifact a : {Artifact::GraphBreaks, Artifact::Guards, Artifact::Recompiles,
                     Artifact::Fusion, Artifact::PerfHints})
    s.artifacts[size_t(a)] = true;
  s.levels[size_t(Component::Cache)] = Level::Info;
  s.levels[size_t(Component::Driver)] = Level::Info;
  s.levels[size_t(Component::Autotune)] = Level::Info;
  return s;
}

std::string ptxas_resources(const std::string& ptx_path) {
  static const std::string ptxas = find_ptxas();
  if (ptxas.empty()) return "";
  std::string ptx = read_text(ptx_path);
  size_t at = ptx.find(".target ");
  if (at == std::string::npos) return "";
  std::string arch = ptx.substr(at + 8, ptx.find_first_of(" ,\n", at + 8) - at - 8);
  std::string cmd = shell_quote(ptxas) + " -v --gpu-name=" + shell_quote(arch) + " -o /dev/null " +
                    shell_quote(ptx_path) + " 2>&1";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  int status = ::pclose(p);
  if (status != 0) return "";
  // "ptxas info    : Used 32 registers, ..." and "N bytes stack frame, N bytes spill stores,
  // N bytes spill loads".
  auto number_before = [&](const std::string& what) -> std::string {
    size_t w = out.find(what);
    if (w == std::string::npos || w == 0) return "";
    size_t e = w, b = w;
    while (e > 0 && out[e - 1] == ' ') --e;
    b = e;
    while (b > 0 && std::isdigit((unsigned char)out[b - 1])) --b;
    return out.substr(b, e - b);
  };
  std::string regs = number_before(" registers"), stack = number_before(" bytes stack frame"),
              stores = number_before(" bytes spill stores"),
              loads = number_before(" bytes spill loads");
  if (regs.empty()) return "";
  return "registers " + regs + ", spill stores " + (stores.empty() ? "0" : stores) +
         " B, spill loads " + (loads.empty() ? "0" : loads) + " B, stack " +
         (stack.empty() ? "0" : stack) + " B";
}

void write_report(const ReportInput& in) {
  fs::path dir(in.dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(in.dir, "cannot create the report directory: " + ec.message());
  const bool minifier_in_place =
      !in.minifier_dir.empty() &&
      fs::weakly_canonical(in.minifier_dir, ec) == fs::weakly_canonical(dir / "minifier", ec);
  for (const char* old : {"index.html", "compare.html", "graphs", "trace", "minifier"})
    if (!(minifier_in_place && std::string(old) == "minifier")) fs::remove_all(dir / old, ec);
  // Moves (a trace written for the report) or copies (the user's debug directory's) `from`.
  auto bring = [&](const std::string& from, const fs::path& to, bool move) {
    std::error_code ec2;
    if (move) fs::rename(from, to, ec2);
    if (move && !ec2) return;
    ec2.clear();
    fs::copy(from, to, fs::copy_options::recursive, ec2);
    if (ec2) throw Error(from, "cannot copy into the report: " + ec2.message());
  };
  if (!in.trace_root.empty()) bring(in.trace_root, dir / "trace", in.trace_for_report);
  std::vector<std::string> minifier_files;
  if (!in.minifier_dir.empty() && fs::is_directory(in.minifier_dir)) {
    if (!minifier_in_place) bring(in.minifier_dir, dir / "minifier", false);
    for (const auto& e : fs::directory_iterator(dir / "minifier"))
      minifier_files.push_back(e.path().filename().string());
    std::sort(minifier_files.begin(), minifier_files.end());
  }
  TraceData t = read_trace(in.trace_root.empty() ? "" : (dir / "trace").string());
  if (!in.bench_json.empty()) t.bench = json::parse(in.bench_json);
  for (const GraphTrace& g : t.graphs)
    write_page(dir / "graphs" / (g.folder + ".html"), graph_page(g, t, in));
  bool compare = !in.compare.empty();
  if (compare) {
    TraceData old = read_trace(compare_trace_dir(in.compare));
    write_page(dir / "compare.html", compare_page(t, old, in));
  }
  write_page(dir / "index.html", index_page(t, in, compare, minifier_files));
}

} // namespace fxc
