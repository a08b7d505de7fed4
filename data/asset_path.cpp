// Asset lookup: a short list of candidate roots, checked in order.
#include "data/asset_path.h"

#include <unistd.h>

#include <vector>

#include "tensor/error.h"

namespace urpe::data {

std::string find_asset_dir(const std::string& relative, const std::string& probe,
                           const std::string& what, const std::string& rebuild_hint) {
  std::vector<std::string> roots;
  char cwd[4096];
  if (::getcwd(cwd, sizeof(cwd)) != nullptr) roots.push_back(cwd);
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    for (int up = 0; up < 4; ++up) {
      const size_t slash = dir.find_last_of('/');
      if (slash == std::string::npos || slash == 0) break;
      dir.resize(slash);
      roots.push_back(dir);
    }
  }
#if defined(URPE_SOURCE_ROOT)
  roots.push_back(URPE_SOURCE_ROOT);
#endif
  std::string looked;
  for (const std::string& root : roots) {
    const std::string candidate = root + "/" + relative;
    if (::access((candidate + "/" + probe).c_str(), R_OK) == 0) return candidate;
    looked += (looked.empty() ? "" : ", ") + candidate;
  }
  URPE_FAIL(what << " (" << relative << ") was not found; looked in " << looked
                 << ". Run urpe from the repository root, or rebuild it with " << rebuild_hint);
}

}  // namespace urpe::data
