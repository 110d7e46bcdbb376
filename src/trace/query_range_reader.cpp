// A saved Prometheus query_range answer (`curl '…/api/v1/query_range?query=…&start=…&end=…&step=…'
// > range.json`, the HTTP API v1): {"status":"success","data":{"resultType":"matrix","result":
// [{"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0","UUID":…,"modelName":…},"values":[[1764516173.5,"95"],…]}]}}.
// Series map to channels by __name__ through the metric table; the gpu label picks the GPU.
// A scanner for this one shape (any JSON is tokenised; unknown members are skipped): points go
// straight to the pivot. nlohmann's document tree read 23 MB/s and its SAX parser 38 MB/s
// (bench/formats_bench.cpp); malformed JSON is an error at its line and column either way.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "trace_parser.hpp"

namespace epochcast {

using detail::kNaN;
using detail::printable;

namespace {

constexpr int kMaxDepth = 128;  // deeper nesting is not a Prometheus answer (and would recurse)

class JsonScanner {
 public:
  explicit JsonScanner(std::string_view text) : s_(text) {}

  struct Failure {
    std::size_t offset;
    std::string what;
  };
  [[noreturn]] void fail(std::string what) const { throw Failure{p_, std::move(what)}; }

  void ws() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\t' || s_[p_] == '\r')) ++p_;
  }
  char peek() {
    ws();
    return p_ < s_.size() ? s_[p_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) fail(p_ >= s_.size() ? fmt::format("unexpected end of input; expected '{}'", c)
                                          : fmt::format("expected '{}', found '{}'", c, printable(s_.substr(p_, 1))));
    ++p_;
  }
  bool take(char c) {
    if (peek() != c) return false;
    ++p_;
    return true;
  }
  // A string; `out` holds it unescaped. The view points into the text when it has no escapes.
  std::string_view string(std::string& out) {
    expect('"');
    const std::size_t start = p_;
    while (p_ < s_.size() && s_[p_] != '"' && s_[p_] != '\\') {
      if (static_cast<unsigned char>(s_[p_]) < 0x20) fail("a control character inside a string");
      ++p_;
    }
    if (p_ < s_.size() && s_[p_] == '"') return s_.substr(start, p_++ - start);
    out.assign(s_.substr(start, p_ - start));
    while (p_ < s_.size() && s_[p_] != '"') {
      const char c = s_[p_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character inside a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p_ >= s_.size()) break;
      const char e = s_[p_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = 0;
          if (p_ + 4 > s_.size() || std::from_chars(s_.data() + p_, s_.data() + p_ + 4, cp, 16).ptr != s_.data() + p_ + 4)
            fail("a bad \\u escape");
          p_ += 4;
          if (cp < 0x80) out += static_cast<char>(cp);
          else if (cp < 0x800) out += {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
          else out += {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
          break;
        }
        default: fail(fmt::format("a bad escape '\\{}'", printable(std::string_view(&e, 1))));
      }
    }
    if (p_ >= s_.size()) fail("unexpected end of input inside a string");
    ++p_;
    return out;
  }
  double number() {
    ws();
    const char* b = s_.data() + p_;
    const char* e = s_.data() + s_.size();
    if (b < e && *b == '+') fail("a number with '+'");
    double v = 0;
    const char* ptr = text::parse_decimal_prefix(std::string_view(b, static_cast<std::size_t>(e - b)), v);
    if (ptr == nullptr || ptr == b) fail("expected a number");
    p_ += static_cast<std::size_t>(ptr - b);
    return v;
  }
  void literal(std::string_view word) {
    if (s_.substr(p_, word.size()) != word) fail("an invalid literal");
    p_ += word.size();
  }
  void skip_value(int depth) {
    if (depth > kMaxDepth) fail("nested deeper than 128 levels");
    std::string scratch;
    switch (peek()) {
      case '{':
        ++p_;
        if (take('}')) return;
        do {
          string(scratch);
          expect(':');
          skip_value(depth + 1);
        } while (take(','));
        expect('}');
        return;
      case '[':
        ++p_;
        if (take(']')) return;
        do skip_value(depth + 1);
        while (take(','));
        expect(']');
        return;
      case '"': string(scratch); return;
      case 't': literal("true"); return;
      case 'f': literal("false"); return;
      case 'n': literal("null"); return;
      case '\0': fail("unexpected end of input; expected a value");
      default: number(); return;
    }
  }
  void end() {
    if (peek() != '\0') fail("text after the JSON document");
  }
  [[nodiscard]] std::size_t offset() const { return p_; }

 private:
  std::string_view s_;
  std::size_t p_ = 0;
};

}  // namespace

void TraceParser::query_range_document(std::string_view text) {
  JsonScanner js(text);
  pivot_.reserve(std::min<std::size_t>(text.size() / 24, std::size_t{1} << 26));  // ~24 bytes a point
  std::string status, result_type, error_type, error, scratch, key_buf;
  bool saw_result = false;
  std::size_t series_no = 0;
  auto series = [&] {
    ++series_no;
    js.expect('{');
    std::map<std::string, std::string> labels;
    bool have_metric = false, have_values = false;
    int slot = -1, gpu = -1;
    std::string name;
    std::size_t k = 0;
    if (!js.take('}')) do {
        const std::string key(js.string(key_buf));
        js.expect(':');
        if (key == "metric" && js.peek() == '{') {
          js.expect('{');
          if (!js.take('}')) do {
              std::string lk(js.string(key_buf));
              js.expect(':');
              if (js.peek() == '"') labels[lk] = std::string(js.string(scratch));
              else js.skip_value(3);
            } while (js.take(','));
          js.expect('}');
          have_metric = true;
          name = labels.count("__name__") ? labels["__name__"] : "";
          if (const auto m = metric_by_dcgm_name(name)) {
            if (const auto g = labels.find("gpu"); g != labels.end() && (!detail::parse_int(g->second, gpu) || gpu < 0))
              this->fail(1, "gpu", fmt::format("series {}: label gpu is not a GPU index: '{}'", series_no, printable(g->second)));
            pivot_identity(gpu, labels["modelName"], labels["UUID"]);
            slot = pivot_slot(*m, name);
          } else {
            const std::string shown = name.empty() ? "(an expression without __name__)" : name;
            if (std::find(ignored_names_.begin(), ignored_names_.end(), shown) == ignored_names_.end())
              ignored_names_.push_back(shown);
          }
        } else if (key == "values" && js.peek() == '[') {
          if (!have_metric) this->fail(1, "result", fmt::format("series {}: \"values\" before its \"metric\"", series_no));
          have_values = true;
          js.expect('[');
          if (!js.take(']')) do {
              ++k;
              js.expect('[');
              const double t = js.number();
              js.expect(',');
              if (js.peek() != '"') js.fail("expected [unix_seconds, \"value\"]");
              const std::string_view vs = js.string(scratch);
              js.expect(']');
              if (slot < 0) continue;
              if (!(t >= 0 && t < 1e11))
                this->fail(1, name, fmt::format("series {} point {}: not a Unix time: {}", series_no, k, t));
              double v = kNaN;
              if (vs != "NaN" && vs != "+Inf" && vs != "-Inf" && (!detail::parse_double(vs, v) || !std::isfinite(v)))
                this->fail(1, name, fmt::format("series {} point {}: {}", series_no, k, detail::bad_number(vs)));
              pivot_add(gpu, std::llround(unix_stamp(t) * 1e6), slot, v);
            } while (js.take(','));
          js.expect(']');
        } else {
          js.skip_value(3);
        }
      } while (js.take(','));
    js.expect('}');
    if (!have_values) this->fail(1, "result", fmt::format("series {} has no \"values\"", series_no));
  };
  try {
    js.expect('{');
    if (!js.take('}')) do {
        const std::string key(js.string(key_buf));
        js.expect(':');
        if ((key == "status" || key == "errorType" || key == "error") && js.peek() == '"') {
          (key == "status" ? status : key == "errorType" ? error_type : error) = std::string(js.string(scratch));
        } else if (key == "data" && js.peek() == '{') {
          js.expect('{');
          if (!js.take('}')) do {
              const std::string dk(js.string(key_buf));
              js.expect(':');
              if (dk == "resultType" && js.peek() == '"') {
                result_type = std::string(js.string(scratch));
              } else if (dk == "result" && js.peek() == '[' && (result_type.empty() || result_type == "matrix")) {
                saw_result = true;
                js.expect('[');
                if (!js.take(']')) do series();
                  while (js.take(','));
                js.expect(']');
              } else {
                js.skip_value(2);
              }
            } while (js.take(','));
          js.expect('}');
        } else {
          js.skip_value(1);
        }
      } while (js.take(','));
    js.expect('}');
    js.end();
  } catch (const JsonScanner::Failure& f) {
    const std::size_t at = std::min(f.offset, text.size());
    line_no_ = 1 + static_cast<std::uint64_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    const std::size_t bol = at == 0 ? std::string_view::npos : text.rfind('\n', at - 1);
    const std::size_t col = bol == std::string_view::npos ? at + 1 : at - bol;
    this->fail(col, "(json)", fmt::format("not valid JSON ({}); a query_range answer cut short?", f.what));
  }
  if (status == "error")
    fail(1, "status", fmt::format("the saved answer is a Prometheus error: {}: {}", error_type.empty() ? "?" : error_type,
                                  printable(error, 200)));
  if (status != "success") fail(1, "status", "not a Prometheus API answer (no \"status\":\"success\" and \"data\")");
  if (result_type == "vector" || result_type == "scalar")
    fail(1, "resultType",
         fmt::format("an instant query answer (resultType {}): one sample per series, no time series; save a "
                     "/api/v1/query_range answer (start, end, step) instead",
                     result_type));
  if (result_type != "matrix") fail(1, "resultType", fmt::format("resultType '{}' is not a matrix", printable(result_type)));
  if (!saw_result) fail(1, "result", "no \"result\" array");
  have_timestamps_ = true;
}

}  // namespace epochcast
