// LLVM diagnostics of one kernel's context, collected instead of printed: kernels compile on
// worker threads, and LLVM's default handler writes to a shared stream (interleaving lines)
// and calls exit() on an error (tearing down LLVM's statics under the other workers).
#pragma once

#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
} // namespace llvm

namespace fxc {

/// Installs itself as `ctx`'s diagnostic handler for its lifetime (which must not exceed the
/// context's; the destructor takes the handler away again). Errors and warnings are kept as "<kernel>: <message>" lines; remarks and notes
/// LLVM would not print either are dropped.
class KernelDiagnostics {
public:
  KernelDiagnostics(llvm::LLVMContext& ctx, std::string kernel);
  ~KernelDiagnostics();
  KernelDiagnostics(const KernelDiagnostics&) = delete;
  KernelDiagnostics& operator=(const KernelDiagnostics&) = delete;

  /// Throws fxc::Error with the first error LLVM reported, if any.
  void throw_if_error() const;
  /// The warnings, in the order LLVM reported them.
  const std::vector<std::string>& warnings() const { return warnings_; }

private:
  llvm::LLVMContext& ctx_;
  std::string kernel_;
  std::vector<std::string> errors_, warnings_;
};

/// Prints kernels' warnings to stderr from the calling thread, kernel by kernel in the order
/// given (the request order, not the schedule's), one write per line.
void print_kernel_warnings(const std::vector<std::vector<std::string>>& per_kernel);

} // namespace fxc
