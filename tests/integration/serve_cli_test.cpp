// `epochcast serve` end to end: the built CLI serving the HTTP API on 127.0.0.1 (port 0), real
// HTTP requests through cpp-httplib's client, answers compared with the CLI's own --json.
#include <gtest/gtest.h>
#include <httplib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collect_process.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;
using testing::Process;
using testing::run_cli;
using testing::TempDir;

std::string h200(const std::string& name) { return std::string(EPOCHCAST_TEST_DATA) + "/h200/" + name; }

nlohmann::json parse(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << text;
  return j;
}

// One server for the suite (the default model loads once): 1 MiB upload limit for the 413 case.
class ServeCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("serve");
    server_ = new Process({EPOCHCAST_CLI, "serve", "--listen", "127.0.0.1:0", "--max-body-mb", "1", "--threads", "4"},
                          {}, dir_->path());
    port_ = server_->serving_port(120);
  }
  static void TearDownTestSuite() {
    delete server_;  // SIGKILL if still running; the clean stop has its own test
    delete dir_;
  }
  void SetUp() override { ASSERT_GT(port_, 0) << server_->err(); }

  static httplib::Client client() {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(120, 0);
    return c;
  }
  static httplib::Result post(const std::string& path, const std::string& body) {
    return client().Post(path.c_str(), body, "text/csv");
  }
  static httplib::Result post_with_host(const std::string& path, const std::string& trace_file,
                                        const std::string& host_file) {
    httplib::MultipartFormDataItems items = {
        {"trace", testing::read_file(trace_file), fs::path(trace_file).filename().string(), "text/csv"},
        {"host", testing::read_file(host_file), fs::path(host_file).filename().string(), "text/csv"}};
    return client().Post(path.c_str(), items);
  }
  static nlohmann::json cli_json(std::vector<std::string> args) {
    const auto r = run_cli(std::move(args), {}, dir_->path());
    EXPECT_EQ(r.status, 0) << r.err;
    return parse(r.out);
  }
  // The error object of a refused request, with its status checked.
  static nlohmann::json error_of(const httplib::Result& res, int status) {
    EXPECT_TRUE(res) << "no answer";
    if (!res) return {};
    EXPECT_EQ(res->status, status) << res->body;
    EXPECT_NE(res->get_header_value("Content-Type").find("application/json"), std::string::npos);
    const auto j = parse(res->body);
    EXPECT_TRUE(j.contains("error")) << res->body;
    return j.value("error", nlohmann::json::object());
  }

  static TempDir* dir_;
  static Process* server_;
  static int port_;
};

TempDir* ServeCli::dir_ = nullptr;
Process* ServeCli::server_ = nullptr;
int ServeCli::port_ = -1;

TEST_F(ServeCli, HealthIndexGpusAndModel) {
  auto health = client().Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(parse(health->body)["status"], "ok");

  // The machine-readable index: GET /v1, or GET / asking for JSON; a browser gets the page.
  auto index = client().Get("/v1");
  ASSERT_TRUE(index);
  EXPECT_NE(parse(index->body)["endpoints"].dump().find("POST /v1/predict"), std::string::npos) << index->body;
  auto as_json = client().Get("/", {{"Accept", "application/json"}});
  ASSERT_TRUE(as_json);
  EXPECT_EQ(parse(as_json->body), parse(index->body));
  auto page = client().Get("/", {{"Accept", "text/html,application/xhtml+xml,application/json;q=0.9,*/*;q=0.8"}});
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(page->body.find("<form id=\"upload\""), std::string::npos) << page->body.substr(0, 300);

  auto gpus = client().Get("/v1/gpus");
  ASSERT_TRUE(gpus);
  const auto ids = parse(gpus->body)["gpus"];
  for (const char* id : {"t4", "v100", "a10g", "p100", "h200"})
    EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id << " missing from " << ids.dump();

  auto model = client().Get("/v1/model");
  ASSERT_TRUE(model);
  const auto validation = parse(model->body)["validation"];
  EXPECT_TRUE(validation["available"].get<bool>()) << model->body;
  EXPECT_EQ(validation["protocols"][0]["protocol"], "lomo");
}

