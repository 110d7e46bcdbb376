// epochcast: predict per-epoch training time on every GPU type from one GPU's metric log.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "completion.hpp"
#include "epochcast/core/data_dir.hpp"
#include "epochcast/core/did_you_mean.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/service/request.hpp"

namespace {

bool wants_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--json") == 0) return true;
  return false;
}

// One line on stderr, or one JSON error object on stdout under --json.
int report(bool json, const char* code, const std::string& message, int status) {
  if (json) {
    std::cout << epochcast::cli::dump_json(nlohmann::json{{"error", {{"code", code}, {"message", message}}}}) << "\n";
  } else {
    std::cerr << "epochcast: error: " << message << "\n";
  }
  return status;
}

// Output lost to a full disk or a closed stdout must not pass for success: scripts read it.
// Said on stderr, since stdout is what failed.
int check_stdout() {
  errno = 0;
  std::cout.flush();  // flushes stdout itself (synced with stdio): the failing write is here
  const bool failed = !std::cout || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (!failed) return 0;
  const int err = errno;
  std::cerr << "epochcast: error: cannot write to standard output" << (err ? ": " : "")
            << (err ? std::strerror(err) : "") << "\n";
  return epochcast::exit_status(epochcast::ErrorCode::kIo);
}

// `epochcast predcit …`: the command meant, when a known one is near the word given.
std::string unknown_command(const CLI::App& app, const std::string& word) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  const auto near = epochcast::closest_name(word, names);
  std::string commands;
  for (const auto& n : names) commands += (commands.empty() ? "" : ", ") + n;
  return "unknown command '" + word + "'" + (near ? "; did you mean '" + *near + "'?" : "") +
         " (commands: " + commands + "; epochcast --help)";
}

}  // namespace

namespace epochcast::cli {

std::string flag_for_field(std::string_view field) {
  static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {
      {"source_epoch_s", "--epoch-s"},   {"min_detection_confidence", "--min-confidence"},
      {"interval_s", "--interval"},      {"min_period_s", "--min-period"},
      {"max_period_s", "--max-period"},  {"data_path", "--data"},
      {"catalog_path", "--catalog"},     {"test_path", "--test"},
      {"job_key", "--job"},              {"store_path", "--store"},
      {"every_s", "--every"},            {"lookback_s", "--lookback"},
      {"settle_s", "--settle"},          {"timeout_s", "--timeout"},
      {"url", "--prometheus"},           {"job_key_template", "--job-key"},
  };
  for (const auto& [name, flag] : kFlags)
    if (name == field) return std::string(flag);
  if (const auto dot = field.rfind('.'); dot != std::string_view::npos) field.remove_prefix(dot + 1);  // prometheus.start
  std::string flag = "--" + std::string(field);
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

}  // namespace epochcast::cli

int main(int argc, char** argv) {
  CLI::App app{"epochcast: predict the epoch time of a training job on every GPU type\n"
               "from the hardware metrics of one run."};
  app.name("epochcast");
  // The data folder in use, so an installed copy can be seen to read its own share/epochcast.
  app.set_version_flag("--version", std::string("epochcast ") + EPOCHCAST_VERSION + "\ndata " + epochcast::data_dir());
  app.require_subcommand(1);
  epochcast::cli::add_info_command(app);
  epochcast::cli::add_detect_command(app);
  epochcast::cli::add_predict_command(app);
  epochcast::cli::add_fit_command(app);
  epochcast::cli::add_eval_command(app);
  epochcast::cli::add_collect_command(app);
  epochcast::cli::add_serve_command(app);
  epochcast::cli::add_jobs_command(app);
  epochcast::cli::add_watch_command(app);
  epochcast::cli::add_completion_command(app);

  // A bare call is a request for help, not a mistake.
  if (argc == 1) {
    std::cout << app.help();
    return 0;
  }

  const bool json = wants_json(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    // The first word names no command: say which one was meant.
    if (argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty()) {
      bool known = false;
      for (const CLI::App* sub : app.get_subcommands({})) known |= sub->get_name() == argv[1];
      if (!known) return report(json, "invalid_argument", unknown_command(app, argv[1]), 2);
    }
    return report(json, "invalid_argument", e.what(), 2);
  } catch (const epochcast::FieldError& e) {
    // The library names the request field; the CLI says the flag.
    return report(json, "invalid_argument", epochcast::cli::flag_for_field(e.field()) + " " + e.problem(),
                  epochcast::exit_status(e.code()));
  } catch (const epochcast::Error& e) {
    return report(json, epochcast::to_string(e.code()), e.what(), epochcast::exit_status(e.code()));
  } catch (const std::bad_alloc&) {
    return report(json, "internal", "out of memory", 70);
  } catch (const std::exception& e) {
    // fmt::print throws std::system_error when stdout fails mid-table: an I/O error, not a bug.
    if (std::ferror(stdout) != 0) return check_stdout();
    return report(json, "internal", e.what(), 70);
  }
  return check_stdout();
}
