// `fxc --list-ops`: the op registry as a table, read from the layers themselves.
#include "driver/list_ops.h"

#include "frontend/composite.h"
#include "frontend/meta.h"
#include "frontend/ops.h"
#include "passes/autograd.h"
#include "passes/decompose.h"
#include "passes/lower.h"
#include "runtime/kernels.h"

#include <algorithm>
#include <sstream>

namespace fxc {

namespace {

std::string autograd_column(OpId id) {
  if (!has_tag(id, OpTag::Differentiable)) return "-";
  if (derivative_layer().has(id)) return "derivative";
  if (decomposition_layer().has(id) || autograd_form_layer().has(id)) return "decomposed";
  if (functionalizes(op_info(id).target)) return "functionalized";
  return "missing";
}

// A data-dependent op (nonzero) runs only on the eager interpreter. Inductor decomposes an op
// with a decomposition before lowering; an op with neither becomes
// an extern call of the reference kernel (on CUDA that is a round trip to the host; a CUDA plan
// refuses a LinalgDecomposition op instead, "no CUDA path"). An in-place
// op whose functional op is declared is rewritten to it (when nothing else aliases its storage).
std::string inductor_column(OpId id, bool cuda) {
  if (has_tag(id, OpTag::DataDependent)) return "eager only";
  if (decomposition_layer().has(id)) return "decomposed";
  if (lowering_layer().has(id)) return "lowered";
  if (functionalizes(op_info(id).target)) return "functionalized";
  // A LAPACK decomposition has no device path yet: a CUDA plan refuses it (passes/lower.cpp).
  if (cuda && has_tag(id, OpTag::LinalgDecomposition)) return "no CUDA path";
  return cuda ? "host fallback" : "extern fallback";
}

// Meta and eager: the op's own row, or its decomposition's (a composite op, frontend/composite.h),
// or for an in-place op, its functional op's followed by a copy into self.
std::string layer_column(const OpLayer& layer, OpId id) {
  if (layer.has(id)) return "yes";
  if (decomposition_layer().has(id)) return "decomposed";
  return has_tag(id, OpTag::Inplace) && is_composite(op_info(id).target) ? "functional" : "-";
}

std::string tags_column(OpId id) {
  std::string out;
  for (OpTag t : kAllOpTags)
    if (has_tag(id, t)) out += (out.empty() ? "" : ",") + std::string(tag_name(t));
  return out.empty() ? "-" : out;
}

} // namespace

std::string list_ops_text() {
  struct Line {
    std::string cells[7];
  };
  std::vector<Line> lines;
  lines.push_back({{"op", "meta", "eager", "autograd", "inductor-cpu", "inductor-cuda", "tags"}});
  for (const OpInfo& op : all_ops())
    lines.push_back(
        {{std::string(op.target), layer_column(meta_layer(), op.id),
          layer_column(kernel_layer(), op.id), autograd_column(op.id),
          inductor_column(op.id, false), inductor_column(op.id, true), tags_column(op.id)}});
  size_t width[6] = {};
  for (const Line& l : lines)
    for (size_t c = 0; c < 6; ++c) width[c] = std::max(width[c], l.cells[c].size());
  std::ostringstream os;
  for (const Line& l : lines) {
    for (size_t c = 0; c < 6; ++c)
      os << l.cells[c] << std::string(width[c] + 2 - l.cells[c].size(), ' ');
    os << l.cells[6] << '\n';
  }
  os << all_ops().size() << " ops\n";
  return os.str();
}

} // namespace fxc
