// The command line: every flag of docs/design.md §3, parsed with CLI11.
#include "driver/options.h"

#include "driver/pipeline.h"

#include "driver/cache.h"
#include "driver/driver.h"
#include "driver/list_ops.h"
#include "driver/remote_cache.h"
#include "runtime/cuda_driver.h"
#ifdef FXC_HAVE_CODEGEN
#include "codegen/llvm_codegen.h"
#endif

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <unistd.h>

namespace fxc {

const char* backend_name(Backend b) {
  switch (b) {
  case Backend::Eager:
    return "eager";
  case Backend::AotEager:
    return "aot_eager";
  case Backend::AotEagerDecompPartition:
    return "aot_eager_decomp_partition";
  case Backend::Inductor:
    return "inductor";
  }
  return "?";
}

bool expand_response_files(std::vector<std::string>* args, std::string* error) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    if (i == 0 || a.size() < 2 || a[0] != '@') {
      out.push_back(a);
      continue;
    }
    std::ifstream f(a.substr(1));
    if (!f) {
      *error = a.substr(1) + ": error: cannot read response file";
      return false;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str(), word;
    bool in_word = false;
    char quote = 0;
    for (size_t k = 0; k < text.size(); ++k) {
      char c = text[k];
      if (quote) {
        if (c == quote)
          quote = 0;
        else if (c == '\\' && quote == '"' && k + 1 < text.size())
          word += text[++k];
        else
          word += c;
      } else if (c == '\'' || c == '"') {
        quote = c;
        in_word = true;
      } else if (c == '\\' && k + 1 < text.size()) {
        word += text[++k];
        in_word = true;
      } else if (std::isspace((unsigned char)c)) {
        if (in_word) out.push_back(word);
        word.clear();
        in_word = false;
      } else {
        word += c;
        in_word = true;
      }
    }
    if (quote) {
      *error = a.substr(1) + ": error: unterminated quote in response file";
      return false;
    }
    if (in_word) out.push_back(word);
  }
  *args = std::move(out);
  return true;
}

namespace {

const char* kDescription =
    "fxc compiles PyTorch graphs (torch.export .pt2 archives, .fxg / .fxg.zst graph files).\n"
    "The default action compiles <graph> to <stem>.fxo (-o), an artifact with the plan, kernels,\n"
    "weights and input guards; --run compiles and executes, --emit writes one intermediate.\n"
    "Given an .fxo, --run/--bench execute it (guards checked first; no compiler needed).";

const char* kFooter =
    "Environment: FXC_COMPILE_DEBUG=1, FXC_LOGS=<list>, FXC_CACHE_DIR, FXC_REPRO_AFTER,\n"
    "FXC_REPRO_LEVEL, FXC_ONEDNN=0 (CPU convolutions without oneDNN).  Exit status: 0 ok,\n"
    "1 bad input or failed check, 2 usage error, 70 internal compiler error.  See fxc(1).";

// Levenshtein distance with adjacent transpositions (optimal string alignment), as clang's
// "did you mean": "cdua" is one edit from "cuda".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// The value of `flag` among the raw words (--flag=v or --flag v), before CLI11 has parsed them:
// --color and --diagnostics decide how CLI11's own errors are printed.
std::string raw_value(const std::vector<std::string>& args, const std::string& flag) {
  std::string v;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i].rfind(flag + "=", 0) == 0)
      v = args[i].substr(flag.size() + 1);
    else if (args[i] == flag && i + 1 < args.size())
      v = args[i + 1];
  }
  return v;
}

// Prints a usage error as every diagnostic is printed (text, colored on a terminal, or JSON).
int usage_error(const std::vector<std::string>& args, const std::string& message) {
  if (raw_value(args, "--diagnostics") == "json") {
    nlohmann::ordered_json j = {
        {"severity", "error"}, {"file", ""}, {"node", ""}, {"op", ""}, {"message", message}};
    std::fprintf(stderr, "%s\n", j.dump().c_str());
    return 2;
  }
  std::string color = raw_value(args, "--color");
  set_color_diagnostics(color_wanted(color.empty() ? "auto" : color));
  std::fprintf(stderr, "%s\nRun 'fxc --help' for usage.\n",
               paint_diagnostic("fxc: error: " + message).c_str());
  return 2;
}

