// Log knobs: --log= / FXC_LOGS= (TORCH_LOGS syntax), components with levels, named artifacts.
#include "driver/logging.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

namespace fxc {

namespace {

struct ComponentRow {
  Component component;
  std::string_view name;
  std::string_view description;
};

constexpr ComponentRow kComponents[] = {
    {Component::Frontend, "frontend",
     "what was imported: format, nodes by op, inputs, weights, time; --dtype's casts"},
    {Component::Aot, "aot", "joint graph, partition sizes, saved tensors, recomputed nodes"},
    {Component::Inductor, "inductor", "buffers, kernels, extern calls; +: why nodes did not fuse"},
    {Component::Cache, "cache", "compile-cache lookups, hits, misses and stores"},
    {Component::Driver, "driver", "stages with timings, cache decision, inputs, files written"},
    {Component::Autotune, "autotune", "--max-autotune: candidates timed, choices and cache hits"},
};

struct ArtifactRow {
  Artifact artifact;
  std::string_view name;
  Component owner;
  bool with_debug; ///< also on when `owner` is set to DEBUG (light artifacts only)
  std::string_view description;
};

constexpr ArtifactRow kArtifacts[] = {
    {Artifact::GraphBreaks, "graph_breaks", Component::Inductor, true,
     "every op that falls back to an extern kernel, with the reason"},
    {Artifact::Guards, "guards", Component::Frontend, true,
     "the input guards (dtype, shape, strides, device) of each compiled graph"},
    {Artifact::Recompiles, "recompiles", Component::Cache, true,
     "why a cached artifact could not be reused and the graph was compiled again"},
    {Artifact::AotGraphs, "aot_graphs", Component::Aot, false,
     "the forward and backward graphs AOT autograd produces"},
    {Artifact::IrPreFusion, "ir_pre_fusion", Component::Inductor, false,
     "the loop IR of every buffer before fusion"},
    {Artifact::IrPostFusion, "ir_post_fusion", Component::Inductor, false,
     "the loop IR after fusion: fused groups and their members"},
    {Artifact::OutputCode, "output_code", Component::Inductor, false,
     "the generated host code and kernels"},
    {Artifact::Fusion, "fusion", Component::Inductor, true,
     "fusion decisions: which nodes fused, and why others did not"},
    {Artifact::Schedule, "schedule", Component::Inductor, true,
     "kernel order and the memory plan (buffer reuse, in-place updates)"},
    {Artifact::PerfHints, "perf_hints", Component::Inductor, true,
     "missed optimisations worth knowing about"},
};

static_assert(std::size(kComponents) == kNumComponents, "one row per component");
static_assert(std::size(kArtifacts) == kNumArtifacts, "one row per artifact");

constexpr bool tables_in_enum_order() {
  for (size_t i = 0; i < kNumComponents; ++i)
    if (size_t(kComponents[i].component) != i) return false;
  for (size_t i = 0; i < kNumArtifacts; ++i)
    if (size_t(kArtifacts[i].artifact) != i) return false;
  return true;
}
static_assert(tables_in_enum_order(), "rows are indexed by enum value");

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\n\r");
  return std::string(s.substr(b, e - b + 1));
}

std::string valid_names() {
  std::string s = "all, help";
  for (const ComponentRow& c : kComponents) s += ", " + std::string(c.name);
  for (const ArtifactRow& a : kArtifacts) s += ", " + std::string(a.name);
  return s;
}

std::string pad(std::string_view s, size_t width) {
  std::string out(s);
  out.resize(std::max(width, s.size() + 1), ' ');
  return out;
}

/// Applies one non-empty entry. Returns false with *error set when it names nothing.
bool apply_entry(const std::string& entry, LogSettings* s, std::string* error) {
  char prefix = entry[0] == '+' || entry[0] == '-' ? entry[0] : 0;
  std::string name = prefix ? entry.substr(1) : entry;
  Level level = prefix == '+' ? Level::Debug : prefix == '-' ? Level::Error : Level::Info;
  if (name == "help") {
    s->help = true;
    return true;
  }
  if (name == "all") {
    s->levels.fill(level);
    s->artifacts.fill(prefix != '-');
    return true;
  }
  for (const ComponentRow& c : kComponents) {
    if (c.name != name) continue;
    s->levels[size_t(c.component)] = level;
    if (level == Level::Debug)
      for (const ArtifactRow& a : kArtifacts)
        if (a.owner == c.component && a.with_debug) s->artifacts[size_t(a.artifact)] = true;
    return true;
  }
  for (const ArtifactRow& a : kArtifacts) {
    if (a.name != name) continue;
    s->artifacts[size_t(a.artifact)] = prefix != '-';
    return true;
  }
  *error = "unknown log setting '" + entry + "'; valid settings: " + valid_names() +
           " (components take a + or - prefix; see --log=help)";
  return false;
}

} // namespace

std::string_view component_name(Component c) {
  return kComponents[size_t(c)].name;
}

std::string_view level_name(Level l) {
  switch (l) {
  case Level::Debug:
    return "debug";
  case Level::Info:
    return "info";
  case Level::Warning:
    return "warning";
  case Level::Error:
    return "error";
  }
  return "?";
}

std::string_view artifact_name(Artifact a) {
  return kArtifacts[size_t(a)].name;
}

bool parse_log_settings(std::string_view spec, LogSettings* settings, std::string* error) {
  LogSettings s = *settings;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string entry = trim(spec.substr(pos, comma - pos));
    pos = comma + 1;
    if (entry.empty()) continue;
    if (!apply_entry(entry, &s, error)) return false;
  }
  *settings = s;
  return true;
}

