// The failure tools (docs/design.md §5): --bisect over the backends and --minify of a failing
// graph.
#include "driver/failure_tools.h"

#include "driver/tensor_io.h"
#include "frontend/diag.h"
#include "frontend/fxg.h"
#include "passes/graph_utils.h"
#include "passes/minify.h"
#include "passes/partition.h"
#include "runtime/compare.h"
#include "runtime/interpreter.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

namespace fxc {

namespace fs = std::filesystem;

namespace {

std::string g_transcript;

// One line of the failure tools' report: printed on stdout at once, and kept for --report.
[[gnu::format(printf, 1, 2)]] void say(const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  std::string line(size_t(std::max(0, std::vsnprintf(nullptr, 0, format, args))), '\0');
  va_end(args);
  std::vsnprintf(line.data(), line.size() + 1, format, again);
  va_end(again);
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
  g_transcript += line;
}

} // namespace

const std::string& failure_tools_transcript() {
  return g_transcript;
}

ChildOutcome run_in_child(const std::function<NamedTensors()>& fn, unsigned timeout_s) {
  char path[] = "/tmp/fxc-child-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) throw Error("/tmp", "cannot create a temporary file for a child run");
  close(fd);
  int pipefd[2];
  if (pipe(pipefd) != 0) throw Error("fxc", "cannot create a pipe for a child run");
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) throw Error("fxc", "cannot fork a child run");
  if (pid == 0) {
    close(pipefd[0]);
    alarm(timeout_s);
    int status = 0;
    std::string msg;
    try {
      write_named_tensors(path, fn());
    } catch (const fxc::Error& e) {
      msg = e.what();
      status = 1;
    } catch (const std::exception& e) {
      msg = std::string("internal compiler error: ") + e.what();
      status = 70;
    }
    if (!msg.empty() && write(pipefd[1], msg.data(), msg.size()) < 0) status = 71;
    close(pipefd[1]);
    _exit(status);
  }
  close(pipefd[1]);
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) msg.append(buf, size_t(n));
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ChildOutcome out;
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    out.kind = ChildOutcome::Crash;
    out.message = sig == SIGALRM ? "timed out after " + std::to_string(timeout_s) + " s"
                                 : std::string("killed by signal ") + std::to_string(sig) + " (" +
                                       strsignal(sig) + ")";
  } else if (WEXITSTATUS(status) != 0) {
    out.kind = WEXITSTATUS(status) == 70 ? ChildOutcome::Crash : ChildOutcome::Error;
    out.message = msg.empty() ? "exit status " + std::to_string(WEXITSTATUS(status)) : msg;
  } else {
    out.results = read_named_tensors(path);
  }
  std::remove(path);
  return out;
}

NamedTensors run_backend(const Options& base, Backend backend, const Graph& g,
                         const std::vector<Tensor>& inputs) {
  Options o = base;
  o.backend = backend;
  o.debug_dir.clear();
  DebugTrace trace;
  Compilation c(o, trace, g);
  run_pipeline(c);
  return c.executable->run(inputs);
}