// One value of an enumerated option, checked as clang checks them: the valid values listed, and
// the closest one suggested. Empty `value`: the option was not given.
std::optional<std::string> check_choice(const std::string& flag, const std::string& value,
                                        const std::vector<std::string>& valid) {
  for (const std::string& v : valid)
    if (v == value) return std::nullopt;
  std::string m = "invalid value '" + value + "' for '" + flag + "'";
  if (std::string near = did_you_mean(value, valid); !near.empty())
    m += " (did you mean '" + near + "'?)";
  return m + "; valid values: " + join(valid, ", ");
}

// The names CLI11 knows, spelled as a user types them, for "did you mean" on unknown options.
std::vector<std::string> option_spellings(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& l : opt->get_lnames())
      names.push_back(l == "MD" || l == "MF" || l == "MT" || l == "Werror" ? "-" + l : "--" + l);
    for (const std::string& n : opt->get_snames()) names.push_back("-" + n);
  }
  return names;
}

// CLI11 reports words it could not place as one list; say which one, as clang does.
std::string explain_extras(const CLI::App& app, const std::vector<std::string>& args,
                           const std::string& input) {
  std::vector<std::string> names = option_spellings(app);
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-') continue;
    std::string name = a.substr(0, a.find('='));
    std::string fixed =
        name == "-MD" || name == "-MF" || name == "-MT" || name == "-Werror" ? "-" + name : name;
    bool known = false;
    for (const CLI::Option* opt : app.get_options())
      if (opt->check_name(fixed)) {
        known = true;
        // An option with a value not given after '=' takes the next word.
        if (opt->get_type_size() > 0 && a.find('=') == std::string::npos) ++i;
      }
    if (known) continue;
    std::string m = "unknown argument: '" + name + "'";
    if (std::string near = did_you_mean(name, names); !near.empty())
      m += "; did you mean '" + near + "'?";
    return m;
  }
  for (size_t i = 1; i < args.size(); ++i)
    if (!args[i].empty() && args[i][0] != '-' && args[i] != input)
      return "unexpected argument '" + args[i] + "': fxc compiles one graph per invocation" +
             (input.empty() ? "" : " (the graph is '" + input + "')");
  return "unexpected arguments";
}

