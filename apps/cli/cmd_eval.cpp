// Placeholder until the eval command lands; replaced by its owner.
#include "commands.hpp"
#include "epochcast/core/error.hpp"

namespace epochcast::cli {

void add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "(not built yet)");
  cmd->allow_extras();
  cmd->callback([] { throw Error(ErrorCode::kUnsupported, "'eval' is not built yet"); });
}

}  // namespace epochcast::cli
