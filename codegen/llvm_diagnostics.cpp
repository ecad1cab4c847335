// LLVM diagnostics of one kernel's context, collected per kernel and printed in kernel order.
#include "codegen/llvm_diagnostics.h"

#include "frontend/diag.h"

#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdio>

namespace fxc {

KernelDiagnostics::KernelDiagnostics(llvm::LLVMContext& ctx, std::string kernel)
    : ctx_(ctx), kernel_(std::move(kernel)) {
  ctx.setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo* info, void* self_ptr) {
        auto* self = static_cast<KernelDiagnostics*>(self_ptr);
        const llvm::DiagnosticInfo& di = *info;
        if (di.getSeverity() != llvm::DS_Error && di.getSeverity() != llvm::DS_Warning) return;
        std::string text;
        llvm::raw_string_ostream os(text);
        llvm::DiagnosticPrinterRawOStream printer(os);
        di.print(printer);
        os.flush();
        (di.getSeverity() == llvm::DS_Error ? self->errors_ : self->warnings_)
            .push_back(self->kernel_ + ": " + text);
      },
      this, /*RespectFilters=*/true);
}

KernelDiagnostics::~KernelDiagnostics() { ctx_.setDiagnosticHandlerCallBack(nullptr, nullptr); }

void KernelDiagnostics::throw_if_error() const {
  if (!errors_.empty()) throw Error("", "LLVM error in kernel " + errors_.front());
}

void print_kernel_warnings(const std::vector<std::vector<std::string>>& per_kernel) {
  for (const std::vector<std::string>& warnings : per_kernel)
    for (const std::string& w : warnings) {
      std::string line = "fxc: warning: " + w + "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
    }
}

} // namespace fxc