namespace {

const Backend kStagesInOrder[] = {Backend::Eager, Backend::AotEager,
                                  Backend::AotEagerDecompPartition, Backend::Inductor};

const Tensor* find(const NamedTensors& ts, const std::string& name) {
  for (const auto& [n, t] : ts)
    if (n == name) return &t;
  return nullptr;
}

std::string fmt_err(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Compares `results` with the references; returns "" when everything matches, else the first
// mismatch ("output_0: max abs error 1 at (0, 3)": the greatest difference among the elements
// out of tolerance, as torch.testing reports it).
std::string first_mismatch(const Options& o, const NamedTensors& results,
                           const NamedTensors& ref_outputs, const NamedTensors* ref_grads) {
  for (const auto& [name, t] : results) {
    bool grad = name.rfind("grad.", 0) == 0;
    const Tensor* ref =
        grad ? (ref_grads ? find(*ref_grads, name) : nullptr) : find(ref_outputs, name);
    if (!ref) continue;
    CompareOptions co;
    co.rtol = o.rtol;
    co.atol = grad ? std::max(o.atol, 1e-4) : o.atol;
    CompareResult r = compare_tensors(t, *ref, co);
    if (!r.ok)
      return name + ": max abs error " + fmt_err(r.mismatch_abs) + " at " +
             format_index(r.mismatch_abs_index) + (r.mismatches == 0 ? " " + r.message : "");
  }
  for (const auto& [name, t] : ref_outputs)
    if (!find(results, name)) return name + ": missing";
  return "";
}

// Every node output of g as a graph output, so one run yields all intermediates.
Graph with_all_values_as_outputs(const Graph& g, size_t upto_node) {
  Graph out = g;
  out.outputs.clear();
  for (size_t i = 0; i <= upto_node && i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].outputs) out.outputs.push_back(v);
  return out;
}

// The first node of g (in order) whose value under `backend` differs from the reference
// interpreter's, or whose prefix fails to compile or run. "" when none is found.
std::string first_diverging_node(const Options& base, Backend backend, const Graph& g,
                                 const std::vector<Tensor>& inputs) {
  Options o = base;
  o.mode = Mode::Inference;
  if (g.nodes.empty()) return "";
  std::vector<Tensor> eager_values;
  std::vector<size_t> value_node;
  InterpretOptions io;
  io.on_node = [&](const Node& n, const std::vector<Tensor>& outs) {
    for (const Tensor& t : outs) eager_values.push_back(t.clone());
  };
  // run_bisect only searches when eager passed, so the reference run cannot fail here.
  interpret(g, inputs, io);
  Graph all = with_all_values_as_outputs(g, g.nodes.size() - 1);
  ChildOutcome whole = run_in_child([&] { return run_backend(o, backend, all, inputs); });
  auto describe = [&](size_t node, const std::string& why) {
    const Node& n = g.nodes[node];
    return n.name + " (" + n.target + "): " + why;
  };
  if (whole.kind == ChildOutcome::Ok) {
    size_t k = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (size_t j = 0; j < g.nodes[i].outputs.size(); ++j, ++k) {
        const Tensor* got = find(whole.results, "output_" + std::to_string(k));
        if (!got || k >= eager_values.size()) continue;
        CompareOptions co;
        co.rtol = o.rtol;
        co.atol = o.atol;
        CompareResult r = compare_tensors(*got, eager_values[k], co);
        if (!r.ok)
          return describe(i, "max abs error " + fmt_err(r.mismatch_abs) + " at " +
                                 format_index(r.mismatch_abs_index));
      }
    }
    return "";
  }
  // The whole graph fails to compile or run: binary-search the shortest failing prefix.
  size_t lo = 0, hi = g.nodes.size() - 1; // hi's prefix fails
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    Graph prefix = eliminate_dead_code(with_all_values_as_outputs(g, mid)).graph;
    ChildOutcome r = run_in_child([&] { return run_backend(o, backend, prefix, inputs); });
    if (r.kind == ChildOutcome::Ok)
      lo = mid + 1;
    else
      hi = mid;
  }
  return describe(lo, "the graph up to this node fails: " + whole.message);
}

} // namespace

int run_bisect(const Options& o, const Graph& g, const std::vector<Tensor>& inputs) {
  bool train = o.mode == Mode::Train;
  NamedTensors ref_outputs, ref_grads;
  bool have_grads = false;
  int first_failing = -1;
  std::string first_failure;
  for (int s = 0; s < 4; ++s) {
    Backend b = kStagesInOrder[s];
    Options so = o;
    if (b == Backend::Eager) so.mode = Mode::Inference; // eager has no autograd layer
    ChildOutcome r = run_in_child([&] { return run_backend(so, b, g, inputs); });
    std::string line = std::string(backend_name(b)) + ": ";
    bool ok = false;
    if (r.kind == ChildOutcome::Error)
      line += "error: " + r.message;
    else if (r.kind == ChildOutcome::Crash)
      line += "crash: " + r.message;
    else if (b == Backend::Eager) {
      ref_outputs = r.results;
      ok = true;
      line += "ok (reference)";
    } else {
      if (train && !have_grads) {
        for (auto& [n, t] : r.results)
          if (n.rfind("grad.", 0) == 0) ref_grads.emplace_back(n, t);
        have_grads = true;
      }
      std::string mm = first_mismatch(o, r.results, ref_outputs, train ? &ref_grads : nullptr);
      ok = mm.empty();
      line += ok ? (train && b == Backend::AotEager ? "ok (gradient reference)" : "ok")
                 : "mismatch: " + mm;
    }
    say("%s\n", line.c_str());
    std::fflush(stdout);
    if (!ok && first_failing < 0) {
      first_failing = s;
      first_failure = line;
    }
    if (!ok && b == Backend::Eager) break; // nothing to compare the later stages with
  }
  if (first_failing < 0) {
    say("all stages match eager\n");
    return 0;
  }
  Backend fb = kStagesInOrder[first_failing];
  if (fb != Backend::Eager) {
    std::string node = first_diverging_node(o, fb, g, inputs);
    if (node.empty())
      say("first diverging node: none in the forward graph run in inference mode%s\n",
          train ? "; the failure is in the backward graph" : "");
    else
      say("first diverging node: %s\n", node.c_str());
  }
  say("first failing stage: %s\n", backend_name(fb));
  return 1;
}

