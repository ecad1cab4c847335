// Element types of tensors: names, sizes, PyTorch codes and type promotion.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fxc {

/// The element types fxc supports. Order is not significant; use the helpers below.
enum class DType : uint8_t { Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64 };

/// Short name as printed in readable graphs: "f32", "bf16", "i64", "b8", ...
std::string_view dtype_name(DType t);
/// Parses dtype_name()'s output and PyTorch names ("float32", "torch.float32", "float").
std::optional<DType> parse_dtype(std::string_view s);
/// Safetensors names: "F32", "BF16", "I64", "BOOL", "U8", ...
std::string_view dtype_safetensors_name(DType t);
std::optional<DType> parse_safetensors_dtype(std::string_view s);
/// torch.export's serialized ScalarType codes (BYTE=1 ... FLOAT=7, DOUBLE=8, BOOL=12, BFLOAT16=13).
std::optional<DType> dtype_from_torch_code(int64_t code);

size_t dtype_size(DType t);
bool is_floating(DType t);
bool is_integral(DType t); // excludes bool

/// PyTorch's promote_types for two tensor dtypes.
DType promote_types(DType a, DType b);

} // namespace fxc