// --cuda-arch: one of the processors LLVM's NVPTX back end knows, checked before anything
// compiles (LLVM would warn from every worker thread and write `.target <arch>`). Without LLVM,
// the form fxc's CUDA code understands: sm_<number>, optionally with the suffix a. Returns the
// error message, or "" for a valid value.
std::string cuda_arch_error(const std::string& arch) {
#ifdef FXC_HAVE_CODEGEN
  return check_choice("--cuda-arch", arch, nvptx_processors()).value_or("");
#else
  size_t end = arch.size() - (arch.size() > 3 && arch.back() == 'a' ? 1 : 0);
  bool ok = arch.rfind("sm_", 0) == 0 && end > 3 &&
            std::all_of(arch.begin() + 3, arch.begin() + long(end),
                        [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  return ok ? ""
            : "invalid value '" + arch + "' for '--cuda-arch'; valid values: sm_<number>, " +
                  "optionally with the suffix a (sm_90, sm_90a)";
#endif
}

} // namespace

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string version_text() {
  std::string s = std::string("fxc version ") + FXC_VERSION + "\n";
#ifdef FXC_HAVE_CODEGEN
  s += "LLVM " FXC_LLVM_VERSION " (x86-64 and NVPTX back ends)\n";
  s += "CUDA: kernels compiled to PTX through NVPTX (--device=cuda, --cuda-arch; default sm_90)";
#else
  s += "built without LLVM: no code generation (eager backends and artifacts only)\n";
  s += "CUDA: artifacts compiled for CUDA run";
#endif
  std::string why = cuda::Context::unavailable_reason();
  s += why.empty() ? "; a CUDA device is present\n" : "; no CUDA device here (" + why + ")\n";
  return s;
}

std::optional<int> parse_options(int argc, char** argv, Options* o) {
  std::vector<std::string> args(argv, argv + argc);
  std::string err;
  if (!expand_response_files(&args, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 2;
  }

  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = i == 0 ? std::string("fxc") : args[i];
    bool plain =
        !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789-_=+./,:@%") == std::string::npos;
    std::string quoted = "'";
    for (char c : a) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    o->command_line += (i ? " " : "") + (plain ? a : quoted + "'");
  }
  CLI::App app{kDescription, "fxc"};
  app.footer(kFooter);
  app.get_formatter()->column_width(40);
  bool version = false;
  std::vector<std::string> graphs;
  app.add_option("graph", graphs, "Graph file: .pt2, .fxg or .fxg.zst (or an .fxo to run)");
  app.add_flag("--link", o->link,
               "Combine artifacts into one (-o): fxc --link -o m.fxo enc.fxo dec.fxo; "
               "NAME=FILE renames");
  app.add_option("--model", o->model, "Which model of an artifact of several to run (--link)")
      ->option_text("<name>");
  app.add_option("-o", o->output,
                 "Output file (default <stem>.fxo; --emit: <stem>.<ext>; - for stdout)");
  // Enumerated options are read as words and checked after parsing (check_choice), so that a
  // wrong value gets the valid ones and a suggestion, and a number is not taken for an index.
  std::string backend, device, mode;
  bool allow_tf32 = false, cuda_graphs = false, no_cuda_graphs = false, no_freeze = false;
  app.add_option("--backend", backend, "Pipeline prefix to run (default inductor)")
      ->option_text("eager|aot_eager|aot_eager_decomp_partition|inductor");
  app.add_option("--device", device,
                 "Target device (default: cuda when a driver and device are present, else cpu)")
      ->option_text("cpu|cuda");
  app.add_option("--mode", mode, "inference (default) or train (forward + backward)")
      ->option_text("inference|train");
  app.add_flag("--run", o->run, "Compile, then execute once");
  app.add_option("--inputs", o->inputs,
                 "Inputs by name (input_0.. or graph input names); default: seeded random")
      ->option_text("<f.safetensors>");
  app.add_option("--outputs", o->outputs, "Write outputs (and gradients in train mode)")
      ->option_text("<f.safetensors>");
  app.add_option("--expect", o->expect, "Compare outputs with these (output_<i>, grad.<name>)")
      ->option_text("<f.safetensors>");
  app.add_option("--rtol", o->rtol, "Relative tolerance for --expect (default 1e-4)");
  app.add_option("--atol", o->atol, "Absolute tolerance for --expect (default 1e-5)");
  app.add_flag("--equal-nan", o->equal_nan, "--expect: NaN matches NaN (default: never)");
  app.add_option("--seed", o->seed,
                 "Seed for random inputs and random ops (rand, dropout, ...; default 0)");
  app.add_flag("--check-accuracy", o->check_accuracy,
               "Compare against the float64 eager reference");
  app.add_flag("--bench", o->bench,
               "Time the compiled graph: warm-up, cache flush, median/p20/p80 over a time budget, "
               "per-kernel times, GB/s and TFLOP/s (CUDA events on cuda)");
  app.add_flag("--json", o->json, "With --bench: print the results as one JSON object on stdout");
  app.add_flag("--time-passes", o->time_passes,
               "Print each compiler pass's wall time to stderr at exit");
  app.add_flag("--bisect", o->bisect,
               "Run every backend in stage order, report the first that fails");
  app.add_flag("--minify", o->minify, "Shrink a failing graph to a minimal repro");
  app.add_option("--inject-bug", o->inject_bug, "Testing only: plant a codegen bug in <op>")
      ->option_text("<op>:compile_error|runtime_error|accuracy");
  app.add_option("--debug-dir", o->debug_dir, "Write the debug trace there")->option_text("<dir>");
  app.add_option("--log", o->log,
                 "Log components and artifacts (like TORCH_LOGS); 'help' lists them")
      ->option_text("<list>");
  app.add_option("--emit", o->emit, "Write one intermediate instead of the artifact")
      ->option_text("fxg|fx|llvm|ptx|obj|cpp");
  app.add_flag("-S", o->emit_asm, "Same as --emit=ptx for cuda, --emit=llvm for cpu");
  app.add_option(
         "--trace", o->trace,
         "Write a Chrome trace (Perfetto): compile passes, and the kernels of one --bench run")
      ->option_text("<f.json>");
  app.add_option("--report", o->report,
                 "Write the compile (and --run/--bench/--bisect/--minify) as a static HTML site: "
                 "<dir>/index.html, a page per graph (docs/report.md)")
      ->option_text("<dir>");
  app.add_option("--compare", o->compare,
                 "With --report: add what changed against another debug trace (kernels, fusion "
                 "decisions, step times)")
      ->option_text("<debug dir>");
  app.add_flag("--MD", o->md,
               "-MD: write a Make depfile naming the graph and its weights files (<output>.d)");
  app.add_option("--MF", o->mf, "-MF: the depfile's name (implies -MD)")->option_text("<file>");
  app.add_option("--MT", o->mt, "-MT: the rule's target (default: the output; implies -MD)")
      ->option_text("<target>");
  app.add_option("--cache-dir", o->cache_dir,
                 "Compile cache directory (default $FXC_CACHE_DIR, else $XDG_CACHE_HOME/fxc, else "
                 "~/.cache/fxc); the default action and --run (inductor) go through it")
      ->option_text("<dir>");
  app.add_option("--cache-max-size", o->cache_max_size,
                 "Size limit of the compile cache's entries (default $FXC_CACHE_MAX_SIZE, else 5G; "
                 "K, M, G, T: powers of 1024; 0: unlimited); a store over it evicts the least "
                 "recently used entries")
      ->check([](const std::string& s) {
        return parse_cache_size(s) ? std::string()
                                   : "invalid size '" + s + "': " + kCacheSizeSyntax;
      })
      ->option_text("<size>");
  app.add_flag("--no-cache", o->no_cache, "Neither read nor write the compile cache");
  app.add_option("--remote-cache", o->remote_cache,
                 "Shared second-level compile cache on Redis (default $FXC_REMOTE_CACHE; password "
                 "also from $FXC_REMOTE_CACHE_PASSWORD or $FXC_REMOTE_CACHE_PASSWORD_FILE); a "
                 "failure costs one warning, never the compile")
      ->check([](const std::string& s) {
        std::string error;
        return s.empty() || parse_redis_url(s, &error) ? std::string() : error;
      })
      ->option_text("redis://[user:pw@]host:port[/db]");
  app.add_option("--remote-cache-ttl", o->remote_cache_ttl,
                 "Seconds a published remote entry lives (default 604800, 7 days; 0: no expiry)")
      ->check(CLI::Range(int64_t(0), int64_t(10) * 365 * 24 * 3600))
      ->option_text("<seconds>");
  app.add_flag("--explain-cache", o->explain_cache,
               "Print every component of the compile cache key with its digest and, on a miss, "
               "what differs from the nearest local and remote entries; compiles nothing");
  app.add_flag("--max-autotune", o->max_autotune,
               "Inductor: time candidate configurations and keep the fastest (CPU: grain sizes "
               "of each kernel; CUDA, on the device: thread mappings of each kernel and cuBLASLt "
               "algorithms of each matmul), remembered in <cache dir>/autotune.json "
               "(--log=autotune shows them)");
  app.add_flag("--verify-each", o->verify_each,
               "Run the graph verifier after every graph stage and the loop-IR verifier after "
               "lower, fuse and plan-memory");
  app.add_option("--print-after", o->print_after,
                 "Print the IR after STEP to stderr (graph IR, loop IR or generated code); "
                 "steps: frontend aot decompose lower fuse plan-memory codegen host-plan load")
      ->option_text("STEP");
  app.add_option("--stop-after", o->stop_after,
                 "Stop the pipeline after STEP and exit 0; -o gets the IR after it")
      ->option_text("STEP");
  app.add_option("--diagnostics", o->diagnostics,
                 "Diagnostics as text, or one JSON object per line on stderr")
      ->option_text("text|json");
  app.add_option("--color", o->color,
                 "Colored diagnostics: auto (default: when stderr is a terminal), always, never")
      ->option_text("auto|always|never");
  app.add_flag("--Werror", o->werror, "-Werror: treat warnings (e.g. 'argument unused') as errors");
  app.add_option("--cuda-arch", o->cuda_arch, "CUDA architecture (default sm_90)");
  app.add_option("--tf32", o->tf32,
                 "CUDA: which float32 ops may use TF32 tensor cores: none, conv (default, as "
                 "PyTorch: cuDNN convolutions), matmul (cuBLASLt) or all")
      ->option_text("none|conv|matmul|all");
  app.add_flag("--allow-tf32", allow_tf32,
               "CUDA: float32 matmuls and convolutions may use TF32 tensor cores (--tf32=all)");
  app.add_flag("--cuda-graphs", cuda_graphs,
               "CUDA: capture the plan into a CUDA graph on its second run and replay it from "
               "then on, where every step can be captured (the default)");
  app.add_flag("--no-cuda-graphs", no_cuda_graphs,
               "CUDA: launch every step from the host on every run");
  app.add_flag("--no-freeze", no_freeze,
               "inference: compute the kernels that read only weights (e.g. --dtype's weight "
               "casts) on every run, not once when the plan is loaded");
  app.add_option("--conv-layout", o->conv_layout,
                 "layout of convolutions (cuDNN, oneDNN) and the values computed from them: nhwc "
                 "(channels-last), nchw, or auto (the default: nhwc in inference, nchw in train "
                 "mode)")
      ->option_text("auto|nchw|nhwc");
  app.add_option("--attention", o->attention,
                 "CUDA inference: scaled_dot_product_attention as one cuDNN fused attention call "
                 "(fused, the default, where cuDNN supports it: f16/bf16) or as two matmuls "
                 "around a softmax (decomposed)")
      ->option_text("fused|decomposed");
  // One library per --plugin: a repeatable option must not take the graph as a second value.
  app.add_option("--plugin", o->plugins,
                 "Load custom ops from a plugin library (include/fxc/plugin.h); repeatable")
      ->option_text("<lib.so>")
      ->allow_extra_args(false);
  // Flags of the second round's contract (docs/design.md §9) that are not built yet: accepted by
  // name, then refused as "not yet supported" (exit 2), never taken for a typo or ignored.
  std::string planned_value;
  const std::vector<std::string> planned_options = {"--dynamic"};
  for (const std::string& f : planned_options) app.add_option(f, planned_value)->group("");
  app.add_option("--dtype", o->dtype,
                 "Convert a float32 graph as torch.autocast(dtype=...) does: matmuls, "
                 "convolutions and attention in bf16 (or f16), softmax, norms, reductions and "
                 "losses in f32 (docs/autocast.md)")
      ->option_text("bf16|f16");
  app.add_option("--threads", o->threads,
                 "CPU threads shared by code generation and CPU kernels (default: all hardware "
                 "threads); the output does not depend on it")
      ->check(CLI::Range(1, 1024))
      ->option_text("<n>");
  app.add_flag("-v", o->verbose, "Print what the driver does, stage by stage, with timings");
  app.add_flag("--version", version, "Print the version and exit");
  bool list_ops = false;
  app.add_flag("--list-ops", list_ops,
               "Print every registered op with the layers it has (meta, eager, autograd, "
               "inductor cpu and cuda) and its tags, then exit");

  // -MD/-MF/-MT are spelled with one dash like clang's; CLI11 wants two for long names.
  std::vector<std::string> fixed;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-MD" || a == "-Werror")
      fixed.push_back("-" + a);
    else if (a == "-MF" || a == "-MT")
      fixed.push_back("-" + a);
    else
      fixed.push_back(a);
  }
  std::reverse(fixed.begin(), fixed.end()); // CLI11 parses a reversed vector
  try {
    app.parse(fixed);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ExtrasError&) {
    return usage_error(args, explain_extras(app, args, o->input));
  } catch (const CLI::ParseError& e) {
    return usage_error(args, e.what());
  }
  if (o->link) {
    o->link_inputs = graphs;
    if (graphs.empty()) return usage_error(args, "--link needs the artifacts to combine");
    if (o->output.empty() || o->output == "-")
      return usage_error(args, "--link needs -o <file>: the combined artifact");
    if (o->run || o->bench || !o->emit.empty() || o->emit_asm || o->bisect || o->minify)
      return usage_error(args, "--link only combines artifacts; run the result in another "
                               "command (fxc --run " +
                                   o->output + " --model=<name>)");
  } else if (graphs.size() > 1) {
    return usage_error(args, "unexpected argument '" + graphs[1] +
                                 "': fxc compiles one graph per invocation (the graph is '" +
                                 graphs[0] + "'; --link combines artifacts)");
  }
  if (!graphs.empty()) o->input = graphs[0];
  if (version) {
    std::printf("%s", version_text().c_str());
    return 0;
  }
  if (list_ops) {
    std::printf("%s", list_ops_text().c_str());
    return 0;
  }
  for (const std::string& f : planned_options)
    if (app.count(f)) return usage_error(args, f + " is not yet supported");
  for (const auto& [flag, step] :
       {std::pair<std::string, std::string>{"--print-after", o->print_after},
        {"--stop-after", o->stop_after}}) {
    if (!app.count(flag)) continue;
    std::vector<std::string> steps = pipeline_step_names();
    if (std::find(steps.begin(), steps.end(), step) != steps.end()) continue;
    std::string list;
    for (const std::string& s : steps) list += (list.empty() ? "" : ", ") + s;
    return usage_error(args, flag + ": unknown step '" + step + "' (valid steps: " + list + ")");
  }
  const std::vector<std::pair<std::string, std::string>> choices_given = {
      {"--backend", backend},
      {"--device", device},
      {"--mode", mode},
      {"--emit", o->emit},
      {"--diagnostics", o->diagnostics},
      {"--color", o->color},
      {"--tf32", o->tf32},
      {"--conv-layout", o->conv_layout},
      {"--attention", o->attention},
      {"--dtype", o->dtype}};
  const std::map<std::string, std::vector<std::string>> valid = {
      {"--backend", {"eager", "aot_eager", "aot_eager_decomp_partition", "inductor"}},
      {"--device", {"cpu", "cuda"}},
      {"--mode", {"inference", "train"}},
      {"--emit", {"fxg", "fx", "llvm", "ptx", "obj", "cpp"}},
      {"--diagnostics", {"text", "json"}},
      {"--color", {"auto", "always", "never"}},
      {"--tf32", {"none", "conv", "matmul", "all"}},
      {"--conv-layout", {"auto", "nchw", "nhwc"}},
      {"--attention", {"fused", "decomposed"}},
      {"--dtype", {"bf16", "f16"}}};
  for (const auto& [flag, value] : choices_given) {
    if (value.empty() &&
        (flag == "--backend" || flag == "--device" || flag == "--mode" || flag == "--emit" ||
         flag == "--dtype") &&
        !app.count(flag))
      continue;
    if (auto m = check_choice(flag, value, valid.at(flag))) return usage_error(args, *m);
  }
  if (!backend.empty()) {
    const std::vector<std::string>& b = valid.at("--backend");
    o->backend = Backend(std::find(b.begin(), b.end(), backend) - b.begin());
  }
  if (!device.empty()) o->device = device == "cuda" ? DeviceKind::Cuda : DeviceKind::Cpu;
  if (!mode.empty()) o->mode = mode == "train" ? Mode::Train : Mode::Inference;
  o->rtol_given = app.count("--rtol") > 0;
  o->atol_given = app.count("--atol") > 0;
  o->seed_given = app.count("--seed") > 0;
  o->cuda_arch_given = app.count("--cuda-arch") > 0;
  if (cuda_graphs && no_cuda_graphs)
    return usage_error(args, "--cuda-graphs contradicts --no-cuda-graphs");
  o->cuda_graphs_given = cuda_graphs || no_cuda_graphs;
  o->conv_layout_given = app.count("--conv-layout") > 0;
  o->attention_given = app.count("--attention") > 0;
  o->cuda_graphs = !no_cuda_graphs;
  o->freeze = !no_freeze;
  o->tf32_given = app.count("--tf32") > 0 || allow_tf32;
  if (allow_tf32) {
    if (app.count("--tf32") && o->tf32 != "all")
      return usage_error(args, "--allow-tf32 (--tf32=all) contradicts --tf32=" + o->tf32);
    o->tf32 = "all";
  }
  o->remote_cache_given = app.count("--remote-cache") > 0;
  if (const char* env = std::getenv("FXC_REMOTE_CACHE"); !o->remote_cache_given && env && *env) {
    std::string error;
    if (!parse_redis_url(env, &error)) return usage_error(args, "FXC_REMOTE_CACHE: " + error);
  }
  set_color_diagnostics(color_wanted(o->color));
  if (const char* env = std::getenv("FXC_CACHE_MAX_SIZE");
      o->cache_max_size.empty() && env && *env && !parse_cache_size(env)) {
    return usage_error(args, std::string("FXC_CACHE_MAX_SIZE: invalid size '") + env +
                                 "': " + kCacheSizeSyntax);
  }
  if (std::string e = app.count("--cuda-arch") ? cuda_arch_error(o->cuda_arch) : ""; !e.empty())
    return usage_error(args, e);
  if (o->input.empty() && o->log.find("help") == std::string::npos) {
    return usage_error(args, "no input graph");
  }
  return std::nullopt;
}

} // namespace fxc
