// What the reader tests share: a file's bytes, and the mutation fuzz loop that every reader must
// survive (a trace or an epochcast::Error with a location — never another exception or a crash).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "epochcast/core/error.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast::testing {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// 1-4 edits: any byte, a byte from `delimiters`, a cut, a splice of the text itself, a
// truncation, a run of `runs` characters (number-ish or structural).
inline std::string mutate(std::string s, std::mt19937& rng, std::string_view delimiters, std::string_view runs) {
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const std::size_t at = rng() % s.size();
    switch (rng() % 6) {
      case 0: s[at] = static_cast<char>(rng() % 256); break;
      case 1: s[at] = delimiters[rng() % delimiters.size()]; break;
      case 2: s.erase(at, rng() % 64); break;
      case 3: s.insert(at, s.substr(rng() % s.size(), rng() % 128)); break;
      case 4: s.resize(at); break;
      case 5: s.insert(at, std::string(1 + rng() % 40, runs[rng() % runs.size()])); break;
    }
  }
  return s;
}

struct FuzzCounts {
  int traces = 0, errors = 0;
};

// Reads `iterations` mutations of the seeds (round robin); `options(i)` sets each read's
// options, `check(trace)` runs on each trace read. Fails the test on anything but Error, and on
// a parse error without a line.
inline FuzzCounts fuzz_readers(const std::vector<std::string>& seeds, int iterations, std::uint32_t seed,
                               const std::string& name, std::string_view delimiters, std::string_view runs,
                               const std::function<ReadOptions(int)>& options,
                               const std::function<void(const Trace&)>& check) {
  std::mt19937 rng(seed);
  FuzzCounts n;
  for (int i = 0; i < iterations; ++i) {
    const std::string input = mutate(seeds[static_cast<std::size_t>(i) % seeds.size()], rng, delimiters, runs);
    try {
      const Trace t = read_trace_from_string(input, name, options(i));
      ++n.traces;
      for (const Channel& c : t.channels) EXPECT_EQ(c.values.size(), t.size());
      for (std::size_t k = 1; k < t.size(); ++k) EXPECT_GE(t.time_s[k], t.time_s[k - 1]);
      check(t);
    } catch (const Error& e) {
      ++n.errors;
      EXPECT_FALSE(std::string(e.what()).empty());
      if (e.code() == ErrorCode::kParse) EXPECT_GE(e.where().line, 1u) << e.what();
    }
    if (::testing::Test::HasFailure()) break;  // one input's failures, not 1,000 copies
  }
  return n;
}

}  // namespace epochcast::testing
