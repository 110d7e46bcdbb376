#include "epochcast/store/job_store.hpp"

#include <fmt/format.h>
#include <sys/random.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <istream>
#include <map>
#include <ostream>

#include "epochcast/core/error.hpp"
#include "epochcast/store/run_json.hpp"
#include "schema.hpp"
#include "sqlite.hpp"

namespace epochcast {
namespace {

// An import line longer than this is no run record (a run is ~4 KB of JSON).
constexpr std::size_t kMaxImportLineBytes = 1 << 20;

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Fresh OS randomness every call: a generator state copied into a fork()ed writer repeated the
// parent's uids (UNIQUE constraint failed; the kill -9 test found it). One getrandom() call:
// a std::random_device per run opened and closed a device each time.
std::string new_uid() {
  std::array<std::uint32_t, 4> w{};
  auto* p = reinterpret_cast<unsigned char*>(w.data());
  for (std::size_t got = 0; got < sizeof w;) {
    const ssize_t n = ::getrandom(p + got, sizeof w - got, 0);
    if (n > 0) got += static_cast<std::size_t>(n);
    else if (errno != EINTR) throw Error(ErrorCode::kIo, "cannot read the system's randomness for a run uid");
  }
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", w[0], w[1], w[2], w[3]);
}

void validate(const RunRecord& r) {
  if (r.gpu.empty()) throw Error(ErrorCode::kInvalidArgument, "run to record has no GPU (field 'gpu')");
  if (!(r.epoch_s >= 0) || !std::isfinite(r.epoch_s))
    throw Error(ErrorCode::kInvalidArgument, fmt::format("run to record has epoch_s {} (field 'epoch_s')", r.epoch_s));
  if (r.features.values.size() != feature_count())
    throw Error(ErrorCode::kInvalidArgument, "run to record has a feature row of the wrong size (field 'features')");
  for (const auto& p : r.predictions)
    if (p.target_gpu.empty() || !(p.epoch_s > 0) || !std::isfinite(p.epoch_s))
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("run to record has a prediction for '{}' of {} s (field 'predictions')", p.target_gpu,
                              p.epoch_s));
}

constexpr const char* kRunColumns =
    "id, uid, recorded_at, job_key, gpu, catalog_version, trace, detection, epoch_s, epoch_time_from, features, "
    "model_version";

RunRecord read_run(const sqlite::Stmt& st, const std::string& path) {
  RunRecord r;
  r.id = st.int64(0);
  const std::string where = fmt::format("{} (run {})", path, r.id);
  r.uid = st.text(1);
  r.recorded_at = st.text(2);
  r.job_key = st.text(3);
  r.gpu = st.text(4);
  r.catalog_version = st.text(5);
  r.trace = st.text(6);
  try {
    detection_from_json(nlohmann::json::parse(st.text(7)), r, where);
    r.features = features_from_json(nlohmann::json::parse(st.text(10)), where);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kParse, fmt::format("{}: damaged JSON in the store: {}", where, e.what()), {path, 0, 0, ""});
  }
  r.epoch_s = st.is_null(8) ? 0.0 : st.real(8);
  r.epoch_time_from = st.text(9);
  r.model_version = st.text(11);
  return r;
}

}  // namespace

struct JobStore::Impl {
  sqlite::Db db;
  int version = 0;
  bool read_only = true;
  // record()'s statements, prepared on first use and kept for every later run (declared after
  // db: finalised before it closes); bench/store_scale_bench.cpp, docs/journal/store.md.
  std::optional<sqlite::Stmt> insert_run, insert_prediction, find_feedback, insert_feedback;

  Impl(const std::string& path, bool ro) : db(path, ro), read_only(ro) {}

  sqlite::Stmt& cached(std::optional<sqlite::Stmt>& st, const char* sql) {
    if (st) st->reset();
    else st.emplace(db, sql);
    return *st;
  }

  bool has_tables() const { return version >= 1; }

  void attach_predictions(std::vector<RunRecord>& runs, const std::string& where_sql, std::int64_t arg) {
    std::map<std::int64_t, std::size_t> index;
    for (std::size_t i = 0; i < runs.size(); ++i) index[runs[i].id] = i;
    const std::string sql = fmt::format(
        "SELECT run_id, target_gpu, epoch_s, lo_s, hi_s, calibration_log FROM predictions {} ORDER BY run_id, rowid",
        where_sql);
    sqlite::Stmt st(db, sql.c_str());
    if (!where_sql.empty()) st.bind(1, arg);
    while (st.step()) {
      auto it = index.find(st.int64(0));
      if (it == index.end()) continue;
      runs[it->second].predictions.push_back({st.text(1), st.real(2), st.real(3), st.real(4), st.real(5)});
    }
  }

