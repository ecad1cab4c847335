// The graph IR: values with tensor metadata, nodes naming ATen overloads, inputs and outputs.
//
// A Graph is what every importer produces and every later stage consumes. Nodes hold their
// arguments normalised to the op's schema (one Arg per schema argument, defaults filled in),
// so passes and kernels read arguments by position without re-parsing. `given` remembers which
// arguments the source spelled out, so printers reproduce the source faithfully.
#pragma once

#include "frontend/dtype.h"
#include "frontend/storage.h"
#include "frontend/symbolic.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fxc {

struct OpSchema;

struct Device {
  enum Kind : uint8_t { CPU, CUDA } kind = CPU;
  int index = -1; // -1: unspecified
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};
std::string device_name(const Device& d); // "cpu", "cuda:0"

/// torch.export's serialized codes: 1 contiguous, 2 channels_last, 3 channels_last_3d, 4 preserve.
enum class MemoryFormat : uint8_t {
  Contiguous = 1,
  ChannelsLast = 2,
  ChannelsLast3d = 3,
  Preserve = 4
};
/// Only strided tensors are supported; the code (7) is kept for round-tripping.
enum class Layout : uint8_t { Strided = 7 };

struct TensorMeta {
  DType dtype = DType::F32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;
  Device device;
  /// Dynamic graphs: the size (stride) of each dim as an expression over the graph's symbols
  /// (an empty entry: a static dim); `sizes` and `strides` hold the values at the hints. Empty
  /// for static tensors. Not compared by operator==.
  std::vector<SymExpr> sym_sizes, sym_strides;

  int64_t dim() const { return int64_t(sizes.size()); }
  int64_t numel() const;
  bool is_contiguous() const;
  bool operator==(const TensorMeta& o) const;
};

/// Row-major strides for `sizes` (frontend/tensor_rules.cpp; wraps around when they do not fit
/// in int64: checked_contiguous_strides says so).
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes);
/// Whether `strides` lay `sizes` out row-major; a dim of size 1 may have any stride (PyTorch's
/// is_contiguous).
bool is_contiguous_layout(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);
/// "f32[2, 16, 128]"
std::string format_meta(const TensorMeta& m);
/// "f32[2, 16, 128]" plus the strides when they are not contiguous: "f32[16, 2]{1, 16}"
std::string format_meta_with_strides(const TensorMeta& m);

using ValueId = int32_t; ///< index into Graph::values; -1 means "none"
constexpr ValueId kNoValue = -1;

/// One literal or reference argument of a node.
struct Arg {
  enum class Kind : uint8_t {
    None,
    Int,
    Float,
    Bool,
    String,
    Ints,
    Floats,
    Bools,
    Tensor,
    Tensors,
    DType,
    Device,
    MemoryFormat,
    Layout
  };
  Kind kind = Kind::None;
  int64_t i = 0;  // Int; also DType/MemoryFormat/Layout codes
  double f = 0;   // Float
  bool b = false; // Bool
  std::string s;  // String
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<bool> bools;
  ValueId tensor = kNoValue;    // Tensor
  std::vector<ValueId> tensors; // Tensors (kNoValue entries are None in Optional[Tensor] lists)
  fxc::Device device;
  /// Dynamic graphs: Int and Ints arguments computed from symbols (a view's sizes) hold the
  /// expression of each element here (an empty entry: a literal) and its value at the hints in
  /// `i` / `ints`. Empty when every element is a literal.
  std::vector<SymExpr> syms;

  static Arg none() { return {}; }
  static Arg of_int(int64_t v) {
    Arg a;
    a.kind = Kind::Int;
    a.i = v;
    return a;
  }
  static Arg of_float(double v) {
    Arg a;
    a.kind = Kind::Float;
    a.f = v;
    return a;
  }
  static Arg of_bool(bool v) {
    Arg a;
    a.kind = Kind::Bool;
    a.b = v;
    return a;
  }
  static Arg of_string(std::string v) {
    Arg a;
    a.kind = Kind::String;
    a.s = std::move(v);
    return a;
  }
  static Arg of_ints(std::vector<int64_t> v) {
    Arg a;
    a.kind = Kind::Ints;
    a.ints = std::move(v);
    return a;
  }
  static Arg of_floats(std::vector<double> v) {
    Arg a;
    a.kind = Kind::Floats;
    a.floats = std::move(v);
    return a;
  }
  static Arg of_bools(std::vector<bool> v) {
    Arg a;
    a.kind = Kind::Bools;
    a.bools = std::move(v);
    return a;
  }
  static Arg of_tensor(ValueId v) {
    Arg a;
    a.kind = Kind::Tensor;
    a.tensor = v;
    return a;
  }
  static Arg of_tensors(std::vector<ValueId> v) {
    Arg a;
    a.kind = Kind::Tensors;
    a.tensors = std::move(v);
    return a;
  }
  static Arg of_dtype(DType t) {
    Arg a;
    a.kind = Kind::DType;
    a.i = int64_t(t);
    return a;
  }
  static Arg of_device(fxc::Device d) {
    Arg a;
    a.kind = Kind::Device;
    a.device = d;
    return a;
  }
  static Arg of_memory_format(MemoryFormat m) {
    Arg a;
    a.kind = Kind::MemoryFormat;
    a.i = int64_t(m);
    return a;
  }
  static Arg of_layout(Layout l) {
    Arg a;
    a.kind = Kind::Layout;
    a.i = int64_t(l);
    return a;
  }

