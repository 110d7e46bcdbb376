#include "http_api.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>
#include <string_view>

#include "epochcast/core/error.hpp"
#include "epochcast/core/listen_address.hpp"
#include "epochcast/net/http_front.hpp"
#include "epochcast/service/render.hpp"
#include "epochcast/service/request.hpp"
#include "store_metrics.hpp"
#include "web_assets.hpp"

namespace epochcast::server {

namespace {

using httplib::Request;
using httplib::Response;

// Input bytes (file names, GPU names) may not be UTF-8: written as U+FFFD, as the CLI does.
std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

void send_json(Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(dump(body) + "\n", "application/json");
}

// GET /healthz's answer: from the front's event loop (FrontLimits::healthz_body), the route
// only for HEAD and requests the front passes on.
const std::string& healthz_body() {
  static const std::string body = dump({{"status", "ok"}}) + "\n";
  return body;
}

void send_error(Response& res, int status, std::string_view code, const std::string& message) {
  send_json(res, status, {{"error", {{"code", code}, {"message", message}}}});
}

// Query parameters: each route names the ones it takes, so a typo (`gpu=` for `gpus=`) is a
// 400 naming the known ones instead of an answer for the defaults.
class Query {
 public:
  Query(const Request& req, const std::vector<std::string_view>& known) : req_(req) {
    for (const auto& [key, value] : req.params) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::string names;
        for (std::string_view k : known) names += (names.empty() ? "" : ", ") + std::string(k);
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("unknown query parameter '{}' (this endpoint takes: {})", key, names));
      }
      if (req.get_param_value_count(key) > 1)
        throw Error(ErrorCode::kInvalidArgument, fmt::format("query parameter '{}' given more than once", key));
    }
  }

  [[nodiscard]] std::optional<std::string> text(const std::string& key) const {
    if (!req_.has_param(key.c_str())) return std::nullopt;
    return req_.get_param_value(key.c_str());
  }

  // A finite number in [lo, hi], all of the value parsed ("5x", "nan", "1e999" are refused).
  [[nodiscard]] std::optional<double> number(const std::string& key, double lo, double hi) const {
    const auto value = text(key);
    if (!value) return std::nullopt;
    double x = 0;
    const char* end = value->data() + value->size();
    const auto [ptr, ec] = std::from_chars(value->data(), end, x);
    if (value->empty() || ec != std::errc() || ptr != end || !std::isfinite(x) || x < lo || x > hi)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("query parameter '{}': expected a number from {} to {}, got '{}'", key, lo, hi, *value));
    return x;
  }

  [[nodiscard]] std::optional<int> integer(const std::string& key, int lo, int hi) const {
    const auto x = number(key, lo, hi);
    if (!x) return std::nullopt;
    if (*x != std::floor(*x))
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("query parameter '{}': expected a whole number, got '{}'", key, *text(key)));
    return static_cast<int>(*x);
  }

  [[nodiscard]] bool flag(const std::string& key) const {
    const auto value = text(key);
    if (!value) return false;
    if (*value == "" || *value == "1" || *value == "true" || *value == "yes") return true;
    if (*value == "0" || *value == "false" || *value == "no") return false;
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("query parameter '{}': expected true or false, got '{}'", key, *value));
  }

 private:
  const Request& req_;
};

// The trace (and optional host log) of a request: the raw body, or a multipart form with a
// `trace` part and an optional `host` part. A browser sends every file field of a form, an
// unfilled one as a part with no file name and no bytes: such a `host` part means no host log.
struct Upload {
  std::string name;
  std::string_view trace;
  std::string host_name;
  std::optional<std::string_view> host;
};

Upload read_upload(const Request& req, const Query& query) {
  Upload u;
  if (req.is_multipart_form_data()) {
    for (const auto& [part, file] : req.files)
      if (part != "trace" && part != "host")
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("unknown form part '{}' (expected 'trace' and optionally 'host')", part));
    for (const char* part : {"trace", "host"})
      if (req.files.count(part) > 1)
        throw Error(ErrorCode::kInvalidArgument, fmt::format("form part '{}' given more than once", part));
    const auto trace = req.files.find("trace");
    if (trace == req.files.end())
      throw Error(ErrorCode::kInvalidArgument, "the multipart upload has no 'trace' part");
    if (trace->second.filename.empty() && trace->second.content.empty())
      throw Error(ErrorCode::kInvalidArgument, "the form's 'trace' part is empty: no trace file was chosen");
    u.name = trace->second.filename.empty() ? "trace" : trace->second.filename;
    u.trace = trace->second.content;
    if (const auto host = req.files.find("host");
        host != req.files.end() && !(host->second.filename.empty() && host->second.content.empty())) {
      u.host_name = host->second.filename.empty() ? "host" : host->second.filename;
      u.host = host->second.content;
    }
  } else {
    u.name = "request body";
    u.trace = req.body;
  }
  if (const auto name = query.text("name")) u.name = *name;
  if (u.trace.empty())
    throw Error(ErrorCode::kInvalidArgument,
                "empty upload: send the trace as the request body, or as the 'trace' part of a multipart form");
  return u;
}