// The body alone is the trace: the same object as `detect --json` of that file (a copy without
// its host log, which the CLI would merge from beside it).
TEST_F(ServeCli, DetectAnswersAsTheCliDoes) {
  const fs::path copy = dir_->path() / "resnet50.smi.csv";
  fs::copy_file(h200("resnet50_224_bs256_bf16.smi.csv"), copy, fs::copy_options::overwrite_existing);
  const auto res = post("/v1/detect", testing::read_file(copy));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const auto served = parse(res->body);
  EXPECT_TRUE(served["found"].get<bool>()) << res->body;
  EXPECT_EQ(served, cli_json({"detect", copy.string(), "--json"}));
  // `curl --data-binary` labels it a form: still read as the trace (httplib parses forms into
  // query parameters and refuses them past 8 KiB).
  const auto as_form = client().Post("/v1/detect", testing::read_file(copy), "application/x-www-form-urlencoded");
  ASSERT_TRUE(as_form);
  EXPECT_EQ(as_form->status, 200) << as_form->body;
  EXPECT_EQ(as_form->body, res->body);

  // With the host log as a second part: as `detect` with the host log beside the trace.
  const auto with_host = post_with_host("/v1/detect", h200("resnet18_32_bs128_cpuloader.smi.csv"),
                                        h200("resnet18_32_bs128_cpuloader.host.csv"));
  ASSERT_TRUE(with_host);
  ASSERT_EQ(with_host->status, 200) << with_host->body;
  auto a = parse(with_host->body), b = cli_json({"detect", h200("resnet18_32_bs128_cpuloader.smi.csv"), "--json"});
  EXPECT_TRUE(a["found"].get<bool>()) << with_host->body;  // resnet18 needs its host CPU (docs/detection.md)
  a.erase("warnings"), b.erase("warnings");                 // they name the files
  EXPECT_EQ(a, b);
}

