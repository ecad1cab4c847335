// The command line: every flag of DESIGN.md §3, parsed with CLI11.
#include "driver/options.h"

#include "driver/cache.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace fxc {

const char* backend_name(Backend b) {
  switch (b) {
  case Backend::Eager: return "eager";
  case Backend::AotEager: return "aot_eager";
  case Backend::AotEagerDecompPartition: return "aot_eager_decomp_partition";
  case Backend::Inductor: return "inductor";
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
        if (c == quote) quote = 0;
        else if (c == '\\' && quote == '"' && k + 1 < text.size()) word += text[++k];
        else word += c;
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
    "FXC_REPRO_LEVEL.  Exit status: 0 ok, 1 bad input or failed check, 2 usage error,\n"
    "70 internal compiler error.  See fxc(1).";

} // namespace

std::optional<int> parse_options(int argc, char** argv, Options* o) {
  std::vector<std::string> args(argv, argv + argc);
  std::string err;
  if (!expand_response_files(&args, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 2;
  }

  CLI::App app{kDescription, "fxc"};
  app.footer(kFooter);
  app.get_formatter()->column_width(40);
  bool version = false;
  app.add_option("graph", o->input, "Graph file: .pt2, .fxg or .fxg.zst");
  app.add_option("-o", o->output,
                 "Output file (default <stem>.fxo; --emit: <stem>.<ext>; - for stdout)");
  std::map<std::string, Backend> backends{{"eager", Backend::Eager},
                                          {"aot_eager", Backend::AotEager},
                                          {"aot_eager_decomp_partition", Backend::AotEagerDecompPartition},
                                          {"inductor", Backend::Inductor}};
  app.add_option("--backend", o->backend, "Pipeline prefix to run (default inductor)")
      ->transform(CLI::CheckedTransformer(backends, CLI::ignore_case))
      ->option_text("eager|aot_eager|aot_eager_decomp_partition|inductor");
  std::map<std::string, DeviceKind> devices{{"cpu", DeviceKind::Cpu}, {"cuda", DeviceKind::Cuda}};
  app.add_option("--device", o->device, "Target device (default: cuda when a driver and device are present, else cpu)")
      ->transform(CLI::CheckedTransformer(devices, CLI::ignore_case))
      ->option_text("cpu|cuda");
  std::map<std::string, Mode> modes{{"inference", Mode::Inference}, {"train", Mode::Train}};
  app.add_option("--mode", o->mode, "inference (default) or train (forward + backward)")
      ->transform(CLI::CheckedTransformer(modes, CLI::ignore_case))
      ->option_text("inference|train");
  app.add_flag("--run", o->run, "Compile, then execute once");
  app.add_option("--inputs", o->inputs, "Inputs by name (input_0.. or graph input names); default: seeded random")
      ->option_text("<f.safetensors>");
  app.add_option("--outputs", o->outputs, "Write outputs (and gradients in train mode)")
      ->option_text("<f.safetensors>");
  app.add_option("--expect", o->expect, "Compare outputs with these (output_<i>, grad.<name>)")
      ->option_text("<f.safetensors>");
  app.add_option("--rtol", o->rtol, "Relative tolerance for --expect (default 1e-4)");
  app.add_option("--atol", o->atol, "Absolute tolerance for --expect (default 1e-5)");
  app.add_option("--seed", o->seed, "Seed for random inputs (default 0)");
  app.add_flag("--check-accuracy", o->check_accuracy, "Compare against the float64 eager reference");
  app.add_flag("--bench", o->bench,
               "Time the compiled graph: warm-up, cache flush, median/p20/p80 over a time budget, "
               "per-kernel times, GB/s and TFLOP/s (CUDA events on cuda)");
  app.add_flag("--json", o->json, "With --bench: print the results as one JSON object on stdout");
  app.add_flag("--time-passes", o->time_passes, "Print each compiler pass's wall time to stderr at exit");
  app.add_flag("--bisect", o->bisect, "Run every backend in stage order, report the first that fails");
  app.add_flag("--minify", o->minify, "Shrink a failing graph to a minimal repro");
  app.add_option("--inject-bug", o->inject_bug, "Testing only: plant a codegen bug in <op>")
      ->option_text("<op>:compile_error|runtime_error|accuracy");
  app.add_option("--debug-dir", o->debug_dir, "Write the debug trace there")->option_text("<dir>");
  app.add_option("--log", o->log, "Log components and artifacts (like TORCH_LOGS); 'help' lists them")
      ->option_text("<list>");
  app.add_option("--emit", o->emit, "Write one intermediate instead of the artifact")
      ->check(CLI::IsMember({"fxg", "fx", "llvm", "ptx", "obj", "cpp"}))
      ->option_text("fxg|fx|llvm|ptx|obj|cpp");
  app.add_flag("-S", o->emit_asm, "Same as --emit=ptx for cuda, --emit=llvm for cpu");
  app.add_option("--trace", o->trace,
                 "Write a Chrome trace (Perfetto): compile passes, and the kernels of one --bench run")
      ->option_text("<f.json>");
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
  app.add_flag("--max-autotune", o->max_autotune,
               "Inductor: time candidate configurations and keep the fastest (CPU: grain sizes "
               "of each kernel; CUDA, on the device: thread mappings of each kernel and cuBLASLt "
               "algorithms of each matmul), remembered in <cache dir>/autotune.json "
               "(--log=autotune shows them)");
  app.add_flag("--verify-each", o->verify_each, "Run the graph verifier after every stage");
  app.add_option("--diagnostics", o->diagnostics,
                 "Diagnostics as text, or one JSON object per line on stderr")
      ->check(CLI::IsMember({"text", "json"}))
      ->option_text("text|json");
  app.add_option("--cuda-arch", o->cuda_arch, "CUDA architecture (default sm_90)");
  app.add_flag("--allow-tf32", o->allow_tf32,
               "CUDA: float32 matmuls (cuBLASLt) and convolutions (cuDNN) may use TF32 tensor cores");
  app.add_flag("--cuda-graphs", o->cuda_graphs,
               "CUDA: capture the plan into a CUDA graph on the first run and replay it");
  app.add_option("--plugin", o->plugins, "Load custom ops from a plugin library (include/fxc/plugin.h); repeatable")->option_text("<lib.so>");
  app.add_option("--threads", o->threads,
                 "CPU threads shared by code generation and CPU kernels (default: all hardware "
                 "threads); the output does not depend on it")
      ->check(CLI::Range(1, 1024))
      ->option_text("<n>");
  app.add_flag("-v", o->verbose, "Print what the driver does, stage by stage, with timings");
  app.add_flag("--version", version, "Print the version and exit");

  // -MD/-MF/-MT are spelled with one dash like clang's; CLI11 wants two for long names.
  std::vector<std::string> fixed;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-MD") fixed.push_back("--MD");
    else if (a == "-MF" || a == "-MT") fixed.push_back("-" + a);
    else fixed.push_back(a);
  }
  std::reverse(fixed.begin(), fixed.end()); // CLI11 parses a reversed vector
  try {
    app.parse(fixed);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    // The options are not parsed, so look for --diagnostics=json among the words themselves.
    bool json = false;
    for (size_t i = 1; i < args.size(); ++i)
      if (args[i] == "--diagnostics=json" ||
          (args[i] == "--diagnostics" && i + 1 < args.size() && args[i + 1] == "json"))
        json = true;
    if (json) {
      nlohmann::ordered_json j = {{"severity", "error"}, {"file", ""}, {"node", ""},
                                  {"op", ""}, {"message", e.what()}};
      std::fprintf(stderr, "%s\n", j.dump().c_str());
      return 2;
    }
    std::fprintf(stderr, "fxc: error: %s\n", e.what());
    std::fprintf(stderr, "Run 'fxc --help' for usage.\n");
    return 2;
  }
  if (version) {
    std::printf("fxc version %s\n", FXC_VERSION);
    return 0;
  }
  if (const char* env = std::getenv("FXC_CACHE_MAX_SIZE");
      o->cache_max_size.empty() && env && *env && !parse_cache_size(env)) {
    std::fprintf(stderr, "fxc: error: FXC_CACHE_MAX_SIZE: invalid size '%s': %s\n", env,
                 kCacheSizeSyntax);
    return 2;
  }
  if (o->input.empty() && o->log.find("help") == std::string::npos) {
    std::fprintf(stderr, "fxc: error: no input graph\nRun 'fxc --help' for usage.\n");
    return 2;
  }
  return std::nullopt;
}

} // namespace fxc
