// Element types: names, sizes, PyTorch codes and type promotion.
#include "frontend/dtype.h"

#include <cassert>

namespace fxc {

namespace {
struct DTypeInfo {
  DType t;
  std::string_view name, st_name, torch_name;
  int64_t torch_code;
  size_t size;
};
constexpr DTypeInfo kInfo[] = {
    {DType::Bool, "b8", "BOOL", "bool", 12, 1},  {DType::U8, "u8", "U8", "uint8", 1, 1},
    {DType::I8, "i8", "I8", "int8", 2, 1},       {DType::I16, "i16", "I16", "int16", 3, 2},
    {DType::I32, "i32", "I32", "int32", 4, 4},   {DType::I64, "i64", "I64", "int64", 5, 8},
    {DType::F16, "f16", "F16", "float16", 6, 2}, {DType::BF16, "bf16", "BF16", "bfloat16", 13, 2},
    {DType::F32, "f32", "F32", "float32", 7, 4}, {DType::F64, "f64", "F64", "float64", 8, 8},
};
const DTypeInfo& info(DType t) {
  for (const auto& i : kInfo)
    if (i.t == t) return i;
  assert(false && "unknown dtype");
  return kInfo[0];
}
} // namespace

std::string_view dtype_name(DType t) {
  return info(t).name;
}
std::string_view dtype_safetensors_name(DType t) {
  return info(t).st_name;
}
size_t dtype_size(DType t) {
  return info(t).size;
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s.substr(0, 6) == "torch.") s = s.substr(6);
  for (const auto& i : kInfo)
    if (s == i.name || s == i.torch_name) return i.t;
  if (s == "float") return DType::F32;
  if (s == "double") return DType::F64;
  if (s == "half") return DType::F16;
  if (s == "long") return DType::I64;
  if (s == "int") return DType::I32;
  return std::nullopt;
}

std::optional<DType> parse_safetensors_dtype(std::string_view s) {
  for (const auto& i : kInfo)
    if (s == i.st_name) return i.t;
  return std::nullopt;
}

std::optional<DType> dtype_from_torch_code(int64_t code) {
  for (const auto& i : kInfo)
    if (code == i.torch_code) return i.t;
  return std::nullopt;
}

bool is_floating(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64;
}
bool is_integral(DType t) {
  return t == DType::U8 || t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa != fb) return fa ? a : b;
  if (fa) {
    // f16 + bf16 -> f32; otherwise the wider one.
    if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16))
      return DType::F32;
    return dtype_size(a) >= dtype_size(b) ? a : b;
  }
  // Integers: u8 with a signed type widens to the next signed type that holds both.
  if (a == DType::U8 || b == DType::U8) {
    DType o = a == DType::U8 ? b : a;
    return o == DType::I8 ? DType::I16 : o;
  }
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

} // namespace fxc
