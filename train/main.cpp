// The `urpe` binary: hands argv to the CLI and turns any urpe::Error into one readable line.
#include <cstdio>
#include <exception>

#include "train/cli.h"
#include "tensor/error.h"

int main(int argc, char** argv) {
  try {
    return urpe::cli::run(argc, argv);
  } catch (const urpe::Error& e) {
    std::fprintf(stderr, "urpe: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "urpe: internal error: %s\n", e.what());
    return 2;
  }
}
