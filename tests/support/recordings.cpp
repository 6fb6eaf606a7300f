// Reading the shared recordings (recordings.hpp).
#include "tests/support/recordings.hpp"

#include <cctype>
#include <cstdlib>
#include <stdexcept>

#include "tests/support/temp_dir.hpp"

namespace kstate::testing {

std::string shared_testdata() {
  const char* from_environment = std::getenv("KSTATE_SHARED_TESTDATA");
  return from_environment != nullptr && *from_environment != '\0' ? from_environment : KSTATE_SHARED_TESTDATA;
}

json::Document recording(const std::string& file) {
  const std::string path = std::string(KSTATE_SOURCE_DIR) + "/tests/emulator/recordings/kube-apiserver-1.32/" + file;
  auto parsed = json::parse(read_file(path));
  if (!parsed.ok()) {
    throw std::runtime_error(path + ": " + parsed.error().message);
  }
  return std::move(parsed).value();
}

std::string recorded_response_text(const std::string& file) {
  json::Document whole = recording(file);
  const json::Value* body = json::find_path(whole, {"response", "body"});
  if (body == nullptr) {
    throw std::runtime_error(file + ": no response body");
  }
  return body->IsString() ? std::string(body->GetString(), body->GetStringLength()) : json::dump(*body);
}

json::Document recorded_response_body(const std::string& file) {
  auto parsed = json::parse(recorded_response_text(file));
  if (!parsed.ok()) {
    throw std::runtime_error(file + ": " + parsed.error().message);
  }
  return std::move(parsed).value();
}

std::string recorded_request_text(const std::string& file) {
  json::Document whole = recording(file);
  const json::Value* body = json::find_path(whole, {"request", "body"});
  if (body == nullptr) {
    throw std::runtime_error(file + ": no request body");
  }
  return body->IsString() ? std::string(body->GetString(), body->GetStringLength()) : json::dump(*body);
}

Response recorded_response(const std::string& file) {
  json::Document whole = recording(file);
  Response response;
  if (const json::Value* status = json::find_path(whole, {"response", "status"});
      status != nullptr && status->IsInt()) {
    response.status = status->GetInt();
  }
  if (const json::Value* headers = json::find_path(whole, {"response", "headers"});
      headers != nullptr && headers->IsObject()) {
    for (const auto& header : headers->GetObject()) {
      std::string name(header.name.GetString(), header.name.GetStringLength());
      for (auto& c : name) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      response.headers.emplace_back(std::move(name), std::string(json::string_or(&header.value, "")));
    }
  }
  response.body = recorded_response_text(file);
  return response;
}

}  // namespace kstate::testing
