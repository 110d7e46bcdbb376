// RAII owners for an SQLite connection and statement; every status code is converted to
// epochcast::Error here, at the boundary, with the store's path in the message.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace epochcast::sqlite {

// How long a writer waits for another writer's lock before giving up with a clear error.
inline constexpr int kBusyTimeoutMs = 5000;

class Db {
 public:
  // read_only: SQLITE_OPEN_READONLY; else READWRITE|CREATE. Throws Error(kIo) naming `path`.
  Db(const std::string& path, bool read_only);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  Db(Db&& o) noexcept : db_(o.db_), path_(std::move(o.path_)) { o.db_ = nullptr; }

  void exec(const char* sql);  // statements without results
  [[nodiscard]] sqlite3* get() const { return db_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
  [[nodiscard]] int changes() const { return sqlite3_changes(db_); }
  // Throws the Error that describes `rc` for this store (locked, read-only, corrupt, ...).
  [[noreturn]] void fail(int rc, std::string_view doing) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Stmt {
 public:
  Stmt(Db& db, const char* sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, std::int64_t v);
  Stmt& bind(int i, double v);           // NaN binds NULL
  Stmt& bind(int i, std::string_view v);
  Stmt& bind_null(int i);
  Stmt& bind_text_or_null(int i, std::string_view v);  // "" binds NULL
  // true: a row is ready; false: done. Throws on error.
  bool step();
  void run() { while (step()) {} }  // to completion
  void reset();

  [[nodiscard]] bool is_null(int c) const { return sqlite3_column_type(st_, c) == SQLITE_NULL; }
  [[nodiscard]] std::int64_t int64(int c) const { return sqlite3_column_int64(st_, c); }
  [[nodiscard]] double real(int c) const;  // NULL reads NaN
  [[nodiscard]] std::string text(int c) const;  // NULL reads ""

 private:
  Db& db_;
  sqlite3_stmt* st_ = nullptr;
};

// BEGIN IMMEDIATE (takes the write lock at once: one writer) ... COMMIT; rolls back unless
// commit() was called.
class Transaction {
 public:
  explicit Transaction(Db& db);
  ~Transaction();
  void commit();

 private:
  Db& db_;
  bool done_ = false;
};

}  // namespace epochcast::sqlite
