// PyTorch's tensor rules in one place (c10/core/ScalarType.h, ATen/native/TypeProperties.cpp,
// ATen/ExpandUtils.cpp, c10/core/WrapDimMinimal.h).
#include "frontend/tensor_rules.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>

namespace fxc {

namespace {

std::optional<DType> promote(std::optional<DType> a, std::optional<DType> b) {
  if (!a) return b;
  if (!b) return a;
  return promote_types(*a, *b);
}

// c10's combine_categories: the higher class wins unless the lower has a higher category.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating(*higher)) return higher;
  if (*higher == DType::Bool || is_floating(*lower)) return promote(higher, lower);
  return higher;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

} // namespace

void ResultType::add_tensor(DType t, int64_t rank) {
  auto& slot = rank == 0 ? zero_ : dim_;
  slot = promote(slot, t);
}

void ResultType::add_number(const Arg& a) {
  if (a.is_none()) return;
  wrapped_ = promote(wrapped_, wrapped_number_dtype(a, default_float_));
}

DType ResultType::result() const {
  std::optional<DType> r = combine(dim_, combine(zero_, wrapped_));
  assert(r && "result_type of no operands");
  return *r;
}

DType wrapped_number_dtype(const Arg& a, DType default_float) {
  if (a.kind == Arg::Kind::Float) return default_float;
  if (a.kind == Arg::Kind::Bool) return DType::Bool;
  return DType::I64;
}

std::string_view scalar_type_name(DType t) {
  const char* name = "?";
  switch (t) {
  case DType::Bool:
    name = "Bool";
    break;
  case DType::U8:
    name = "Byte";
    break;
  case DType::I8:
    name = "Char";
    break;
  case DType::I16:
    name = "Short";
    break;
  case DType::I32:
    name = "Int";
    break;
  case DType::I64:
    name = "Long";
    break;
  case DType::F16:
    name = "Half";
    break;
  case DType::BF16:
    name = "BFloat16";
    break;
  case DType::F32:
    name = "Float";
    break;
  case DType::F64:
    name = "Double";
    break;
  }
  return name;
}

std::string not_implemented_message(std::string_view kernel, DType t) {
  return "\"" + std::string(kernel) + "\" not implemented for '" +
         std::string(scalar_type_name(t)) + "'";
}

bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a,
                                      const std::vector<int64_t>& b) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      throw std::invalid_argument("shapes " + join(a) + " and " + join(b) +
                                  " cannot be broadcast: size " + std::to_string(x) + " vs " +
                                  std::to_string(y) + " at dimension " + std::to_string(i));
    out[i] = x == 1 ? y : x;
  }
  return out;
}

int64_t wrap_dim(int64_t dim, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r)
    throw std::out_of_range("dimension out of range (expected to be in range of [" +
                            std::to_string(-r) + ", " + std::to_string(r - 1) + "], but got " +
                            std::to_string(dim) + ")");
  return dim < 0 ? dim + r : dim;
}

std::optional<std::vector<int64_t>> checked_contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> st(sizes.size());
  int64_t acc = 1;
  bool overflow = false;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = acc;
    overflow |= __builtin_mul_overflow(acc, std::max<int64_t>(sizes[i], 1), &acc);
  }
  if (overflow) return std::nullopt;
  return st;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  if (auto st = checked_contiguous_strides(sizes)) return *st;
  // Sizes nobody has checked yet (a file's header): wrap around, defined, as the callers then
  // reject the sizes with their own message.
  std::vector<int64_t> st(sizes.size());
  uint64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = int64_t(acc);
    acc *= uint64_t(std::max<int64_t>(sizes[i], 1));
  }
  return st;
}

} // namespace fxc
