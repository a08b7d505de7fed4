// Where the embedded data sets (data/assets/...) are on this machine. urpe runs from the
// repository root, from its build directory, or installed elsewhere; this searches the current
// directory, the executable's directory and its parents, and the source tree the binary was
// built from, so `urpe demo` and the tests find the assets wherever they are started.
#pragma once
#include <string>

namespace urpe::data {

// The first `<root>/<relative>` containing `probe` (a file or directory name inside it);
// otherwise an error listing every place looked and how to rebuild (`rebuild_hint`).
std::string find_asset_dir(const std::string& relative, const std::string& probe,
                           const std::string& what, const std::string& rebuild_hint);

}  // namespace urpe::data
