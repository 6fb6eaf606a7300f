// libFuzzer target for the manifest loader: arbitrary bytes go through the whole
// pipeline (UTF-8 check, libyaml events, YAML -> JSON, documents -> states,
// validation, cross-state checks). Besides the sanitizers' findings it checks the
// loader's promises: every document converts to JSON that parses back to the same
// value, every error renders as one line, every state holds an object.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/json.hpp"
#include "manifests/loader.hpp"
#include "manifests/yaml_to_json.hpp"

namespace {

void require(bool condition) {
  if (!condition) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kstate::manifests::LoadOptions options;
  options.follow_sources = false;  // never read files named by the input
  // Smaller limits than the defaults keep each run fast while still reaching them.
  options.limits.yaml.max_document_bytes = 64 * 1024;
  options.limits.yaml.max_alias_expanded_nodes = 10'000;
  options.limits.yaml.max_nesting_depth = 64;

  auto stream = kstate::manifests::parse_yaml_documents(text, options.limits.yaml);
  for (const auto& document : stream.documents) {
    std::string dumped = kstate::json::dump(document.json);
    auto reparsed = kstate::json::parse(dumped);
    require(reparsed.ok());
    require(*reparsed == document.json);
  }

  auto result = kstate::manifests::load_text(text, "fuzz.yaml", options);
  for (const auto& error : result.errors) {
    std::string line = error.to_string();
    require(!line.empty() && line.find('\n') == std::string::npos);
    require(!error.message.empty());
  }
  for (const auto& state : result.states) {
    require(state.object.IsObject());
    require(!state.id.empty());
  }
  require(result.errors.empty() == result.failed_files.empty());
  return 0;
}
