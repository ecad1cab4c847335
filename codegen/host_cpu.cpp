// The host CPU as LLVM's code generator sees it: triple, CPU name and sorted features.
#include "codegen/host_cpu.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <vector>

namespace fxc {

std::string host_cpu_description() {
  // getHostCPUFeatures() is a hash map: sort its entries so the text is stable.
  std::vector<std::string> features;
  for (const auto& f : llvm::sys::getHostCPUFeatures())
    features.push_back((f.getValue() ? "+" : "-") + f.getKey().str());
  std::sort(features.begin(), features.end());
  std::string out = llvm::sys::getProcessTriple() + " " + llvm::sys::getHostCPUName().str() + " ";
  for (size_t i = 0; i < features.size(); ++i) out += (i ? "," : "") + features[i];
  return out;
}

} // namespace fxc
