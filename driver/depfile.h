// Make dependency files (-MD, -MF, -MT): which files an output was built from.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fxc {

/// `path` escaped for a Make rule: a space or tab gets a backslash (with the backslashes before
/// it doubled), '#' becomes "\#" and '$' becomes "$$", as GCC and clang write depfiles.
std::string make_escape(std::string_view path);

/// The text of a depfile: one rule, `<target>: <deps...>`, one dependency per continuation line.
/// `target` is written as given (like clang's -MT); dependencies are escaped, duplicates after the
/// first dropped. Deterministic: the order is the order given.
std::string depfile_text(const std::string& target, const std::vector<std::string>& deps);

/// Where -MD writes the depfile of `output` when -MF does not say: the output with its extension
/// replaced by ".d" (model.fxo -> model.d, out/x.ll -> out/x.d).
std::string default_depfile_path(const std::string& output);

/// Writes `text` to `path` through a temporary file and a rename, so Make never reads a half-
/// written depfile. Throws fxc::Error naming `path` when it cannot.
void write_depfile(const std::string& path, const std::string& text);

} // namespace fxc