  RecordResult insert(RunRecord run) {
    validate(run);
    if (run.uid.empty()) run.uid = new_uid();
    if (run.recorded_at.empty()) run.recorded_at = utc_now();
    RecordResult out;
    {
      sqlite::Stmt& st = cached(insert_run,
                                "INSERT INTO runs(uid, recorded_at, job_key, gpu, catalog_version, trace, detection, "
                                "epoch_s, epoch_time_from, features, model_version) VALUES(?,?,?,?,?,?,?,?,?,?,?)");
      st.bind(1, run.uid).bind(2, run.recorded_at).bind_text_or_null(3, run.job_key).bind(4, run.gpu);
      st.bind(5, run.catalog_version).bind(6, run.trace).bind(7, detection_to_json(run).dump());
      if (run.epoch_s > 0) st.bind(8, run.epoch_s);
      else st.bind_null(8);
      st.bind(9, run.epoch_time_from).bind(10, features_to_json(run.features).dump()).bind(11, run.model_version);
      st.run();
      out.id = db.last_insert_rowid();
    }
    {
      sqlite::Stmt& st = cached(insert_prediction,
                                "INSERT OR REPLACE INTO predictions(run_id, target_gpu, epoch_s, lo_s, hi_s, "
                                "calibration_log) VALUES(?,?,?,?,?,?)");
      for (const auto& p : run.predictions) {
        st.reset();
        st.bind(1, out.id).bind(2, p.target_gpu).bind(3, p.epoch_s).bind(4, p.lo_s).bind(5, p.hi_s);
        st.bind(6, p.calibration_log);
        st.run();
      }
    }
    // Feedback: every earlier run of this job on another GPU that predicted this GPU.
    if (!run.job_key.empty() && run.epoch_s > 0) {
      sqlite::Stmt& find = cached(find_feedback,
                                  "SELECT r.id, r.gpu, p.epoch_s, r.model_version FROM runs r JOIN predictions p ON "
                                  "p.run_id = r.id WHERE r.job_key = ? AND r.gpu <> ? AND p.target_gpu = ? AND r.id < ? "
                                  "ORDER BY r.id");
      find.bind(1, run.job_key).bind(2, run.gpu).bind(3, run.gpu).bind(4, out.id);
      while (find.step()) {
        FeedbackRecord f;
        f.run_id = out.id;
        f.predicted_by = find.int64(0);
        f.job_key = run.job_key;
        f.source_gpu = find.text(1);
        f.target_gpu = run.gpu;
        f.predicted_s = find.real(2);
        f.measured_s = run.epoch_s;
        f.model_version = find.text(3);
        out.feedback.push_back(std::move(f));
      }
      sqlite::Stmt& ins = cached(insert_feedback,
                                 "INSERT INTO feedback(run_id, predicted_by, job_key, source_gpu, target_gpu, "
                                 "predicted_s, measured_s, model_version) VALUES(?,?,?,?,?,?,?,?)");
      for (const auto& f : out.feedback) {
        ins.reset();
        ins.bind(1, f.run_id).bind(2, f.predicted_by).bind(3, f.job_key).bind(4, f.source_gpu).bind(5, f.target_gpu);
        ins.bind(6, f.predicted_s).bind(7, f.measured_s).bind(8, f.model_version);
        ins.run();
      }
    }
    return out;
  }

  void require_writable(const char* doing) const {
    if (read_only) throw Error(ErrorCode::kInternal, fmt::format("{} on a store opened read-only", doing));
  }
};

JobStore::JobStore(const std::string& path, StoreMode mode) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  const bool ro = mode == StoreMode::kReadOnly;
  if (ro && !exists)
    throw Error(ErrorCode::kIo, fmt::format("store '{}' does not exist (it is created when the first run with a "
                                            "job key is recorded into it)",
                                            path));
  if (exists && !fs::is_regular_file(path, ec))
    throw Error(ErrorCode::kIo, fmt::format("store '{}' is not a regular file", path));
  if (!ro) {
    const fs::path parent = fs::path(path).parent_path();
    const std::string dir = parent.empty() ? "." : parent.string();
    // SQLite writes its journal (-wal, -shm) beside the file: the folder must be writable too.
    if ((exists && ::access(path.c_str(), W_OK) != 0) || ::access(dir.c_str(), W_OK | X_OK) != 0)
      throw Error(ErrorCode::kIo,
                  fmt::format("store '{}' is read-only: {} cannot be written (SQLite keeps its journal beside "
                              "the file); nothing was changed",
                              path, exists && ::access(path.c_str(), W_OK) != 0 ? "the file" : "folder '" + dir + "'"));
  }
  impl_ = std::make_unique<Impl>(path, ro);
  impl_->version = store_schema::check(impl_->db);
  impl_->db.exec("PRAGMA foreign_keys = ON");
  if (!ro) {
    // WAL: readers never block the writer; NORMAL sync is durable across a crash of the process
    // (kill -9), a power loss may drop the last commits but never damages the file.
    impl_->db.exec("PRAGMA journal_mode = WAL");
    impl_->db.exec("PRAGMA synchronous = NORMAL");
    if (impl_->version < kStoreSchemaVersion) {
      store_schema::migrate(impl_->db, impl_->version);
      impl_->version = kStoreSchemaVersion;
    }
  }
}

