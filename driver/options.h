// The command line: every flag of docs/design.md §3, parsed with CLI11.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fxc {

enum class Backend { Eager, AotEager, AotEagerDecompPartition, Inductor };
enum class Mode { Inference, Train };
enum class DeviceKind { Auto, Cpu, Cuda };

/// Stage names in pipeline order; a backend runs a prefix of them.
const char* backend_name(Backend b);

struct Options {
  std::string input;          ///< the graph file
  bool input_spooled = false; ///< `input` is standard input ('-') spooled to a temporary file
  /// --link: combine these artifacts (.fxo; NAME=FILE renames a one-model one) into -o's file.
  bool link = false;
  std::vector<std::string> link_inputs;
  std::string model;  ///< --model=<name>: which model of an artifact of several to run
  std::string output; ///< -o
  Backend backend = Backend::Inductor;
  DeviceKind device = DeviceKind::Auto;
  Mode mode = Mode::Inference;
  bool run = false;
  std::string inputs, outputs, expect;
  double rtol = 1e-4, atol = 1e-5; ///< defaults suited to float32 (see man page)
  bool equal_nan = false;          ///< --equal-nan: NaN matches NaN in --expect
  uint64_t seed = 0;
  bool check_accuracy = false;
  bool bench = false, bisect = false, minify = false;
  bool json = false;        ///< --json: --bench prints one JSON object on stdout
  bool time_passes = false; ///< --time-passes: per-pass wall times on stderr at exit
  std::string inject_bug;
  std::string debug_dir;
  std::string log;
  std::string emit;      ///< fxg|fx|llvm|ptx|obj|cpp; "" = default action
  bool emit_asm = false; ///< -S
  std::string trace;
  std::string report;       ///< --report=<dir>: the compile (and run/bench) as a static HTML site
  std::string command_line; ///< the arguments as given (after @file expansion), for --report
  std::string compare; ///< --compare=<debug dir>: with --report, what changed against that trace
  bool md = false;
  std::string mf, mt;
  std::string cache_dir;
  std::string cache_max_size; ///< --cache-max-size as given ("": $FXC_CACHE_MAX_SIZE, else 5G)
  bool no_cache = false;
  std::string remote_cache;                 ///< --remote-cache=redis://... ("" with it given: off)
  bool remote_cache_given = false;          ///< else $FXC_REMOTE_CACHE
  int64_t remote_cache_ttl = 7 * 24 * 3600; ///< --remote-cache-ttl seconds; 0: never expire
  bool explain_cache = false;               ///< --explain-cache: print the key, and why it misses
  bool max_autotune = false;
  bool verbose = false;
  bool verify_each = false; ///< graph verifier after every stage, loop-IR verifier after lower..
  std::string print_after;  ///< --print-after=STEP: the IR after that step on stderr
  std::string stop_after;   ///< --stop-after=STEP: end there, exit 0 (-o gets the IR)
  std::string diagnostics = "text";
  std::string cuda_arch = "sm_90";
  /// --tf32=none|conv|matmul|all: which float32 CUDA ops may round their inputs to TF32. The
  /// default is PyTorch's: cuDNN convolutions may (torch.backends.cudnn.allow_tf32 is True),
  /// matmuls may not (torch.backends.cuda.matmul.allow_tf32 is False). --allow-tf32 is "all".
  std::string tf32 = "conv";
  bool matmul_tf32() const { return tf32 == "matmul" || tf32 == "all"; }
  bool conv_tf32() const { return tf32 == "conv" || tf32 == "all"; }
  /// --dtype=bf16|f16: convert a float32 graph as torch.autocast(dtype=...) does
  /// (passes/autocast.h); "" (the default) compiles the graph in the dtypes it has.
  std::string dtype;
  /// --cuda-graphs (the default) / --no-cuda-graphs: replay the CUDA plan as one captured CUDA
  /// graph from its second run on, wherever every step can be captured.
  bool cuda_graphs = true;
  /// --no-freeze: keep the kernels that read only weights (e.g. --dtype's weight casts) in every
  /// run instead of computing them once when the plan is loaded (Plan::prepare; inference only).
  bool freeze = true;
  /// --conv-layout=auto|nchw|nhwc: the layout of convolutions (cuDNN's, oneDNN's) and of the
  /// values computed from them. auto (the default): in inference channels-last (NHWC; on CUDA
  /// unless the graph has a grouped convolution, ConvLayout::Auto), NCHW in train mode.
  std::string conv_layout = "auto";
  /// The layout asked of the lowering: "nchw", "nhwc" or "auto" (auto in train mode is "nchw").
  std::string effective_conv_layout() const {
    return conv_layout == "auto" && mode == Mode::Train ? "nchw" : conv_layout;
  }
  /// --attention=fused|decomposed: CUDA inference runs scaled_dot_product_attention as one
  /// cuDNN fused (flash) attention call where cuDNN supports it (f16/bf16, passes/decompose.h
  /// cudnn_attention), or as its decomposition (two matmuls around a softmax).
  std::string attention = "fused";
  std::vector<std::string> plugins;
  std::string color = "auto"; ///< --color=auto|always|never: colored diagnostics on stderr
  bool werror = false;        ///< -Werror: warnings are errors (exit 2)
  /// Options given explicitly, for the "argument unused" warnings (their defaults say nothing).
  bool rtol_given = false, atol_given = false, seed_given = false, cuda_arch_given = false;
  bool tf32_given = false, cuda_graphs_given = false, conv_layout_given = false;
  bool attention_given = false;
  int threads = 0; ///< --threads: CPU threads of the compiler's and the kernels' pools (0: all)
};

/// The candidate closest to `word` by edit distance, or "" when none is close enough to be the
/// word the user meant (clang's "did you mean" rule: at most a third of the word's letters).
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

/// The version text --version prints: fxc's version, its LLVM and whether it targets CUDA.
std::string version_text();

/// Parses argv (after expanding @response-files). Returns the exit status to use immediately
/// (0 after --help/--version, 2 on a usage error, having printed the message), or nullopt to go on.
std::optional<int> parse_options(int argc, char** argv, Options* opts);

/// Expands "@file" arguments into the whitespace-separated (quote-aware) words of the file.
/// Returns false and sets *error if a response file cannot be read.
bool expand_response_files(std::vector<std::string>* args, std::string* error);

} // namespace fxc
