// Placeholder until the collect command lands; replaced by its owner.
#include "commands.hpp"
#include "epochcast/core/error.hpp"

namespace epochcast::cli {

void add_collect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("collect", "(not built yet)");
  cmd->allow_extras();
  cmd->callback([] { throw Error(ErrorCode::kUnsupported, "'collect' is not built yet"); });
}

}  // namespace epochcast::cli
