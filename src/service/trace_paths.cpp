// Which files a list of trace paths stands for, and the host log beside a trace.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "epochcast/core/error.hpp"
#include "epochcast/service/service.hpp"

namespace epochcast {

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool looks_like_metric_log(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  if (name.empty() || name.front() == '.') return false;
  if (ends_with(name, ".host.csv") || ends_with(name, ".truth.json")) return false;
  return ends_with(name, ".csv") || ends_with(name, ".log") || ends_with(name, ".json");
}

}  // namespace

std::vector<std::string> expand_trace_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& path : paths) {
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    // A symlink loop said "does not exist"; the reason is the system's.
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw Error(ErrorCode::kIo, fmt::format("cannot read '{}': {}", path, ec.message()));
    if (ec || !std::filesystem::exists(status))
      throw Error(ErrorCode::kIo, fmt::format("'{}' does not exist", path));
    if (!std::filesystem::is_directory(status)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    // A log-named entry that cannot be stat'ed (a symlink loop, a dangling link) is kept: its row
    // then says why it was not read. (A loop threw filesystem_error: exit 70; a dangling link
    // was skipped without a word.)
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      if (!looks_like_metric_log(entry.path())) continue;
      std::error_code status_ec, link_ec, exists_ec;
      const bool regular = entry.is_regular_file(status_ec);
      const bool broken_link = entry.is_symlink(link_ec) && (status_ec || !entry.exists(exists_ec));
      if (regular || broken_link) found.push_back(entry.path().string());
    }
    if (ec) throw Error(ErrorCode::kIo, fmt::format("cannot list folder '{}': {}", path, ec.message()));
    std::sort(found.begin(), found.end());
    if (found.empty()) throw Error(ErrorCode::kNotFound, fmt::format("folder '{}' holds no metric logs", path));
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::string sibling_host_trace(const std::string& trace_path) {
  std::string stem = trace_path;
  if (ends_with(stem, ".smi.csv")) stem.resize(stem.size() - 8);
  else if (ends_with(stem, ".csv")) stem.resize(stem.size() - 4);
  else return {};
  const std::string host = stem + ".host.csv";
  std::error_code ec;
  return host != trace_path && std::filesystem::is_regular_file(host, ec) ? host : std::string();
}

}  // namespace epochcast
