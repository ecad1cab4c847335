// The loop-IR verifier: the invariants lowering guarantees and fusion, memory planning and code
// generation rely on, checked with a message naming the buffer.
#pragma once

#include "passes/loop_ir.h"

#include <string>
#include <vector>

namespace fxc {

/// Every broken invariant of `p`, one message each ("buf3: load of buf7, which is defined after
/// it"), in buffer order; empty when `p` is well formed. Checked: buffer names unique; inputs
/// are a user input or a weight; each computed buffer's loop has one variable per dim (x<i> of
/// extent sizes[i], r<j> of extent rsizes[j] for reductions), a body whose loads read buffers
/// defined before it at indices within their extents that use only the buffer's own loop
/// variables, and consistent dtypes (binary operands alike, comparisons Bool, where's condition
/// Bool, the body's dtype the buffer's except for argmax/argmin); extern operands are views
/// within their buffers and extern outputs name their call; graph outputs are views within
/// their buffers, of their dtype. Covered by test/unit/loop_ir_test.cpp.
std::vector<std::string> loop_program_errors(const LoopProgram& p);

/// Throws fxc::Error (file p.source) with every message of loop_program_errors, headed by
/// "loop IR is not well formed <when>", when there is any.
void verify_loop_program(const LoopProgram& p, const std::string& when);

} // namespace fxc