Trace read_uploaded_trace(const Service& service, const Request& req, const Query& query) {
  const Upload upload = read_upload(req, query);
  TraceRequest read;
  if (const auto format = query.text("format")) read.format = *format;
  if (const auto gpu = query.integer("gpu", 0, 1 << 20)) read.gpu = *gpu;
  read.lenient = query.flag("lenient");
  if (const auto interval = query.number("interval_s", 1e-3, 86400)) read.interval_s = *interval;
  return service.read(upload.trace, upload.name, read, upload.host, upload.host_name);
}

DetectRequest detect_request(const Query& query) {
  DetectRequest r;
  if (const auto c = query.number("min_confidence", 0, 1)) r.min_confidence = *c;
  if (const auto n = query.integer("min_epochs", 2, 1000000)) r.min_epochs = *n;
  return r;
}

PredictRequest predict_request(const Query& query) {
  PredictRequest r;
  if (const auto source = query.text("source_gpu")) r.source_gpu = *source;
  if (const auto precision = query.text("precision")) r.precision = *precision;
  if (const auto list = query.text("gpus")) r.gpus = parse_gpu_list(*list, "gpus");
  if (const auto epochs = query.integer("epochs", 1, 1000000)) r.epochs = *epochs;
  if (const auto epoch_s = query.number("epoch_s", 1e-3, 1e7)) r.source_epoch_s = *epoch_s;
  if (const auto confidence = query.number("min_confidence", 0, 1)) r.min_detection_confidence = *confidence;
  if (const auto job = query.text("job")) r.job_key = *job;  // recorded with serve --store (docs/store.md)
  if (const auto from = query.text("epochs_from")) {  // as predict --epochs-from
    if (*from != "detect" && *from != "markers")
      throw FieldError("epochs_from", fmt::format("'{}' is not one of detect, markers", *from));
    r.epochs_from_markers = *from == "markers";
  }
  return r;
}

// The query parameter that sets a request field (FieldError::field()); most share its name.
std::string_view parameter_for_field(std::string_view field) {
  if (field == "source_epoch_s") return "epoch_s";
  if (field == "min_detection_confidence") return "min_confidence";
  if (field == "job_key") return "job";
  return field;
}

// Library errors become JSON with the status of their code; nothing escapes to httplib.
template <class Handler>
httplib::Server::Handler guarded(Handler handler) {
  return [handler](const Request& req, Response& res) {
    try {
      handler(req, res);
    } catch (const FieldError& e) {
      send_error(res, http_status(e.code()), to_string(e.code()),
                 fmt::format("query parameter '{}': {}", parameter_for_field(e.field()), e.problem()));
    } catch (const Error& e) {
      send_error(res, http_status(e.code()), to_string(e.code()), e.what());
    } catch (const std::bad_alloc&) {
      send_error(res, 503, "internal", "out of memory");
    } catch (const std::exception& e) {
      send_error(res, 500, "internal", e.what());
    }
  };
}

void method_not_allowed(httplib::Server& server, const std::string& path, const char* allowed) {
  auto handler = [allowed](const Request& req, Response& res) {
    res.set_header("Allow", allowed);
    send_error(res, 405, "invalid_argument", fmt::format("{} {}: use {}", req.method, req.path, allowed));
  };
  if (std::string_view(allowed) == "POST") {
    server.Get(path, handler);
  } else {
    server.Post(path, handler);
  }
  server.Put(path, handler);
  server.Delete(path, handler);
  server.Patch(path, handler);
}

}  // namespace

int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return 400;
    case ErrorCode::kNotFound: return 404;
    case ErrorCode::kParse:
    case ErrorCode::kUnsupported: return 422;
    case ErrorCode::kRemote: return 502;
    case ErrorCode::kDevice: return 503;
    case ErrorCode::kIo:
    case ErrorCode::kSchemaMismatch:
    case ErrorCode::kInternal: return 500;
  }
  return 500;
}

