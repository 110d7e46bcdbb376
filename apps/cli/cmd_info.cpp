// Placeholder until the info command lands; replaced by its owner.
#include "commands.hpp"
#include "epochcast/core/error.hpp"

namespace epochcast::cli {

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "(not built yet)");
  cmd->allow_extras();
  cmd->callback([] { throw Error(ErrorCode::kUnsupported, "'info' is not built yet"); });
}

}  // namespace epochcast::cli
