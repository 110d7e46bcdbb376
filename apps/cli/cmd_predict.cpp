// Placeholder until the predict command lands; replaced by its owner.
#include "commands.hpp"
#include "epochcast/core/error.hpp"

namespace epochcast::cli {

void add_predict_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("predict", "(not built yet)");
  cmd->allow_extras();
  cmd->callback([] { throw Error(ErrorCode::kUnsupported, "'predict' is not built yet"); });
}

}  // namespace epochcast::cli
