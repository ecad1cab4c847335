// Philox4x32-10 (frontend/philox.h) against the known-answer vectors of Random123
// (kat_vectors: philox4x32 10), and the sample conversions of docs/random.md.
#include <doctest/doctest.h>

#include "frontend/philox.h"

#include <cmath>

using namespace fxc;

TEST_CASE("philox: Random123 known-answer vectors") {
  using philox::Block;
  CHECK(philox::philox4x32_10({0, 0, 0, 0}, 0, 0) ==
        Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(philox::philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, 0xffffffff,
                              0xffffffff) == Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(philox::philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0xa4093822,
                              0x299f31d0) == Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
  // draw(): key = seed, counter = (index, stream) in 32-bit halves.
  CHECK(philox::draw(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull) ==
        Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("philox: conversions to samples") {
  philox::Block top = {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff};
  philox::Block zero = {0, 0, 0, 0};
  // The largest uniform of each dtype is 1 - 2^-bits, exactly representable: never 1.
  CHECK(philox::uniform(top, DType::F32) == 1.0 - 0x1p-24);
  CHECK(float(philox::uniform(top, DType::F32)) < 1.0f);
  CHECK(philox::uniform(top, DType::F64) == 1.0 - 0x1p-53);
  CHECK(philox::uniform(top, DType::F16) == 1.0 - 0x1p-11);
  CHECK(philox::uniform(top, DType::BF16) == 1.0 - 0x1p-8);
  CHECK(philox::uniform(zero, DType::F32) == 0.0);
  // Box-Muller: u1 = 2^-32 (w0 = 0) gives the largest radius, finite.
  CHECK(std::isfinite(philox::normal(zero)));
  CHECK(philox::normal(zero) == doctest::Approx(std::sqrt(64 * std::log(2.0))));
  CHECK(philox::normal(top) == doctest::Approx(std::sqrt(-2 * std::log(1.0)) * 1.0));
  CHECK(philox::bits63(top) == INT64_MAX);
  CHECK(philox::node_stream("") == 0xCBF29CE484222325ull);
  CHECK(philox::node_stream("a") == 0xAF63DC4C8601EC8Cull);
}
