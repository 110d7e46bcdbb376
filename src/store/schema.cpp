#include "schema.hpp"

#include <fmt/format.h>

#include <array>

#include "epochcast/core/error.hpp"
#include "epochcast/store/job_store.hpp"

namespace epochcast::store_schema {
namespace {

// Migration i brings version i to i + 1. Never edit one that has shipped: add another.
constexpr std::array<const char*, kStoreSchemaVersion> kMigrations = {
    // 0 → 1: runs and their predictions.
    R"sql(
CREATE TABLE runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uid TEXT NOT NULL UNIQUE,
  recorded_at TEXT NOT NULL,
  job_key TEXT,
  gpu TEXT NOT NULL,
  catalog_version TEXT NOT NULL,
  trace TEXT NOT NULL DEFAULT '',
  detection TEXT NOT NULL,
  epoch_s REAL,
  epoch_time_from TEXT NOT NULL DEFAULT '',
  features TEXT NOT NULL,
  model_version TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_job_gpu ON runs(job_key, gpu);
CREATE TABLE predictions(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  target_gpu TEXT NOT NULL,
  epoch_s REAL NOT NULL,
  lo_s REAL,
  hi_s REAL,
  calibration_log REAL NOT NULL DEFAULT 0,
  PRIMARY KEY(run_id, target_gpu)
);
)sql",
    // 1 → 2: predictions checked against the run they predicted.
    R"sql(
CREATE TABLE feedback(
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  predicted_by INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  job_key TEXT NOT NULL,
  source_gpu TEXT NOT NULL,
  target_gpu TEXT NOT NULL,
  predicted_s REAL NOT NULL,
  measured_s REAL NOT NULL,
  model_version TEXT NOT NULL DEFAULT ''
);
CREATE INDEX feedback_pair ON feedback(source_gpu, target_gpu);
)sql",
};

int pragma_int(sqlite::Db& db, const char* pragma) {
  sqlite::Stmt st(db, pragma);
  return st.step() ? static_cast<int>(st.int64(0)) : 0;
}

}  // namespace

int check(sqlite::Db& db) {
  // The first read: a file that is not a database fails here (SQLITE_NOTADB → kParse).
  const int app = pragma_int(db, "PRAGMA application_id");
  const int version = pragma_int(db, "PRAGMA user_version");
  const int tables = pragma_int(db, "SELECT count(*) FROM sqlite_master");
  if (app != kApplicationId && (app != 0 || tables > 0 || version != 0))
    throw Error(ErrorCode::kParse,
                fmt::format("'{}' is an SQLite database but not an epochcast job store (application id {:#x}, "
                            "{} table(s)); it was left as it is",
                            db.path(), app, tables),
                {db.path(), 0, 0, "application_id"});
  if (version > kStoreSchemaVersion)
    throw Error(ErrorCode::kSchemaMismatch,
                fmt::format("store '{}' has schema version {}, newer than this epochcast's {}: upgrade epochcast "
                            "(the store was not changed)",
                            db.path(), version, kStoreSchemaVersion));
  return version;
}

void migrate(sqlite::Db& db, int from) {
  for (int v = from; v < kStoreSchemaVersion; ++v) {
    sqlite::Transaction tx(db);
    // Re-read under the write lock: another process may have migrated meanwhile.
    const int now = pragma_int(db, "PRAGMA user_version");
    if (now > v) {
      tx.commit();
      v = now - 1;
      continue;
    }
    db.exec(kMigrations[static_cast<std::size_t>(v)]);
    db.exec(fmt::format("PRAGMA application_id = {}", kApplicationId).c_str());
    db.exec(fmt::format("PRAGMA user_version = {}", v + 1).c_str());
    tx.commit();
  }
}

}  // namespace epochcast::store_schema