std::string log_help_text() {
  std::string s =
      "fxc log settings: --log=<list> or FXC_LOGS=<list> (the syntax of TORCH_LOGS)\n"
      "\n"
      "A comma-separated list of components and artifacts; later entries win, and FXC_LOGS\n"
      "is applied before --log.\n"
      "  +<component>    DEBUG and above (also turns on the component's light artifacts)\n"
      "  <component>     INFO and above\n"
      "  -<component>    ERROR only\n"
      "                  components not named log WARNING and above\n"
      "  <artifact>      turn the artifact on; -<artifact> turns it off\n"
      "  all             every component at INFO and every artifact on (+all: DEBUG;\n"
      "                  -all: ERROR only and every artifact off)\n"
      "  help            print this text\n"
      "Output goes to stderr, or is appended to the file named by FXC_LOGS_OUT. Lines read\n"
      "\"[fxc:<artifact>] ...\" and \"[fxc:<component>] <level>: ...\".\n"
      "\n"
      "Components:\n";
  for (const ComponentRow& c : kComponents)
    s += "  " + pad(c.name, 16) + std::string(c.description) + "\n";
  s += "\nArtifacts (* also on when their component is at DEBUG):\n";
  for (const ArtifactRow& a : kArtifacts)
    s += "  " + pad(std::string(a.name) + (a.with_debug ? "*" : ""), 16) +
         std::string(a.description) + " [" + std::string(component_name(a.owner)) + "]\n";
  s += "\nExamples:\n"
       "  fxc --log=graph_breaks,recompiles model.pt2\n"
       "  fxc --log=+inductor,-perf_hints,output_code model.pt2\n"
       "  FXC_LOGS=all FXC_LOGS_OUT=fxc.log fxc model.pt2\n";
  return s;
}

Logger::Logger() : out_(&std::cerr), mu_(std::make_unique<std::mutex>()) {}

Logger::Logger(const LogSettings& settings, std::ostream* out)
    : settings_(settings), out_(out), mu_(std::make_unique<std::mutex>()) {}

Logger::Logger(Logger&&) noexcept = default;
Logger& Logger::operator=(Logger&&) noexcept = default;
Logger::~Logger() = default;

std::optional<Logger> Logger::from_environment(std::string_view flag_spec, std::string* error,
                                               bool* help) {
  LogSettings s;
  std::string err;
  if (const char* env = std::getenv("FXC_LOGS"); env && !parse_log_settings(env, &s, &err)) {
    *error = "FXC_LOGS: " + err;
    return std::nullopt;
  }
  if (!parse_log_settings(flag_spec, &s, &err)) {
    *error = "--log: " + err;
    return std::nullopt;
  }
  *help = s.help;
  const char* path = std::getenv("FXC_LOGS_OUT");
  if (!path || !*path) return Logger(s, &std::cerr);
  auto file = std::make_unique<std::ofstream>(path, std::ios::app);
  if (!*file) {
    *error = std::string("FXC_LOGS_OUT: cannot open '") + path + "' for writing";
    return std::nullopt;
  }
  Logger l(s, file.get());
  l.file_ = std::move(file);
  return l;
}

void Logger::write(const std::string& prefix, const std::string& text) {
  std::string out;
  size_t pos = 0;
  do {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string_view line(text.data() + pos, nl - pos);
    out += prefix;
    if (!line.empty()) out += " " + std::string(line);
    out += "\n";
    pos = nl + 1;
  } while (pos < text.size());
  std::lock_guard<std::mutex> lock(*mu_);
  *out_ << out;
  out_->flush();
}

void Logger::artifact(Artifact a, const std::string& text) {
  if (capturing_ && capture_.artifacts[size_t(a)]) {
    std::lock_guard<std::mutex> lock(*mu_);
    captured_.push_back({std::string(artifact_name(a)), Level::Info, text});
  }
  if (settings_.artifacts[size_t(a)]) write("[fxc:" + std::string(artifact_name(a)) + "]", text);
}

void Logger::log(Component c, Level l, const std::string& msg) {
  if (capturing_ && l >= capture_.levels[size_t(c)]) {
    std::lock_guard<std::mutex> lock(*mu_);
    captured_.push_back({std::string(component_name(c)), l, msg});
  }
  if (l >= settings_.levels[size_t(c)])
    write("[fxc:" + std::string(component_name(c)) + "] " + std::string(level_name(l)) + ":", msg);
}

void Logger::capture(const LogSettings& what) {
  capture_ = what;
  capturing_ = true;
}

std::array<Level, kNumComponents> Logger::sink_levels() const {
  std::array<Level, kNumComponents> levels = settings_.levels;
  if (capturing_)
    for (size_t i = 0; i < kNumComponents; ++i) levels[i] = std::min(levels[i], capture_.levels[i]);
  return levels;
}

std::vector<Logger::Captured> Logger::captured() const {
  std::lock_guard<std::mutex> lock(*mu_);
  return captured_;
}

Logger& process_logger() {
  static Logger logger;
  return logger;
}

int configure_process_logger(std::string_view flag_spec, std::ostream& out, std::ostream& err) {
  std::string error;
  bool help = false;
  std::optional<Logger> l = Logger::from_environment(flag_spec, &error, &help);
  if (!l) {
    err << "fxc: error: " << error << "\n";
    return 2;
  }
  if (help) {
    out << log_help_text();
    return 0;
  }
  process_logger() = std::move(*l);
  install_log_sink(
      process_logger().settings().levels,
      [](Component c, Level lv, const std::string& msg) { process_logger().log(c, lv, msg); });
  return -1;
}

void capture_process_logs(const LogSettings& what) {
  process_logger().capture(what);
  install_log_sink(
      process_logger().sink_levels(),
      [](Component c, Level lv, const std::string& msg) { process_logger().log(c, lv, msg); });
}

} // namespace fxc
