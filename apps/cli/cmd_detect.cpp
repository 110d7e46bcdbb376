// Placeholder until the detect command lands; replaced by its owner.
#include "commands.hpp"
#include "epochcast/core/error.hpp"

namespace epochcast::cli {

void add_detect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("detect", "(not built yet)");
  cmd->allow_extras();
  cmd->callback([] { throw Error(ErrorCode::kUnsupported, "'detect' is not built yet"); });
}

}  // namespace epochcast::cli
