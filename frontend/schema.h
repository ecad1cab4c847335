// Op schemas: the argument lists of every ATen overload fxc knows, parsed from
// native_functions.yaml-style signature strings (one row per op in schema.cpp).
#pragma once

#include "frontend/graph.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fxc {

/// Base type of a schema argument. Lists and optionals are flags on ArgSchema.
enum class ArgType : uint8_t {
  Tensor,
  Int,
  SymInt,
  Float,
  Bool,
  Scalar,
  ScalarType,
  Layout,
  Device,
  MemoryFormat,
  Str,
  Generator
};

struct ArgSchema {
  std::string name;
  ArgType type = ArgType::Tensor;
  bool is_list = false;    ///< int[], Tensor[], Tensor?[] ...
  bool optional = false;   ///< T? (the element for Tensor?[])
  bool kwarg_only = false; ///< after '*'
  bool mutated = false;    ///< "Tensor(a!)": the op writes into this argument
  bool has_default = false;
  Arg default_value; ///< valid when has_default
};

struct ReturnSchema {
  bool is_list = false; ///< Tensor[] (e.g. split): the node has a variable number of outputs
};

struct OpSchema {
  std::string target; ///< "aten.addmm.default"
  std::vector<ArgSchema> args;
  std::vector<ReturnSchema> returns;
  bool is_view = false;    ///< output aliases the first input (view/reshape/permute ...)
  bool is_inplace = false; ///< mutates `self` (relu_, add_ ...)

  /// Position of the named argument, or -1.
  int index_of(std::string_view name) const;
  /// Whether the op writes into an argument: `self` of an in-place op or a "Tensor(a!)".
  bool writes() const;
};

/// Parses one signature such as
///   "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"
/// The overload name follows a '.' in the function name ("add.Tensor(...)"); none means
/// "default". Returns nullopt and sets *error on malformed input.
std::optional<OpSchema> parse_schema(std::string_view signature, std::string* error);

/// One argument as a call site spells it: by position (empty name) or by keyword.
struct CallArg {
  std::string name;
  Arg value;
};

/// Binds call arguments to `schema`: positionals in order, then keywords by name; fills in
/// defaults; coerces ints to floats for float parameters and checks every argument's kind
/// against its declared type. On success `args` has one entry per schema argument and
/// `given[i]` says whether the call spelled it out. On failure returns false with *error set
/// ("missing argument 'mat2'", "argument 'dim' expects int, got a tensor list").
bool bind_args(const OpSchema& schema, const std::vector<CallArg>& call, std::vector<Arg>* args,
               std::vector<bool>* given, std::string* error);

/// Whether `a` is exactly what bind_args stores for an argument declared as `schema` (the
/// verifier's kind check on already-bound nodes).
bool arg_matches(const ArgSchema& schema, const Arg& a);

/// Human-readable name of a schema type ("int[]", "Tensor?", "Scalar").
std::string arg_type_name(const ArgSchema& a);
/// Human-readable name of an argument's kind ("int", "tensor", "int list").
std::string_view arg_kind_name(Arg::Kind k);

/// The schema of a normalised target ("aten.addmm.default"), or nullptr when fxc does not know it.
const OpSchema* find_schema(std::string_view target);

/// Every known schema, sorted by target (for `--help`-style listings and exhaustive tests).
const std::vector<const OpSchema*>& all_schemas();

} // namespace fxc
