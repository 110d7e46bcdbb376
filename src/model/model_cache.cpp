// default_model: the bundled fit, cached per data, catalog, schema, options and executable.
#include "epochcast/model/stacked_model.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "epochcast/core/error.hpp"
#include "epochcast/core/read_file.hpp"
#include "epochcast/model/scaling_prior.hpp"
#include "stacked_internal.hpp"

namespace epochcast {

using namespace stacked;

// ---- default model ----

namespace {
std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The learners' code is part of what a cached model means: a rebuilt program (another size or
// modification time of its executable) must not reuse a model fitted by older code.
std::string program_identity() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "unknown program";
  const auto size = std::filesystem::file_size(exe, ec);
  if (ec) return exe.string();
  const auto mtime = std::filesystem::last_write_time(exe, ec).time_since_epoch().count();
  return exe.string() + ":" + std::to_string(size) + ":" + std::to_string(ec ? 0 : mtime);
}

// Each rebuild leaves a ~6 MB entry; the newest few are kept (several programs share the cache).
void prune_cache(const std::filesystem::path& dir, std::size_t keep) {
  std::error_code ec;
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> entries;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("model-") && name.ends_with(".json")) entries.emplace_back(e.last_write_time(ec), e.path());
  }
  if (entries.size() <= keep) return;
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = keep; i < entries.size(); ++i) std::filesystem::remove(entries[i].second, ec);
}
}  // namespace

std::shared_ptr<const StackedModel> default_model(ProgressFn progress) {
  static std::mutex mutex;
  // Leaked on purpose: destroying an XGBoost booster after XGBoost's statics crashes at exit.
  static auto& cached = *new std::shared_ptr<const StackedModel>();
  std::lock_guard lock(mutex);
  if (cached) return cached;
  const std::string data_path = default_dataset_path(), catalog_path = default_gpu_catalog_path();
  const FitOptions options;
  std::uint64_t key = fnv1a(file_bytes(data_path));
  key = fnv1a(file_bytes(catalog_path), key);
  // The scaling prior is fitted on the public table: a changed table is another model.
  key = fnv1a(file_bytes(default_public_throughput_path()), key);
  key = fnv1a(file_bytes(default_public_names_path()), key);
  key = fnv1a(model_schema_hash(options.include_memory_features), key);
  key = fnv1a(options_to_json(options).dump(), key);
  key = fnv1a(program_identity(), key);
  std::filesystem::path dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    dir = std::filesystem::path(x) / "epochcast";
  else if (const char* h = std::getenv("HOME"); h && *h)
    dir = std::filesystem::path(h) / ".cache" / "epochcast";
  const std::filesystem::path file = dir.empty() ? std::filesystem::path() : dir / ("model-" + hex(key) + ".json");
  const GpuCatalog catalog = load_gpu_catalog(catalog_path);
  const Dataset ds = load_dataset(data_path, catalog);
  if (!file.empty() && std::filesystem::exists(file)) {
    try {
      auto model = std::make_shared<const StackedModel>(load_model(file.string()));
      // Any valid model can sit at this path: it is the default only if it was fitted from the
      // bundled data (its fingerprint says so). Anything else is refitted and overwritten.
      if (model->data_fingerprint() == training_data_fingerprint(ds, make_pairs(ds), catalog)) {
        // The key covers the prior's inputs and the program: its prior is this process's.
        if (options.calibrated_prior && catalog_path == default_gpu_catalog_path())
          adopt_calibrated_scaling_prior(model->scaling_prior());
        cached = model;
        return cached;
      }
    } catch (const Error&) {
      // A damaged cache entry is refitted and overwritten below.
    }
  }
  auto model = std::make_shared<const StackedModel>(fit_model(ds, catalog, options, std::move(progress)));
  if (!file.empty()) {
    try {
      // The cache directory is this user's alone (0700), made so when this creates it.
      if (!std::filesystem::exists(dir)) {
        std::filesystem::create_directories(dir.parent_path());
        if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw Error(ErrorCode::kIo, "cannot create the cache");
      }
      save_model(*model, file.string());
      prune_cache(dir, 6);
    } catch (const std::exception&) {
      // Caching is an optimisation: a read-only home must not stop predict.
    }
  }
  cached = model;
  return cached;
}

}  // namespace epochcast
