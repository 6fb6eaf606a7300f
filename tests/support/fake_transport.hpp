// A scripted Transport for unit tests (core/transport.hpp): no network, no sleeping.
// Tests queue answers (a Response, an Error, or a handler that sees the Request) and
// watch streams (chunks of body, then a clean end or an error); the fake records
// every request and counts them the way the real transport does ("GET 200", and
// "GET read" for a queued Error without an HTTP status).
//
//   FakeTransport fake;
//   fake.respond(200, R"({"kind":"ConfigMap"})");
//   fake.respond(Error(ErrorKind::connection, "dropped"));
//   fake.stream({"{\"type\":\"ADDED\",...}\n"}, Error(ErrorKind::connection, "reset"));
//   DynamicClient client(fake);  ...  CHECK(fake.requests().size() == 2);
//
// Non-2xx responses become Errors through error_from_response, as in the real
// transport, so callers see typed errors (http_status, reason, retry_after_seconds).
// When nothing is queued, the handler (if set) answers; otherwise 500.
#pragma once

#include <utility>
// (blank line keeps <utility> first for Boost 1.74's awaitable.hpp)

#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/response.hpp"
#include "core/transport.hpp"

namespace kstate::testing {

// The value of a request's query parameter `key` ("" when it has none).
inline std::string query_value(const Request& request, const std::string& key) {
  for (const auto& [name, value] : request.query) {
    if (name == key) {
      return value;
    }
  }
  return "";
}

class FakeTransport final : public Transport {
 public:
  using Handler = std::function<Result<Response>(const Request&)>;

  // A stream script: chunks of body in order, then `end` (nullopt: a clean end).
  struct StreamScript {
    std::vector<std::string> chunks;
    std::optional<Error> end;
  };

  void respond(int status, std::string body, std::vector<std::pair<std::string, std::string>> headers = {}) {
    Response response;
    response.status = status;
    response.body = std::move(body);
    response.headers = std::move(headers);
    answers_.emplace_back(std::move(response));
  }
  void respond(Error error) { answers_.emplace_back(std::move(error)); }
  void handle(Handler handler) { handler_ = std::move(handler); }
  // Queues a watch: open_stream() answers 200 and the body yields the chunks.
  void stream(std::vector<std::string> chunks, std::optional<Error> end = std::nullopt) {
    streams_.push_back(StreamScript{std::move(chunks), std::move(end)});
  }
  // Queues a failed watch open (e.g. 410 or a connection error).
  void refuse_stream(Error error) { streams_.push_back(std::move(error)); }

  const std::vector<Request>& requests() const { return requests_; }
  std::size_t pending_answers() const { return answers_.size(); }
  std::size_t pending_streams() const { return streams_.size(); }

  asio::awaitable<Result<Response>> send(Request request) override {
    requests_.push_back(request);
    Result<Response> answer = next_answer(request);
    if (!answer) {
      // (a queued Error stands for a broken connection, or a deadline when it says so)
      const auto failure = answer.error().kind == ErrorKind::timeout ? RequestFailure::timeout : RequestFailure::read;
      ++stats_.failures[request.verb + " " + std::string(to_string(failure))];
      co_return std::move(answer);
    }
    int status = answer->status;
    ++stats_.requests[request.verb + " " + std::to_string(status)];
    if ((status >= 200 && status < 300) || status == 304) {
      co_return std::move(answer);
    }
    Error error = error_from_response(status, answer->body, answer->header("retry-after"));
    error.warnings = answer->warnings();  // as the real transport keeps them
    co_return error;
  }

  asio::awaitable<Result<std::unique_ptr<ResponseStream>>> open_stream(Request request) override {
    requests_.push_back(request);
    if (streams_.empty()) {
      ++stats_.failures[request.verb + " read"];
      co_return Error(ErrorKind::connection, "fake transport: no watch stream queued");
    }
    auto script = std::move(streams_.front());
    streams_.pop_front();
    if (auto* error = std::get_if<Error>(&script)) {
      ++stats_.requests[request.verb + " " + std::to_string(error->http_status)];
      co_return std::move(*error);
    }
    ++stats_.requests[request.verb + " 200"];
    co_return std::unique_ptr<ResponseStream>(std::make_unique<Stream>(std::move(std::get<StreamScript>(script))));
  }

  TransportStats stats() const override { return stats_; }

 private:
  class Stream final : public ResponseStream {
   public:
    explicit Stream(StreamScript script) : script_(std::move(script)) {}
    asio::awaitable<Result<std::string>> read_some() override {
      if (next_ < script_.chunks.size()) {
        co_return script_.chunks[next_++];
      }
      if (script_.end) {
        co_return *script_.end;
      }
      co_return std::string();
    }

   private:
    StreamScript script_;
    std::size_t next_ = 0;
  };

  Result<Response> next_answer(const Request& request) {
    if (!answers_.empty()) {
      auto answer = std::move(answers_.front());
      answers_.pop_front();
      return answer;
    }
    if (handler_) {
      return handler_(request);
    }
    Response response;
    response.status = 500;
    response.body = R"({"kind":"Status","status":"Failure","reason":"InternalError","message":"fake transport: )"
                    R"(nothing queued","code":500})";
    return response;
  }

  std::deque<Result<Response>> answers_;
  std::deque<std::variant<StreamScript, Error>> streams_;
  Handler handler_;
  std::vector<Request> requests_;
  TransportStats stats_;
};

}  // namespace kstate::testing