JobStore::~JobStore() = default;
JobStore::JobStore(JobStore&&) noexcept = default;
JobStore& JobStore::operator=(JobStore&&) noexcept = default;

const std::string& JobStore::path() const { return impl_->db.path(); }
int JobStore::schema_version() const { return impl_->version; }

RecordResult JobStore::record(RunRecord run) {
  impl_->require_writable("record");
  sqlite::Transaction tx(impl_->db);
  RecordResult r = impl_->insert(std::move(run));
  tx.commit();
  return r;
}

RecordResult JobStore::record_once(RunRecord run) {
  impl_->require_writable("record");
  sqlite::Transaction tx(impl_->db);
  if (!run.trace.empty()) {
    sqlite::Stmt st(impl_->db, "SELECT id FROM runs WHERE trace = ? ORDER BY id LIMIT 1");
    st.bind(1, std::string_view(run.trace));
    if (st.step()) {
      RecordResult known;
      known.id = st.int64(0);
      known.recorded = false;
      return known;  // the transaction rolls back: nothing written
    }
  }
  RecordResult r = impl_->insert(std::move(run));
  tx.commit();
  return r;
}

std::vector<RunRecord> JobStore::runs(const std::optional<std::string>& job_key) const {
  std::vector<RunRecord> out;
  if (!impl_->has_tables()) return out;
  const std::string sql = fmt::format("SELECT {} FROM runs {} ORDER BY id", kRunColumns,
                                      job_key ? "WHERE job_key = ?" : "");
  sqlite::Stmt st(impl_->db, sql.c_str());
  if (job_key) st.bind(1, *job_key);
  while (st.step()) out.push_back(read_run(st, path()));
  impl_->attach_predictions(out, "", 0);
  return out;
}

std::vector<RunRecord> JobStore::measured_job_runs() const {
  std::vector<RunRecord> out;
  if (!impl_->has_tables()) return out;
  // The WHERE of pairable_runs(): the other runs' JSON is never parsed (8,000 of 10,000 in
  // bench/store_scale_bench.cpp).
  const std::string sql = fmt::format("SELECT {} FROM runs WHERE job_key IS NOT NULL AND epoch_s > 0 ORDER BY id",
                                      kRunColumns);
  sqlite::Stmt st(impl_->db, sql.c_str());
  while (st.step()) out.push_back(read_run(st, path()));
  return out;
}

std::optional<RunRecord> JobStore::run(std::int64_t id) const {
  if (!impl_->has_tables()) return std::nullopt;
  const std::string sql = fmt::format("SELECT {} FROM runs WHERE id = ?", kRunColumns);
  sqlite::Stmt st(impl_->db, sql.c_str());
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  std::vector<RunRecord> one{read_run(st, path())};
  impl_->attach_predictions(one, "WHERE run_id = ?", id);
  return std::move(one.front());
}

std::size_t JobStore::run_count() const {
  if (!impl_->has_tables()) return 0;
  sqlite::Stmt st(impl_->db, "SELECT count(*) FROM runs");
  return st.step() ? static_cast<std::size_t>(st.int64(0)) : 0;
}

std::pair<std::size_t, std::int64_t> JobStore::pairable_runs() const {
  if (!impl_->has_tables()) return {0, 0};
  sqlite::Stmt st(impl_->db, "SELECT count(*), coalesce(max(id), 0) FROM runs WHERE job_key IS NOT NULL AND epoch_s > 0");
  if (!st.step()) return {0, 0};
  return {static_cast<std::size_t>(st.int64(0)), st.int64(1)};
}

std::vector<FeedbackRecord> JobStore::feedback() const {
  std::vector<FeedbackRecord> out;
  if (impl_->version < 2) return out;
  sqlite::Stmt st(impl_->db,
                  "SELECT run_id, predicted_by, job_key, source_gpu, target_gpu, predicted_s, measured_s, model_version "
                  "FROM feedback ORDER BY id");
  while (st.step())
    out.push_back({st.int64(0), st.int64(1), st.text(2), st.text(3), st.text(4), st.real(5), st.real(6), st.text(7)});
  return out;
}

