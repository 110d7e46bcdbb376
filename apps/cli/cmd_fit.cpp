// Placeholder until the fit command lands; replaced by its owner.
#include "commands.hpp"
#include "epochcast/core/error.hpp"

namespace epochcast::cli {

void add_fit_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("fit", "(not built yet)");
  cmd->allow_extras();
  cmd->callback([] { throw Error(ErrorCode::kUnsupported, "'fit' is not built yet"); });
}

}  // namespace epochcast::cli