HttpApi::HttpApi(const Service& service, ServeOptions options)
    : service_(service), options_(std::move(options)), server_(std::make_unique<httplib::Server>()) {
  const std::string& address = options_.listen;
  const ListenAddress where = parse_listen_address(address, "127.0.0.1");
  host_ = where.host;
  const int port = where.port;
  if (options_.threads < 1 || options_.threads > 256)
    throw Error(ErrorCode::kInvalidArgument, fmt::format("--threads must be 1 to 256, got {}", options_.threads));

  if (options_.refit) refit_ = std::make_unique<RefitSchedule>(service_, *options_.refit);
  add_routes();
  net::FrontLimits limits;
  limits.max_body_bytes = options_.max_body_bytes;
  limits.threads = options_.threads;
  limits.request_timeout_s = options_.timeout_s;
  limits.write_timeout_s = options_.timeout_s;
  limits.token = options_.token;
  limits.open_paths = web_page_paths();  // the page loads; its data requests send the token
  limits.insecure = options_.insecure;
  limits.log = options_.log;
  limits.option_hint_body = "serve --max-body-mb";
  limits.healthz_body = healthz_body();
  front_ = std::make_unique<net::HttpFront>(*server_, host_, port, std::move(limits));
  port_ = front_->port();
}

HttpApi::~HttpApi() {
  front_.reset();  // no request uses the schedule past this point
  refit_.reset();
}

std::string HttpApi::url() const {
  const std::string host = host_ == "0.0.0.0" ? "127.0.0.1" : host_;
  return fmt::format("http://{}:{}", host.find(':') != std::string::npos ? "[" + host + "]" : host, port_);
}

void HttpApi::run() { front_->run(); }

void HttpApi::stop() { front_->stop(); }

std::string HttpApi::answer(std::string_view request, bool close) const {
  return net::route_request(*server_, request, net::Peer{}, close).bytes;
}

std::string HttpApi::answer_connection(std::string_view bytes) const {
  return net::answer_connection(bytes, front_->limits(), [this](std::string_view request, bool close) {
    return net::route_request(*server_, request, net::Peer{}, close);
  });
}

// The fleet watcher's routes (docs/watch.md), present when serve hosts one.
void HttpApi::add_fleet_routes() {
  httplib::Server& s = *server_;
  if (options_.fleet_json) {
    s.Get("/v1/fleet", guarded([fleet = options_.fleet_json](const Request& req, Response& res) {
      static_cast<void>(Query(req, {}));
      res.set_content(fleet(), "application/json");
    }));
    method_not_allowed(s, "/v1/fleet", "GET");
  }
  if (!options_.metrics.empty()) {
    s.Get("/metrics", guarded([sections = options_.metrics](const Request& req, Response& res) {
      static_cast<void>(Query(req, {}));  // takes no parameters: a typo is a 400
      std::string text;
      for (const auto& section : sections) text += section();
      res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
    }));
    method_not_allowed(s, "/metrics", "GET");
  }
}

