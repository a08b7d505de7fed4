// The table of subcommands (names, options, help, handlers): one place to see what `urpe` does.
#pragma once
#include <vector>

#include "app/cli/command_line.h"

namespace urpe::cli {

std::vector<CommandSpec> command_table();

}  // namespace urpe::cli
