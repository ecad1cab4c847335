// User-facing diagnostics: one exception type carrying file, node and message.
#pragma once

#include <stdexcept>
#include <string>

namespace fxc {

/// A problem with the user's input (bad file, bad graph, failed check). Printed by the driver
/// as "<file>: error: [node '<node>' (<op>): ]<message>" and mapped to exit status 1.
/// Internal invariants use assert(); they never throw Error.
class Error : public std::runtime_error {
public:
  Error(std::string file, std::string message, std::string node = {}, std::string op = {})
      : std::runtime_error(format(file, message, node, op)), file_(std::move(file)),
        message_(std::move(message)), node_(std::move(node)), op_(std::move(op)) {}
  const std::string& file() const { return file_; }
  const std::string& message() const { return message_; }
  const std::string& node() const { return node_; }
  const std::string& op() const { return op_; }

  static std::string format(const std::string& file, const std::string& message,
                            const std::string& node, const std::string& op) {
    std::string s = file.empty() ? "fxc" : file;
    s += ": error: ";
    if (!node.empty()) {
      s += "node '" + node + "'";
      if (!op.empty()) s += " (" + op + ")";
      s += ": ";
    }
    return s + message;
  }

private:
  std::string file_, message_, node_, op_;
};

} // namespace fxc
