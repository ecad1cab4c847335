// The loop IR's text form read back: parse_loop_program(print_loop_program(p)) prints as p did.
#pragma once

#include "passes/loop_ir.h"

#include <string>

namespace fxc {

/// Parses the text print_loop_program writes (the form of ir_pre_fusion.txt and of
/// --print-after=lower); lines starting with "//" and blank lines are skipped. Variables take
/// their extents from the buffer's loop line; a buffer's origin ops are its origins without a
/// trailing "_<n>". What the text does not hold is left out: a fallback extern call has no
/// graph (the program can be fused, planned and compiled but not run), and indirect indices
/// (gather, embedding) are refused. Throws fxc::Error "<file>:<line>: ..." on malformed text; it
/// does not verify (passes/loop_ir_verify.h). Covered by test/unit/loop_ir_test.cpp.
LoopProgram parse_loop_program(const std::string& text, const std::string& file);

} // namespace fxc
