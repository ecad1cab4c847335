// The host CPU as LLVM's code generator sees it: what CPU code compiled here depends on.
#pragma once

#include <string>

namespace fxc {

/// "<process triple> <cpu name> <+feature,-feature,...>" with the features sorted: the target
/// that the x86-64 back end (codegen/target_x86.cpp, JITTargetMachineBuilder::detectHost)
/// compiles for on this machine. Deterministic on one machine; the compile cache keys CPU
/// artifacts on it, so a cache shared between machines never hands out foreign code.
std::string host_cpu_description();

} // namespace fxc