TEST_F(ServeCli, PredictAnswersAsTheCliDoes) {
  const std::string trace = h200("vgg16_224_bs32_fp32.smi.csv");
  const auto res = post_with_host("/v1/predict?gpus=t4,v100,a10g&epochs=5", trace, h200("vgg16_224_bs32_fp32.host.csv"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const auto served = parse(res->body);
  const auto cli = cli_json({"predict", trace, "--gpus", "t4,v100,a10g", "--epochs", "5", "--json"});
  ASSERT_EQ(served["predictions"].size(), 4u) << res->body;  // h200 (measured) + three
  for (const char* key : {"predictions", "epochs", "ranking_by_cost", "uncertainty", "validation", "model"})
    EXPECT_EQ(served[key], cli[key]) << key;
  EXPECT_EQ(served["source"]["detected"], cli["source"]["detected"]);
  EXPECT_EQ(served["source"]["trace"], "vgg16_224_bs32_fp32.smi.csv");  // the part's file name
}

// A tracker export's own epoch markers are the epoch time when the request asks for them.
TEST_F(ServeCli, PredictFromEpochMarkersAnswersAsTheCliDoes) {
  const std::string trace = std::string(EPOCHCAST_TEST_DATA) + "/formats/wandb_system.csv";
  const auto res = post("/v1/predict?epochs_from=markers&source_gpu=a100-80gb&gpus=t4", testing::read_file(trace));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const auto served = parse(res->body);
  const auto cli = cli_json({"predict", trace, "--epochs-from", "markers", "--source-gpu", "a100-80gb", "--gpus", "t4", "--json"});
  EXPECT_EQ(served["source"]["epoch_time_from"], "markers") << res->body;
  EXPECT_EQ(served["predictions"], cli["predictions"]);
  // Without it the markers are only mentioned; a word that is neither choice is refused by name.
  const auto detected = parse(post("/v1/predict?source_gpu=a100-80gb&gpus=t4", testing::read_file(trace))->body);
  EXPECT_NE(detected["source"]["epoch_time_from"], "markers") << detected.dump();
  const auto e = error_of(post("/v1/predict?epochs_from=marks&source_gpu=a100-80gb", testing::read_file(trace)), 400);
  EXPECT_NE(e["message"].get<std::string>().find("'epochs_from': 'marks' is not one of detect, markers"), std::string::npos)
      << e.dump();
}

TEST_F(ServeCli, ReportIsTheHtmlPage) {
  const auto res = post("/v1/report?epochs=3", testing::read_file(h200("resnet50_224_bs256_bf16.smi.csv")));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_NE(res->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(res->body.find("<svg"), std::string::npos);
  EXPECT_NE(res->body.find("</html>"), std::string::npos);
}

TEST_F(ServeCli, BadRequestsGetAJsonErrorWithTheirStatus) {
  const std::string trace = testing::read_file(h200("resnet50_224_bs256_bf16.smi.csv"));
  // A malformed trace: 422 naming the upload, its line and field.
  std::string broken = trace;
  const auto second_line = broken.find('\n') + 1;
  const auto third_line = broken.find('\n', second_line) + 1;
  broken.insert(third_line, "2026/11/30 15:28:57.800, NVIDIA H200, not-a-row\n");
  auto e = error_of(post("/v1/detect?name=job42.csv", broken), 422);
  EXPECT_EQ(e["code"], "parse");
  EXPECT_NE(e["message"].get<std::string>().find("job42.csv:3"), std::string::npos) << e.dump();

  e = error_of(post("/v1/predict?gpus=nosuch", trace), 404);
  EXPECT_EQ(e["code"], "not_found");
  EXPECT_NE(e["message"].get<std::string>().find("nosuch"), std::string::npos) << e.dump();

  e = error_of(post("/v1/predict?epochs=abc", trace), 400);
  EXPECT_NE(e["message"].get<std::string>().find("'epochs'"), std::string::npos) << e.dump();
  e = error_of(post("/v1/predict?epochs=0", trace), 400);
  e = error_of(post("/v1/predict?min_confidence=nan", trace), 400);
  e = error_of(post("/v1/predict?gpu_list=t4", trace), 400);  // a typo is not ignored
  EXPECT_NE(e["message"].get<std::string>().find("unknown query parameter 'gpu_list'"), std::string::npos) << e.dump();
  e = error_of(post("/v1/detect", ""), 400);
  EXPECT_NE(e["message"].get<std::string>().find("empty upload"), std::string::npos) << e.dump();

  // Hostile bytes: a clear 4xx, never a crash.
  std::string binary(4096, '\0');
  for (std::size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i * 7919 % 256);
  EXPECT_EQ(error_of(post("/v1/predict", binary), 422)["code"], "parse");
  auto form = client().Post("/v1/detect", httplib::MultipartFormDataItems{{"trace", trace, "t.csv", ""}, {"extra", "x", "", ""}});
  EXPECT_NE(error_of(form, 400)["message"].get<std::string>().find("unknown form part 'extra'"), std::string::npos);
  form = client().Post("/v1/detect", httplib::MultipartFormDataItems{{"host", trace, "h.csv", ""}});
  EXPECT_NE(error_of(form, 400)["message"].get<std::string>().find("no 'trace' part"), std::string::npos);

  // What httplib itself refuses gets the same body.
  e = error_of(post("/v1/detect", std::string(1200 * 1024, 'x')), 413);
  EXPECT_NE(e["message"].get<std::string>().find("1 MiB"), std::string::npos) << e.dump();
  const auto wrong_method = client().Get("/v1/predict");
  e = error_of(wrong_method, 405);
  EXPECT_EQ(wrong_method->get_header_value("Allow"), "POST");
  e = error_of(client().Get("/v2/nothing"), 404);
  EXPECT_NE(e["message"].get<std::string>().find("/v2/nothing"), std::string::npos) << e.dump();

  // The server is still there and right after all that.
  const auto ok = post("/v1/detect", trace);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  // Each request is logged on stderr with its status.
  EXPECT_NE(server_->err().find("POST /v1/predict 404"), std::string::npos) << server_->err();
}

// Raw bytes that are not good HTTP: each gets an answer or a closed connection, and the server
// keeps serving.
TEST_F(ServeCli, MalformedHttpLeavesTheServerServing) {
  auto exchange = [](const std::string& bytes) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::string reply;
    timeval timeout{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      static_cast<void>(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL));
      ::shutdown(fd, SHUT_WR);
      char buffer[4096];
      for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) reply.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return reply;
  };
  const std::vector<std::string> hostile = {
      "GARBAGE\r\n\r\n",
      "POST /v1/detect HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\nabc",
      "POST /v1/detect HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
      "POST /v1/detect HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nshort",
      "GET /v1/gpus?" + std::string(100000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET / HTTP/1.1\r\nX-Long: " + std::string(100000, 'b') + "\r\n\r\n",
      std::string("\0\xff\xfe\r\n\r\n", 6),
      "",
  };
  for (const auto& bytes : hostile) {
    const std::string reply = exchange(bytes);
    if (!reply.empty()) EXPECT_EQ(reply.rfind("HTTP/1.1 ", 0), 0u) << reply.substr(0, 200);
    const auto health = client().Get("/healthz");
    ASSERT_TRUE(health) << "no answer after " << bytes.substr(0, 80);
    EXPECT_EQ(health->status, 200);
  }
}

TEST_F(ServeCli, ConcurrentRequestsGetTheSameAnswer) {
  const std::string trace = testing::read_file(h200("resnet50_224_bs256_bf16.smi.csv"));
  std::vector<std::future<std::pair<int, std::string>>> answers;
  for (int i = 0; i < 8; ++i)
    answers.push_back(std::async(std::launch::async, [&trace] {
      const auto res = post("/v1/predict?epochs=4", trace);
      return res ? std::make_pair(res->status, res->body) : std::make_pair(-1, std::string());
    }));
  std::vector<std::pair<int, std::string>> got;
  for (auto& a : answers) got.push_back(a.get());
  for (const auto& [status, body] : got) {
    EXPECT_EQ(status, 200) << body;
    EXPECT_EQ(body, got.front().second);
  }
}

TEST(ServeCliProcess, StopsCleanlyOnSigtermAndSigint) {
  for (const int sig : {SIGTERM, SIGINT}) {
    TempDir dir("serve-stop");
    Process server({EPOCHCAST_CLI, "serve", "--listen", "127.0.0.1:0", "--json"}, {}, dir.path());
    const int port = server.serving_port(120);
    ASSERT_GT(port, 0) << server.err();
    httplib::Client c("127.0.0.1", port);
    ASSERT_TRUE(c.Get("/healthz"));
    const auto line = parse(server.out());
    EXPECT_EQ(line["port"], port);
    EXPECT_EQ(line["serving"], "http://127.0.0.1:" + std::to_string(port));
    server.signal(sig);
    EXPECT_EQ(server.wait(30), 0) << server.err();
    EXPECT_NE(server.err().find("epochcast: stopped"), std::string::npos) << server.err();
    EXPECT_FALSE(c.Get("/healthz")) << "still answering after signal " << sig;
  }
}

TEST(ServeCliProcess, ListenErrorsAreClear) {
  TempDir dir("serve-listen");
  auto r = run_cli({"serve", "--listen", "127.0.0.1:notaport"}, {}, dir.path());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--listen '127.0.0.1:notaport'"), std::string::npos) << r.err;

  Process first({EPOCHCAST_CLI, "serve", "--listen", "127.0.0.1:0", "-q"}, {}, dir.path());
  const int port = first.serving_port(120);
  ASSERT_GT(port, 0) << first.err();
  r = run_cli({"serve", "--listen", "127.0.0.1:" + std::to_string(port)}, {}, dir.path());
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("cannot bind"), std::string::npos) << r.err;
  first.signal(SIGTERM);
  EXPECT_EQ(first.wait(30), 0) << first.err();
}

// The page's files come from the binary (web/ embedded at build time), with their types and a
// policy that keeps the page to this server; names outside web/ are 404s.
TEST_F(ServeCli, PageAndItsScriptsAreServed) {
  for (const auto& [path, type] : std::vector<std::pair<std::string, std::string>>{
           {"/static/upload.js", "text/javascript"}, {"/static/fleet.js", "text/javascript"},
           {"/static/dom.js", "text/javascript"}, {"/static/style.css", "text/css"}, {"/fleet", "text/html"}}) {
    const auto res = client().Get(path.c_str());
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path;
    EXPECT_EQ(res->get_header_value("Content-Type").rfind(type, 0), 0u) << path;
    EXPECT_NE(res->get_header_value("Content-Security-Policy").find("default-src 'self'"), std::string::npos);
    EXPECT_GT(res->body.size(), 200u) << path;
  }
  for (const char* path : {"/static/nothing.js", "/static/../CMakeLists.txt", "/static/%2e%2e%2fCMakeLists.txt"}) {
    const auto res = client().Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path << ": " << res->body.substr(0, 200);
  }
}

// A browser sends every file field of a form; an unfilled one is a part with no file name and
// no bytes. As the host log that means none: the answer is the trace's alone.
TEST_F(ServeCli, EmptyHostPartMeansNoHostLog) {
  const std::string trace = testing::read_file(h200("vgg16_224_bs32_fp32.smi.csv"));
  const auto alone = client().Post("/v1/detect", httplib::MultipartFormDataItems{{"trace", trace, "vgg.smi.csv", "text/csv"}});
  const auto with_empty = client().Post(
      "/v1/detect", httplib::MultipartFormDataItems{{"trace", trace, "vgg.smi.csv", "text/csv"},
                                                    {"host", "", "", "application/octet-stream"}});
  ASSERT_TRUE(alone && with_empty);
  ASSERT_EQ(alone->status, 200) << alone->body;
  ASSERT_EQ(with_empty->status, 200) << with_empty->body;
  EXPECT_EQ(with_empty->body, alone->body);
  // A named but empty host file is a host log with nothing in it: refused, naming it.
  const auto named_empty = client().Post(
      "/v1/detect", httplib::MultipartFormDataItems{{"trace", trace, "vgg.smi.csv", "text/csv"},
                                                    {"host", "", "vgg.host.csv", "text/csv"}});
  const auto e = error_of(named_empty, 422);
  EXPECT_NE(e.value("message", "").find("vgg.host.csv"), std::string::npos) << e.dump();
  // No file chosen for the trace: said so, not "empty upload".
  const auto no_trace = client().Post("/v1/report", httplib::MultipartFormDataItems{{"trace", "", "", "application/octet-stream"},
                                                                                     {"host", "", "", "application/octet-stream"}});
  EXPECT_EQ(error_of(no_trace, 400).value("message", ""), "the form's 'trace' part is empty: no trace file was chosen");
  // Two trace parts: which one was meant is a guess, so neither.
  const auto twice = client().Post("/v1/detect", httplib::MultipartFormDataItems{{"trace", trace, "a.csv", "text/csv"},
                                                                                 {"trace", trace, "b.csv", "text/csv"}});
  EXPECT_EQ(error_of(twice, 400).value("message", ""), "form part 'trace' given more than once");
}

}  // namespace
}  // namespace epochcast