std::vector<PairPredictionError> JobStore::prediction_errors() const {
  std::vector<PairPredictionError> out;
  if (impl_->version < 2) return out;
  // measured_s > 0 and predicted_s > 0 hold for every row record() writes; the guard keeps an
  // imported or hand-edited row from dividing by zero.
  sqlite::Stmt st(impl_->db,
                  "SELECT source_gpu, target_gpu, count(*), avg(abs(predicted_s - measured_s) / measured_s), "
                  "avg(ln(predicted_s / measured_s)) FROM feedback WHERE measured_s > 0 AND predicted_s > 0 "
                  "GROUP BY source_gpu, target_gpu ORDER BY source_gpu, target_gpu");
  while (st.step())
    out.push_back({st.text(0), st.text(1), static_cast<std::size_t>(st.int64(2)), st.real(3), st.real(4)});
  return out;
}

std::size_t JobStore::forget_run(std::int64_t id) {
  impl_->require_writable("forget");
  sqlite::Transaction tx(impl_->db);
  sqlite::Stmt st(impl_->db, "DELETE FROM runs WHERE id = ?");
  st.bind(1, id).run();
  const auto n = static_cast<std::size_t>(impl_->db.changes());
  tx.commit();
  return n;
}

std::size_t JobStore::forget_job(const std::string& job_key) {
  impl_->require_writable("forget");
  sqlite::Transaction tx(impl_->db);
  sqlite::Stmt st(impl_->db, "DELETE FROM runs WHERE job_key = ?");
  st.bind(1, job_key).run();
  const auto n = static_cast<std::size_t>(impl_->db.changes());
  tx.commit();
  return n;
}

void JobStore::export_jsonl(std::ostream& out) const {
  for (const RunRecord& r : runs()) out << run_to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  if (!out) throw Error(ErrorCode::kIo, fmt::format("cannot write the export of store '{}'", path()));
}

ImportResult JobStore::import_jsonl(std::istream& in, const std::string& name) {
  impl_->require_writable("import");
  ImportResult result;
  // One transaction: a bad line imports nothing (the store stays as it was).
  sqlite::Transaction tx(impl_->db);
  sqlite::Stmt known(impl_->db, "SELECT 1 FROM runs WHERE uid = ?");
  std::string line;
  std::uint64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.size() > kMaxImportLineBytes)
      throw Error(ErrorCode::kParse, fmt::format("{}:{}: line longer than 1 MiB: not a runs export", name, line_no),
                  {name, line_no, 0, ""});
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", name, line_no);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      throw Error(ErrorCode::kParse, fmt::format("{}: not JSON ({}); nothing was imported", where, e.what()),
                  {name, line_no, static_cast<std::uint32_t>(e.byte), ""});
    }
    RunRecord r = run_from_json(j, where);
    known.reset();
    known.bind(1, r.uid);
    if (known.step()) {
      ++result.skipped_known;
      continue;
    }
    r.id = 0;
    try {
      impl_->insert(std::move(r));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kInvalidArgument) throw;
      throw Error(ErrorCode::kParse, fmt::format("{}: {}; nothing was imported", where, e.what()), {name, line_no, 0, ""});
    }
    ++result.imported;
  }
  if (in.bad()) throw Error(ErrorCode::kIo, fmt::format("cannot read '{}'", name));
  tx.commit();
  return result;
}

std::string catalog_version(const GpuCatalog& catalog) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a 64 offset basis
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ULL;
    }
    h ^= 0xff;
    h *= 1099511628211ULL;
  };
  for (const auto& g : catalog.gpus()) {
    mix(g.id);
    for (double v : {g.compute_capability, g.sm_count, g.fp32_cores_per_sm, g.max_sm_clock_mhz, g.fp32_tflops,
                     g.tensor_fp16_tflops, g.memory_gib, g.memory_bandwidth_gbs, g.l2_cache_mib, g.tdp_w})
      mix(fmt::format("{:.17g}", v));
  }
  return fmt::format("fnv1a64:{:016x}", h);
}

std::string model_version(const StackedModel& model) {
  return fmt::format("v{}/{}/{}", kModelFormatVersion, model.schema_hash(),
                     model.data_fingerprint().empty() ? "unknown-data" : model.data_fingerprint());
}

std::string default_store_path() {
  const char* env = std::getenv("EPOCHCAST_STORE");
  return env ? env : "";
}

}  // namespace epochcast
