// Philox4x32-10 as the random ops use it (frontend/philox.h).
#include "frontend/philox.h"

#include <atomic>
#include <cmath>

namespace fxc::philox {
namespace {
std::atomic<uint64_t> g_seed{0};
} // namespace

uint64_t node_stream(std::string_view node_name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char ch : node_name) {
    h ^= uint8_t(ch);
    h *= 0x100000001B3ull;
  }
  return h;
}

uint64_t generator_seed() {
  return g_seed.load(std::memory_order_relaxed);
}

void set_generator_seed(uint64_t seed) {
  g_seed.store(seed, std::memory_order_relaxed);
}

int uniform_bits(DType t) {
  switch (t) {
  case DType::F64:
    return 53;
  case DType::F16:
    return 11;
  case DType::BF16:
    return 8;
  default:
    return 24;
  }
}

double uniform(const Block& b, DType t) {
  int bits = uniform_bits(t);
  if (bits == 53) return double((uint64_t(b[0]) << 21) | (b[1] >> 11)) * 0x1p-53;
  return double(b[0] >> (32 - bits)) * std::ldexp(1.0, -bits);
}

double normal(const Block& b) {
  double u1 = (double(b[0]) + 1.0) * 0x1p-32;
  double u2 = double(b[1]) * 0x1p-32;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

} // namespace fxc::philox
