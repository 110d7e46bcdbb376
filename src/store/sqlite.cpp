#include "sqlite.hpp"

#include <fmt/format.h>

#include <cmath>

#include "epochcast/core/error.hpp"

namespace epochcast::sqlite {

Db::Db(const std::string& path, bool read_only) : path_(path) {
  const int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                    SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw Error(ErrorCode::kIo, fmt::format("cannot open store '{}': {}", path, why));
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
}

Db::~Db() {
  if (db_) sqlite3_close_v2(db_);
}

void Db::fail(int rc, std::string_view doing) const {
  const std::string detail = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw Error(ErrorCode::kIo, fmt::format("store '{}' is locked by another writer (waited {} s) while {}; "
                                              "nothing was changed, try again",
                                              path_, kBusyTimeoutMs / 1000, doing));
    case SQLITE_READONLY:
      throw Error(ErrorCode::kIo, fmt::format("store '{}' is read-only (the file or its folder cannot be "
                                              "written) while {}: {}",
                                              path_, doing, detail));
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_IOERR:
    case SQLITE_FULL:
      throw Error(ErrorCode::kIo, fmt::format("store '{}': {} while {}", path_, detail, doing));
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      throw Error(ErrorCode::kParse,
                  fmt::format("store '{}' is not an SQLite database or is damaged ({}) while {}; the file was "
                              "left as it is",
                              path_, detail, doing),
                  {path_, 0, 0, ""});
    default:
      throw Error(ErrorCode::kIo, fmt::format("store '{}': SQLite error {} ({}) while {}", path_, rc, detail, doing));
  }
}

void Db::exec(const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) fail(rc, fmt::format("running '{:.60}'", sql));
}

Stmt::Stmt(Db& db, const char* sql) : db_(db) {
  const int rc = sqlite3_prepare_v2(db.get(), sql, -1, &st_, nullptr);
  if (rc != SQLITE_OK) db.fail(rc, fmt::format("preparing '{:.60}'", sql));
}

Stmt::~Stmt() { sqlite3_finalize(st_); }

Stmt& Stmt::bind(int i, std::int64_t v) {
  sqlite3_bind_int64(st_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, double v) {
  if (std::isnan(v)) sqlite3_bind_null(st_, i);
  else sqlite3_bind_double(st_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, std::string_view v) {
  sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::bind_null(int i) {
  sqlite3_bind_null(st_, i);
  return *this;
}
Stmt& Stmt::bind_text_or_null(int i, std::string_view v) { return v.empty() ? bind_null(i) : bind(i, v); }

bool Stmt::step() {
  const int rc = sqlite3_step(st_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const char* sql = sqlite3_sql(st_);
  sqlite3_reset(st_);
  db_.fail(rc, fmt::format("running '{:.60}'", sql ? sql : ""));
}

void Stmt::reset() {
  sqlite3_reset(st_);
  sqlite3_clear_bindings(st_);
}

double Stmt::real(int c) const { return is_null(c) ? std::nan("") : sqlite3_column_double(st_, c); }

std::string Stmt::text(int c) const {
  const auto* p = sqlite3_column_text(st_, c);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(st_, c)))
           : std::string();
}

Transaction::Transaction(Db& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace epochcast::sqlite