int run_minify_graph(const Options& o, const Graph& g, const std::vector<Tensor>& inputs);

namespace {

std::string shell_quote(const std::string& s);

// <dir>/minifier/repro.fxg, repro.inputs.safetensors, repro.expected.safetensors (when
// `expect`: the reference backend's results) and repro.sh, the one command that shows `kind`.
void write_repro_files(const Options& o, const Graph& g, const std::vector<Tensor>& inputs,
                       const std::string& kind, bool expect) {
  std::string dir = (o.debug_dir.empty() ? std::string(".") : o.debug_dir) + "/minifier";
  fs::create_directories(dir);
  Graph repro = g;
  repro.name = "repro";
  write_fxg(repro, dir + "/repro.fxg");
  NamedTensors named_inputs;
  for (size_t i = 0; i < inputs.size(); ++i)
    named_inputs.emplace_back("input_" + std::to_string(i), inputs[i]);
  write_named_tensors(dir + "/repro.inputs.safetensors", named_inputs);
  std::string cmd = "--backend=" + std::string(backend_name(o.backend)) +
                    " --device=cpu --mode=" + (o.mode == Mode::Train ? "train" : "inference") +
                    " --run --inputs \"$here/repro.inputs.safetensors\"";
  if (!o.inject_bug.empty()) cmd += " --inject-bug=" + shell_quote(o.inject_bug);
  for (const std::string& p : o.plugins)
    cmd += " --plugin=" + shell_quote(fs::absolute(p).string());
  if (expect) {
    Backend ref_backend = o.mode == Mode::Train ? Backend::AotEager : Backend::Eager;
    write_named_tensors(dir + "/repro.expected.safetensors",
                        run_backend(o, ref_backend, g, inputs));
    cmd += " --expect \"$here/repro.expected.safetensors\" --rtol " + fmt_err(o.rtol) + " --atol " +
           fmt_err(o.atol);
  }
  cmd += " \"$here/repro.fxg\"";
  std::ofstream sh(dir + "/repro.sh");
  sh << "#!/bin/sh\n# Reproduces the " << kind << " of fxc's " << backend_name(o.backend)
     << " backend (exits non-zero while it fails).\n"
     << "here=$(cd \"$(dirname \"$0\")\" && pwd)\n"
     << "exec ${FXC:-fxc} " << cmd << "\n";
  sh.close();
  fs::permissions(dir + "/repro.sh",
                  fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add);
  say("wrote %s/repro.fxg, %s/repro.sh\n", dir.c_str(), dir.c_str());
}

// What the failing run looks like, so that candidates are held to the same failure.
struct Failure {
  ChildOutcome::Kind kind = ChildOutcome::Ok;
  bool accuracy = false;
  std::string what;
};

// Runs the backend under test on a candidate and classifies the outcome against the reference
// (eager for inference; aot_eager for train mode, which has gradients).
Failure classify(const Options& o, const Graph& g, const std::vector<Tensor>& inputs) {
  ChildOutcome r = run_in_child([&] { return run_backend(o, o.backend, g, inputs); });
  Failure f;
  f.kind = r.kind;
  if (r.kind != ChildOutcome::Ok) {
    f.what = r.message;
    return f;
  }
  Backend ref_backend = o.mode == Mode::Train ? Backend::AotEager : Backend::Eager;
  ChildOutcome ref = run_in_child([&] { return run_backend(o, ref_backend, g, inputs); });
  if (ref.kind != ChildOutcome::Ok) return f; // the reference itself fails: not our failure
  std::string mm = first_mismatch(o, r.results, ref.results, &ref.results);
  f.accuracy = !mm.empty();
  f.what = mm;
  return f;
}

bool same_failure(const Failure& a, const Failure& b) {
  if (a.accuracy || b.accuracy) return a.accuracy == b.accuracy;
  return a.kind == b.kind && a.kind != ChildOutcome::Ok;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

} // namespace

namespace {
// FXC_REPRO_AFTER=aot: the graphs inductor compiles (after AOT autograd and decompositions),
// each with concrete inputs: the forward's are the user inputs; the backward's are the saved
// values the forward returns plus output gradients of ones.
std::vector<std::pair<Graph, std::vector<Tensor>>>
graphs_after_aot(const Options& o, const Graph& g, const std::vector<Tensor>& inputs) {
  Options ao = o;
  ao.backend = Backend::AotEagerDecompPartition;
  ao.debug_dir.clear();
  DebugTrace trace;
  Compilation c(ao, trace, g);
  run_pipeline(c);
  std::vector<std::pair<Graph, std::vector<Tensor>>> out;
  out.emplace_back(c.graphs.at(0).graph, inputs);
  if (o.mode != Mode::Train) return out;
  std::vector<Tensor> fw = interpret(c.graphs[0].graph, inputs);
  out.emplace_back(c.graphs.at(1).graph,
                   backward_inputs(fw, c.aot->num_user_outputs, c.aot->tangent_output_index));
  return out;
}
} // namespace

int run_minify(const Options& o, const Graph& g, const std::vector<Tensor>& inputs) {
  const char* after = std::getenv("FXC_REPRO_AFTER");
  std::string where = after && *after ? after : "dynamo";
  if (where != "dynamo" && where != "aot")
    throw Error("FXC_REPRO_AFTER", "expected 'dynamo' or 'aot', got '" + where + "'");
  if (where == "aot") {
    // Minify the first post-AOT graph that fails on its own, compiled in inference mode.
    Options io = o;
    io.mode = Mode::Inference;
    auto graphs = graphs_after_aot(o, g, inputs);
    for (size_t i = 0; i < graphs.size(); ++i) {
      Failure f = classify(io, graphs[i].first, graphs[i].second);
      if (f.kind == ChildOutcome::Ok && !f.accuracy) continue;
      say("FXC_REPRO_AFTER=aot: the %s graph fails on its own\n", i == 0 ? "forward" : "backward");
      return run_minify_graph(io, graphs[i].first, graphs[i].second);
    }
    say("no failure to minify: every graph after AOT autograd matches the reference on its own\n");
    return 0;
  }
  return run_minify_graph(o, g, inputs);
}

int run_minify_graph(const Options& o, const Graph& g, const std::vector<Tensor>& inputs) {
  Failure original = classify(o, g, inputs);
  if (original.kind == ChildOutcome::Ok && !original.accuracy) {
    say("no failure to minify: %s matches the reference\n", backend_name(o.backend));
    return 0;
  }
  const char* kind = original.accuracy                      ? "accuracy failure"
                     : original.kind == ChildOutcome::Crash ? "crash"
                                                            : "error";
  say("minifying %s %s of backend %s: %s\n", original.accuracy ? "an" : "a", kind,
      backend_name(o.backend), original.what.c_str());
  MinifyOptions mo;
  mo.progress = [](const std::string& line) {
    say("%s\n", line.c_str());
    std::fflush(stdout);
  };
  MinifyResult res = minify(
      g, inputs,
      [&](const Graph& cand, const std::vector<Tensor>& in) {
        return same_failure(original, classify(o, cand, in));
      },
      mo);

  write_repro_files(o, res.graph, res.inputs, kind, original.accuracy);
  say("minified to %zu node%s\n", res.graph.nodes.size(), res.graph.nodes.size() == 1 ? "" : "s");
  return 1;
}

void write_repro(const Options& o, const Graph& g, const std::vector<Tensor>& inputs,
                 const std::string& what) {
  write_repro_files(o, g, inputs, what, false);
}

} // namespace fxc