  bool is_none() const { return kind == Kind::None; }
  /// Int or Float as double (Scalar arguments).
  double scalar() const {
    return kind == Kind::Float ? f : kind == Kind::Bool ? double(b) : double(i);
  }
  DType dtype() const { return DType(i); }
  bool operator==(const Arg& o) const;
};

struct Value {
  std::string name;
  TensorMeta meta;
  int32_t producer = -1;    ///< index of the producing node in Graph::nodes; -1 for graph inputs
  int32_t output_index = 0; ///< which output of the producer
};

struct Node {
  std::string name;   ///< unique, e.g. "addmm_3"
  std::string target; ///< "aten.addmm.default"
  const OpSchema* schema = nullptr;
  std::vector<Arg> args;   ///< one per schema argument, defaults filled in
  std::vector<bool> given; ///< args[i] was spelled out by the source
  std::vector<ValueId> outputs;
  std::string stack_trace;     ///< Python traceback from the exporter, may be empty
  std::string nn_module_stack; ///< module path from the exporter, may be empty

  /// Argument by schema name; asserts the name exists.
  const Arg& arg(std::string_view name) const;
  /// ValueIds of every tensor argument in schema order (including lists), skipping None.
  std::vector<ValueId> tensor_inputs() const;
};

enum class InputKind : uint8_t { Parameter, Buffer, Constant, UserInput };
std::string_view input_kind_name(InputKind k);

struct GraphInput {
  ValueId value = kNoValue;
  InputKind kind = InputKind::UserInput;
  std::string fqn; ///< "fc1.weight" for parameters/buffers/constants; the user name otherwise
  bool persistent = true;
};

/// How a weight's values were generated (an .fxg "init" rule), kept so writers can re-emit the
/// rule instead of the bytes. Rules and their parameters are documented in docs/fxg.md.
struct WeightInit {
  std::string rule;                     ///< "kaiming_uniform", "uniform", "normal", "zeros", ...
  std::map<std::string, double> params; ///< rule parameters by name ("low", "high", "fan_in"...)
  uint64_t seed = 0;
};

/// The bytes behind a parameter, buffer or constant, with the view metadata into them.
struct WeightData {
  std::shared_ptr<Storage> storage;
  TensorMeta meta;
  std::optional<WeightInit> init; ///< set when the bytes come from an init rule
};

struct Graph {
  std::string source;         ///< file the graph came from (for diagnostics)
  std::string name = "model"; ///< stem used in debug directory names
  std::vector<Value> values;
  std::vector<Node> nodes; ///< in topological order
  std::vector<GraphInput> inputs;
  std::vector<ValueId> outputs;
  /// The last this-many outputs are the new values of inputs and buffers the program mutates
  /// (batch norm's running statistics in train mode), not results: a train step takes no
  /// gradient of them.
  size_t num_mutation_outputs = 0;
  std::map<std::string, WeightData> weights; ///< by fqn; every Parameter/Buffer/Constant has one
  /// Dynamic graphs: the shape symbols with their ranges and hints, sorted by name; the metas
  /// and arguments above are the graph at the hints (frontend/specialize.h makes it concrete).
  std::vector<SymbolRange> symbols;
  /// Nodes read from a disabled torch.autocast region of a default export (wrap_with_autocast
  /// with enabled=False, inlined): --dtype's conversion leaves them as the export traced them.
  std::set<std::string> autocast_disabled;
  /// Dynamic graphs: runtime assertions torch.export recorded (node name, condition), kept for
  /// --log=guards; fxc checks the symbols' ranges, not these.
  std::vector<std::pair<std::string, std::string>> sym_asserts;
  /// Data-dependent graphs: the unbacked symbols that a `Tensor.item()`
  /// (`_local_scalar_dense`) gives, each with the name of that 0-dim value; the eager
  /// interpreter binds them as the graph runs.
  std::vector<std::pair<std::string, std::string>> item_symbols;

  bool is_dynamic() const { return !symbols.empty(); }

  ValueId add_value(std::string name, TensorMeta meta);
  /// Looks a value up by name; kNoValue when absent. Linear time; build a map for bulk lookups.
  ValueId find_value(std::string_view name) const;
  /// Number of uses of each value by nodes and graph outputs.
  std::vector<int> use_counts() const;
};

/// Normalises "torch.ops.aten.addmm.default" and "aten::addmm" spellings to "aten.addmm.default".
std::string normalize_target(std::string_view target);

} // namespace fxc