void HttpApi::add_routes() {
  httplib::Server& s = *server_;
  const Service& service = service_;
  const std::size_t max_body = options_.max_body_bytes;

  // The machine-readable index; GET / answers it too to a client that asks for JSON.
  const nlohmann::json index = {
      {"service", "epochcast"},
      {"version", EPOCHCAST_VERSION},
      {"endpoints",
       {"GET /healthz", "GET /v1", "GET /v1/gpus", "GET /v1/model", "POST /v1/detect", "POST /v1/predict",
        "POST /v1/report", "POST /v1/model/refit", "GET /metrics"}},
      {"page", "GET / (upload a trace, see the report), GET /fleet"},
      {"docs", "docs/http_api.md"}};
  s.Get("/v1", guarded([index](const Request& req, Response& res) {
    static_cast<void>(Query(req, {}));
    send_json(res, 200, index);
  }));
  s.Get("/", guarded([index](const Request& req, Response& res) {
    const std::string accept = req.get_header_value("Accept");
    if (accept.find("application/json") != std::string::npos && accept.find("text/html") == std::string::npos) {
      send_json(res, 200, index);
    } else {
      send_web_asset("index.html", res);
    }
  }));
  add_web_routes(s);
  s.Get("/healthz", guarded([](const Request&, Response& res) { res.set_content(healthz_body(), "application/json"); }));
  s.Get("/v1/gpus", guarded([&service](const Request& req, Response& res) {
    static_cast<void>(Query(req, {}));  // takes no parameters: a typo is a 400
    send_json(res, 200, {{"gpus", service.gpu_ids()}});
  }));
  RefitSchedule* refit = refit_.get();
  s.Get("/v1/model", guarded([&service, refit](const Request& req, Response& res) {
    static_cast<void>(Query(req, {}));
    nlohmann::json j = {{"validation", to_json(service.validation())},
                        {"gpus", service.gpu_ids()},
                        {"model", server::to_json(service.model_info())}};
    if (refit) j["refit"] = refit->status();
    send_json(res, 200, j);
  }));
  // Refits from the job store and swaps the model (docs/store.md, "Refit in serve"); answers when
  // the new model is in use. 409 while another refit runs.
  s.Post("/v1/model/refit", guarded([refit](const Request& req, Response& res) {
    static_cast<void>(Query(req, {}));
    if (!refit)
      throw Error(ErrorCode::kInvalidArgument, "this server has no job store to refit from (serve --store DB)");
    const auto result = refit->refit_now("POST /v1/model/refit");
    if (!result) {
      send_error(res, 409, "invalid_argument", "a refit is already running (GET /v1/model shows it)");
      return;
    }
    send_json(res, 200, {{"refit", server::to_json(*result)}});
  }));

  s.Post("/v1/detect", guarded([&service](const Request& req, Response& res) {
    const Query query(req, {"name", "format", "gpu", "lenient", "interval_s", "min_confidence", "min_epochs"});
    const DetectRequest request = detect_request(query);
    const Trace trace = read_uploaded_trace(service, req, query);
    nlohmann::json j = to_json(service.detect(trace, request));
    j["warnings"] = trace.diagnostics.warnings;  // as `detect --json`
    send_json(res, 200, j);
  }));
  const std::vector<std::string_view> predict_params = {
      "name", "format", "gpu", "lenient", "interval_s", "source_gpu", "gpus", "epochs", "epoch_s", "min_confidence",
      "job", "precision", "epochs_from"};
  s.Post("/v1/predict", guarded([&service, predict_params](const Request& req, Response& res) {
    const Query query(req, predict_params);
    const PredictRequest request = predict_request(query);
    const Trace trace = read_uploaded_trace(service, req, query);
    send_json(res, 200, to_json(service.predict(trace, request)));
  }));
  s.Post("/v1/report", guarded([&service, predict_params](const Request& req, Response& res) {
    const Query query(req, predict_params);
    const PredictRequest request = predict_request(query);
    const Trace trace = read_uploaded_trace(service, req, query);
    res.set_content(service.report(trace, request), "text/html; charset=utf-8");
  }));
  add_fleet_routes();
  for (const char* path : {"/v1/detect", "/v1/predict", "/v1/report", "/v1/model/refit"})
    method_not_allowed(s, path, "POST");
  for (const char* path : {"/", "/v1", "/fleet", "/healthz", "/v1/gpus", "/v1/model"})
    method_not_allowed(s, path, "GET");

  // What httplib answers itself (no route, upload over the limit, a malformed request) gets
  // the same JSON error body.
  s.set_error_handler([max_body](const Request& req, Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      send_error(res, 404, "not_found", fmt::format("no endpoint {} {} (GET /v1 lists them)", req.method, req.path));
    } else if (res.status == 413) {
      send_error(res, 413, "invalid_argument",
                 fmt::format("upload larger than this server's limit of {} MiB (serve --max-body-mb)", max_body >> 20));
    } else {
      send_error(res, res.status, res.status >= 500 ? "internal" : "invalid_argument",
                 fmt::format("{} {}: HTTP {}", req.method, req.path, res.status));
    }
  });
  // Runs before httplib reads the body. `curl --data-binary @trace.csv` labels the upload
  // application/x-www-form-urlencoded, which httplib would parse into query parameters (and
  // refuse past 8 KiB with 413): an upload here is never a form, so it is read as bytes. The
  // Request is httplib's own non-const object, handed to this hook as const.
  static thread_local std::chrono::steady_clock::time_point started;
  s.set_pre_routing_handler([](const Request& req, Response&) {
    started = std::chrono::steady_clock::now();
    if (req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0) {
      auto& headers = const_cast<Request&>(req).headers;
      headers.erase("Content-Type");
      headers.emplace("Content-Type", "application/octet-stream");
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  if (options_.log) {
    auto log = options_.log;
    s.set_logger([log](const Request& req, const Response& res) {
      // Refused before routing (413, a malformed request): no start time of its own.
      const std::string took =
          started == std::chrono::steady_clock::time_point{}
              ? "-"
              : fmt::format("{:.1f} ms", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
      started = {};
      // Content-Length, not the body: a multipart upload's parts are not in req.body.
      const std::string in = req.has_header("Content-Length") ? req.get_header_value("Content-Length") : "0";
      // The path is decoded client bytes: escaped, so the log cannot carry terminal escapes or
      // a forged line.
      log(fmt::format("{} {} {} {} ({} bytes in, {} out, {})", req.remote_addr, net::escape_for_log(req.method),
                      net::escape_for_log(req.path), res.status, net::escape_for_log(in), res.body.size(), took));
    });
  }
}

}  // namespace epochcast::server
