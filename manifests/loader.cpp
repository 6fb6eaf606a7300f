// Implementation of loader.hpp: the directory walk, files -> documents -> states
// (plain objects, Lists, Salt-style state documents with `source:` includes), object
// validation, annotations, and the cross-state checks. Every problem becomes one
// LoadError at the exact position and the loader carries on with the next state.
#include "manifests/loader.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "core/duration.hpp"
#include "core/encoding.hpp"
#include "core/strings.hpp"
#include "manifests/cluster_scope.hpp"
#include "manifests/conventions.hpp"
#include "manifests/file_names.hpp"
#include "manifests/ignore_fields.hpp"
#include "manifests/object_validation.hpp"
#include "manifests/variables.hpp"

namespace kstate::manifests {

namespace fs = std::filesystem;

std::string LoadError::to_string() const {
  std::string out = position.to_string();
  out += ": ";
  if (!state_id.empty()) {
    out += state_id;
    out += ": ";
  }
  out += message;
  // One problem, one line: line breaks from quoted keys or values are shown escaped.
  std::string escaped;
  escaped.reserve(out.size());
  for (char c : out) {
    if (c == '\n') {
      escaped += "\\n";
    } else if (c == '\r') {
      escaped += "\\r";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

std::string LoadResult::error_text() const {
  std::string out;
  for (const auto& error : errors) {
    out += error.to_string();
    out += '\n';
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  return encoding::sha256_hex(bytes);
}

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      std::size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_match(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string_view best;
  std::size_t best_distance = std::string_view::npos;
  for (auto candidate : candidates) {
    std::size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  // A plausible typo: a few edits, and fewer than half the word.
  std::size_t allowed = std::max<std::size_t>(2, word.size() / 3);
  if (best.empty() || best_distance > allowed || best_distance * 2 > std::max(word.size(), best.size())) {
    return {};
  }
  return std::string(best);
}

namespace {

std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string match = closest_match(word, candidates);
  return match.empty() ? std::string() : " (did you mean \"" + match + "\"?)";
}

std::string_view view(const json::Value& value) {
  return {value.GetString(), value.GetStringLength()};
}

const char* type_name(const json::Value& value) {
  switch (value.GetType()) {
    case rapidjson::kNullType:
      return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType:
      return "boolean";
    case rapidjson::kObjectType:
      return "mapping";
    case rapidjson::kArrayType:
      return "list";
    case rapidjson::kStringType:
      return "string";
    case rapidjson::kNumberType:
      return "number";
  }
  return "value";
}

// Line `line` (1-based) of `text`, without its line break; empty when there is none.
std::string_view line_of(std::string_view text, int line) {
  std::size_t begin = 0;
  for (int current = 1; current < line; ++current) {
    begin = text.find('\n', begin);
    if (begin == std::string_view::npos) {
      return {};
    }
    ++begin;
  }
  return line < 1 ? std::string_view() : text.substr(begin, text.find('\n', begin) - begin);
}

// ---------------------------------------------------------------------------------
// Directory walk

// A file found by the walk, with its lstat and the stat of what it names (its
// identity, device and inode, is the latter's).
struct FoundFile {
  std::string path;
  struct stat link {};
  struct stat target {};
  std::pair<dev_t, ino_t> identity() const { return {target.st_dev, target.st_ino}; }
};

void walk_directory(const fs::path& directory, std::set<fs::path>& visited, std::vector<FoundFile>& files,
                    std::vector<LoadError>& errors) {
  std::error_code error;
  fs::path canonical = fs::canonical(directory, error);
  if (error) {
    errors.push_back({{directory.string(), 0, 0}, {}, "cannot resolve directory: " + error.message()});
    return;
  }
  if (!visited.insert(canonical).second) {
    return;  // symlink loop or second link to a directory already walked
  }
  fs::directory_iterator iterator(directory, error);
  if (error) {
    errors.push_back({{directory.string(), 0, 0}, {}, "cannot list directory: " + error.message()});
    return;
  }
  std::vector<std::string> names;
  for (const auto& entry : iterator) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    if (is_skipped_name(name)) {
      continue;
    }
    fs::path child = directory / name;
    // One lstat per entry; a symbolic link is followed with a stat.
    struct stat link {};
    struct stat info {};
    const bool stated = ::lstat(child.c_str(), &link) == 0 &&
                        (S_ISLNK(link.st_mode) ? ::stat(child.c_str(), &info) == 0 : (info = link, true));
    if (!stated) {
      if (has_manifest_extension(name)) {
        errors.push_back(
            {{child.string(), 0, 0}, {}, "cannot read (dangling symlink?): " + std::string(std::strerror(errno))});
      }
      continue;
    }
    if (S_ISDIR(info.st_mode)) {
      walk_directory(child, visited, files, errors);
    } else if (S_ISREG(info.st_mode) && has_manifest_extension(name)) {
      files.push_back({child.string(), link, info});
    }
  }
}

// ---------------------------------------------------------------------------------
// Reading

struct FileContent {
  std::string text;
  std::string error;  // empty when read
};

FileContent read_file(const std::string& path, std::size_t max_bytes) {
  FileContent content;
  std::error_code error;
  fs::file_status status = fs::status(path, error);
  if (error) {
    content.error = "cannot read: " + error.message();
    return content;
  }
  if (!fs::is_regular_file(status)) {
    content.error = "cannot read: not a regular file";
    return content;
  }
  std::uintmax_t size = fs::file_size(path, error);
  if (!error && size > max_bytes) {
    content.error = "file is " + std::to_string(size) + " bytes, larger than the limit of " +
                    std::to_string(max_bytes) + " bytes (max_file_bytes)";
    return content;
  }
  std::ifstream stream(path, std::ios::binary);
  if (!stream) {
    content.error = "cannot open for reading";
    return content;
  }
  // Read what is there, in chunks: a buffer of the limit's size for every file cost
  // 32 MiB of zeroed memory per file (19 s for 1,000 small files). The loop still
  // enforces the limit if the file grows between the size check and the read.
  if (!error) {
    content.text.reserve(static_cast<std::size_t>(std::min<std::uintmax_t>(size, max_bytes)) + 1);
  }
  std::array<char, 64 * 1024> chunk{};
  while (stream.read(chunk.data(), chunk.size()) || stream.gcount() > 0) {
    content.text.append(chunk.data(), static_cast<std::size_t>(stream.gcount()));
    if (content.text.size() > max_bytes) {
      content.error = "file is larger than the limit of " + std::to_string(max_bytes) + " bytes (max_file_bytes)";
      content.text.clear();
      return content;
    }
  }
  if (stream.bad()) {
    content.error = "read error";
  }
  return content;
}

// ---------------------------------------------------------------------------------
// Documents -> states

constexpr std::string_view kStateAnnotation = "kstate.io/state";
constexpr std::string_view kStrategyAnnotation = "kstate.io/strategy";
constexpr std::string_view kRecreateAnnotation = "kstate.io/recreate";
constexpr std::string_view kTakeoverAnnotation = "kstate.io/takeover";
constexpr std::string_view kWaitAnnotation = "kstate.io/wait";
constexpr std::string_view kDependsOnAnnotation = "kstate.io/depends-on";
constexpr int kMaxIncludeDepth = 16;

const std::vector<std::string_view> kFunctionNames = {"object_present", "object_updated", "object_absent"};
const std::vector<std::string_view> kPropagations = {"Background", "Foreground", "Orphan"};
const std::vector<std::string_view> kStrategies = {"apply", "replace", "create-only"};

// The functions an argument applies to, as bits of ArgumentRule::functions.
constexpr unsigned function_bit(Function function) {
  return 1U << static_cast<unsigned>(function);
}
constexpr unsigned kPresent = function_bit(Function::object_present);
constexpr unsigned kUpdated = function_bit(Function::object_updated);
constexpr unsigned kAbsent = function_bit(Function::object_absent);

// "Deployment/kube-system/coredns" or "ClusterRole/view" (no namespace given).
std::string object_key(const json::Value& object) {
  std::string kind(json::get_string(object, "kind").value_or(""));
  const json::Value* metadata = json::find(object, "metadata");
  std::string_view name;
  std::string_view namespace_name;
  if (metadata != nullptr) {
    name = json::get_string(*metadata, "name").value_or("");
    if (name.empty()) {
      name = json::get_string(*metadata, "generateName").value_or("");
    }
    namespace_name = json::get_string(*metadata, "namespace").value_or("");
  }
  std::string key = kind + "/";
  if (!namespace_name.empty()) {
    key += namespace_name;
    key += '/';
  }
  key += name;
  return key;
}

// Arguments given explicitly in a state document; unset ones fall back to annotations.
struct Arguments {
  Function function = Function::object_present;
  std::optional<Strategy> strategy;
  std::optional<bool> recreate;
  std::optional<std::string> propagation;
  std::optional<Wait> wait;
  std::vector<std::string> require;
  std::vector<std::string> require_in;
  std::vector<std::string> onchanges;
  std::vector<std::string> watch;
};

// The requisite arguments and where each goes in Arguments.
constexpr std::string_view kRequisites[] = {"require", "require_in", "onchanges", "watch"};
std::vector<std::string>& requisite_list(Arguments& arguments, std::string_view name) {
  if (name == "require_in") {
    return arguments.require_in;
  }
  if (name == "onchanges") {
    return arguments.onchanges;
  }
  if (name == "watch") {
    return arguments.watch;
  }
  return arguments.require;
}

class Loader {
 public:
  Loader(LoadResult& result, const LoadOptions& options) : result_(result), options_(options) {}

  void load_file(const std::string& path) {
    FileContent content = read_file(path, options_.limits.max_file_bytes);
    if (!content.error.empty()) {
      error({path, 0, 0}, {}, content.error);
      return;
    }
    load_text(content.text, path);
  }

  void load_text(std::string_view text, const std::string& path) {
    record_file(path, text);
    std::vector<std::string> stack{stack_key(path)};
    load_documents(text, path, stack, nullptr);
  }

 private:
  struct IncludeContext {
    std::string id;
    Arguments arguments;
    std::vector<State>* objects;  // where objects of the included file go
  };

  static std::string stack_key(const std::string& path) {
    std::error_code error;
    fs::path canonical = fs::weakly_canonical(path, error);
    return error ? path : canonical.string();
  }

  void record_file(const std::string& path, std::string_view text) {
    if (result_.file_hashes.emplace(path, sha256_hex(text)).second) {
      result_.files.push_back(path);
    }
  }

  void error(const SourcePosition& position, const std::string& id, std::string message) {
    if (!quotable(position.file)) {
      message =
          "its content is not shown: the file is outside the manifests folder (it is " + real_path(position.file) + ")";
      result_.errors.push_back({position, {}, std::move(message)});
    } else {
      result_.errors.push_back({position, id, std::move(message)});
    }
    result_.failed_files.insert(position.file);
  }

  static std::string real_path(const std::string& path) {
    std::error_code error;
    fs::path canonical = fs::canonical(path, error);
    return error ? path : canonical.string();
  }

  // Whether errors may quote this file's content (LoadOptions::quotable_paths).
  bool quotable(const std::string& path) const {
    if (options_.quotable_paths.empty()) {
      return true;
    }
    const std::string real = real_path(path);
    for (const auto& allowed : options_.quotable_paths) {
      const std::string root = real_path(allowed);
      if (real == root || (real.starts_with(root) && (root.ends_with('/') || real[root.size()] == '/'))) {
        return true;
      }
    }
    return false;
  }
  void error(const std::string& file, TextPosition at, const std::string& id, std::string message) {
    error(SourcePosition{file, at.line, at.column}, id, std::move(message));
  }

  void load_documents(std::string_view text, const std::string& path, std::vector<std::string>& stack,
                      const IncludeContext* include) {
    YamlStream stream = parse_yaml_documents(text, options_.limits.yaml);
    std::sort(stream.errors.begin(), stream.errors.end(), [](const YamlError& a, const YamlError& b) {
      return std::pair(a.position.line, a.position.column) < std::pair(b.position.line, b.position.column);
    });
    for (auto& yaml_error : stream.errors) {
      std::string message = std::move(yaml_error.message);
      if (line_of(text, yaml_error.position.line).find("${") != std::string_view::npos) {
        // `{a: ${A}}`: braces are YAML's flow syntax, which variables do not escape.
        message +=
            " (a ${...} reference inside a flow collection, {...} or [...], must be quoted or written in "
            "block style)";
      }
      error(path, yaml_error.position, {}, std::move(message));
    }
    for (auto& document : stream.documents) {
      load_document(document, path, stack, include);
    }
  }

  void load_document(YamlDocument& document, const std::string& path, std::vector<std::string>& stack,
                     const IncludeContext* include) {
    const json::Value& root = document.json;
    if (root.IsNull()) {
      return;  // empty document
    }
    if (!root.IsObject()) {
      error(path, document.start, {},
            std::string("a manifest document must be a mapping (a Kubernetes object or "
                        "state IDs), not a ") +
                type_name(root));
      return;
    }
    bool has_api_version = json::find(root, "apiVersion") != nullptr;
    bool has_kind = json::find(root, "kind") != nullptr;
    if (has_api_version && has_kind) {
      load_object(root, document.locator, path, include, &document.json);
      return;
    }
    std::string file_name = fs::path(path).filename().string();
    if (file_name == "kustomization.yaml" || file_name == "kustomization.yml" || file_name == "Kustomization") {
      error(path, document.locator.position(), {}, kustomize_message("this kustomization file"));
      return;
    }
    if (has_api_version || has_kind || json::find(root, "metadata") != nullptr) {
      error(path, document.locator.position(), {},
            std::string("a Kubernetes object needs both apiVersion and kind (missing ") +
                (has_api_version ? "kind" : "apiVersion") + ")");
      return;
    }
    for (const auto& member : root.GetObject()) {
      std::size_t first_new = result_.states.size();
      if (view(member.name) == "include") {
        include_files(member.value, document.locator, path, stack);
        continue;
      }
      load_state_entry(view(member.name), member.value, document.locator, path, stack);
      // The file a `- sls:` requisite names (states of nested state documents have theirs).
      for (std::size_t i = first_new; i < result_.states.size(); ++i) {
        if (result_.states[i].sls_file.empty()) {
          result_.states[i].sls_file = stack.back();
        }
      }
    }
  }

  // Salt's top-level `include:` of a state document: a list of state files (SLS names
  // or paths, resolve_state_file), each loaded once as if it were in the manifests.
  void include_files(const json::Value& list, const YamlLocator& document_at, const std::string& path,
                     std::vector<std::string>& stack) {
    YamlLocator list_at = document_at.child("include");
    if (!list.IsArray()) {
      error(path, list_at.position(), {},
            std::string("include: expected a list of state files (SLS names or paths), not a ") + type_name(list));
      return;
    }
    if (!options_.follow_sources) {
      error(path, list_at.position(), {}, "include: includes are disabled here");
      return;
    }
    for (rapidjson::SizeType i = 0; i < list.Size(); ++i) {
      TextPosition at = list_at.item(i).position();
      if (!list[i].IsString() || list[i].GetStringLength() == 0) {
        error(path, at, {}, std::string("include: expected an SLS name or a file path, not a ") + type_name(list[i]));
        continue;
      }
      Result<std::string> target = resolve_state_file(view(list[i]), path);
      if (!target.ok()) {
        error(path, at, {}, "include: " + target.error().message);
        continue;
      }
      std::string key = stack_key(*target);
      if (std::find(stack.begin(), stack.end(), key) != stack.end()) {
        std::string chain;
        for (const auto& file : stack) {
          chain += file + " -> ";
        }
        error(path, at, {}, "include: include cycle: " + chain + key);
        continue;
      }
      result_.included_by[*target].insert(path);
      if (!included_.insert(key).second) {
        continue;  // Salt loads a state file once, however many files include it
      }
      if (static_cast<int>(stack.size()) > kMaxIncludeDepth) {
        error(path, at, {}, "include: includes nested deeper than " + std::to_string(kMaxIncludeDepth) + " files");
        continue;
      }
      FileContent content = read_file(*target, options_.limits.max_file_bytes);
      if (!content.error.empty()) {
        error(path, at, {}, "include: " + *target + ": " + content.error);
        continue;
      }
      record_file(*target, content.text);
      std::size_t errors_before = result_.errors.size();
      stack.push_back(key);
      load_documents(content.text, *target, stack, nullptr);
      stack.pop_back();
      if (result_.errors.size() != errors_before) {
        result_.failed_files.insert(path);  // the including file's states are incomplete
      }
    }
  }

  static std::string kustomize_message(const std::string& what) {
    return what +
           " is a kustomize build file, not a Kubernetes object: kstate does not run kustomize (render it with "
           "`kubectl kustomize DIR` into the manifests directory, or keep it out of it)";
  }

  // A Kubernetes object, or a List of them.
  // `owner` is the document when the object is its root: it is then moved into the
  // state instead of copied (the common case, and most of the loader's memory traffic).
  void load_object(const json::Value& object, const YamlLocator& at, const std::string& path,
                   const IncludeContext* include, json::Document* owner = nullptr) {
    std::string_view kind = json::get_string(object, "kind").value_or("");
    const json::Value* items = json::find(object, "items");
    if (kind == "List" || (kind.ends_with("List") && items != nullptr && items->IsArray())) {
      if (items == nullptr || !items->IsArray()) {
        error(path, at.key_position("items"), {}, "kind List needs an `items` list");
        return;
      }
      YamlLocator items_at = at.child("items");
      for (rapidjson::SizeType i = 0; i < items->Size(); ++i) {
        const json::Value& item = (*items)[i];
        YamlLocator item_at = items_at.item(i);
        if (!item.IsObject() || json::find(item, "apiVersion") == nullptr || json::find(item, "kind") == nullptr) {
          error(path, item_at.position(), {},
                "List item " + std::to_string(i) + " is not a Kubernetes object (needs apiVersion and kind)");
          continue;
        }
        load_object(item, item_at, path, include);
      }
      return;
    }
    std::string_view api_version = json::get_string(object, "apiVersion").value_or("");
    if (api_version.starts_with("kustomize.config.k8s.io/")) {
      error(path, at.position(), {}, kustomize_message(std::string(api_version) + " " + std::string(kind)));
      return;
    }
    State state;
    state.source = {path, at.position().line, at.position().column};
    // The state's own copy (the document's root is moved, not copied), which variables
    // are substituted into before anything reads it.
    state.object = owner != nullptr ? std::move(*owner) : json::copy(object);
    if (!substitute(state.object, at, path)) {
      return;
    }
    state.id = object_key(state.object);
    std::vector<ObjectProblem> problems = validate_object(state.object, at);
    if (!problems.empty()) {
      for (auto& problem : problems) {
        error(path, problem.position, state.id, problem.message);
      }
      return;
    }
    bool ok = apply_annotations(state.object, at, path, state, include == nullptr);
    if (include != nullptr) {
      apply_arguments(include->arguments, state);
    }
    if (!ok) {
      return;
    }
    if (include != nullptr) {
      include->objects->push_back(std::move(state));
    } else {
      result_.states.push_back(std::move(state));
    }
  }

  // Substitutes variables into `object` (variables.hpp) unless its annotation
  // kstate.io/substitute says disabled. False, with one error per problem, when a
  // reference cannot be substituted: the state is left out.
  bool substitute(json::Document& object, const YamlLocator& at, const std::string& path, const std::string& id = {}) {
    if (const json::Value* annotations = json::find_path(object, {"metadata", "annotations"});
        annotations != nullptr && annotations->IsObject()) {
      if (auto value = json::get_string(*annotations, substitute_annotation)) {
        const std::string setting(strings::trim(*value));
        if (setting == "disabled") {
          return true;
        }
        if (setting != "enabled") {
          error(path, at.child("metadata").child("annotations").child(substitute_annotation).position(),
                id.empty() ? object_key(object) : id,
                "annotation " + std::string(substitute_annotation) + ": unknown value \"" + setting +
                    "\", expected disabled or enabled" + did_you_mean(setting, {"disabled", "enabled"}));
          return false;
        }
      }
    }
    std::vector<VariableError> problems = substitute_variables(object, object.GetAllocator(), at, options_.variables);
    for (auto& problem : problems) {
      error(path, problem.position, id.empty() ? object_key(object) : id, std::move(problem.message));
    }
    return problems.empty();
  }

  static void apply_arguments(const Arguments& arguments, State& state) {
    state.function = arguments.function;
    if (arguments.strategy) {
      state.strategy = *arguments.strategy;
      state.strategy_given = true;
    }
    if (arguments.recreate) {
      state.recreate = *arguments.recreate;
    }
    if (arguments.propagation) {
      state.propagation = *arguments.propagation;
    }
    if (arguments.wait) {
      state.wait = *arguments.wait;
    }
    state.require.insert(state.require.end(), arguments.require.begin(), arguments.require.end());
    state.require_in.insert(state.require_in.end(), arguments.require_in.begin(), arguments.require_in.end());
    state.onchanges.insert(state.onchanges.end(), arguments.onchanges.begin(), arguments.onchanges.end());
    state.watch.insert(state.watch.end(), arguments.watch.begin(), arguments.watch.end());
  }

  // Reads the kstate.io/... and compatible annotations into the state. Returns false
  // (with errors) when a value is not understood.
  bool apply_annotations(const json::Value& object, const YamlLocator& at, const std::string& path, State& state,
                         bool function_from_annotation) {
    bool ok = apply_conventions(object, at, path, state);
    const json::Value* annotations = json::find_path(object, {"metadata", "annotations"});
    if (annotations == nullptr || !annotations->IsObject()) {
      return ok;
    }
    YamlLocator annotations_at = at.child("metadata").child("annotations");
    auto fail = [&](std::string_view key, std::string message) {
      error(path, annotations_at.child(key).position(), state.id, std::move(message));
      ok = false;
    };
    auto value_of = [&](std::string_view key) -> std::optional<std::string> {
      auto value = json::get_string(*annotations, key);
      return value ? std::optional<std::string>(strings::trim(*value)) : std::nullopt;
    };
    if (auto value = value_of(kStateAnnotation); value && function_from_annotation) {
      if (*value == "present") {
        state.function = Function::object_present;
      } else if (*value == "updated") {
        state.function = Function::object_updated;
      } else if (*value == "absent") {
        state.function = Function::object_absent;
      } else {
        fail(kStateAnnotation, "annotation " + std::string(kStateAnnotation) + ": unknown value \"" + *value +
                                   "\", expected present, updated or absent" +
                                   did_you_mean(*value, {"present", "updated", "absent"}));
      }
    }
    if (auto value = value_of(kStrategyAnnotation)) {
      if (auto strategy = parse_strategy(*value)) {
        state.strategy = *strategy;
        state.strategy_given = true;
      } else {
        fail(kStrategyAnnotation, "annotation " + std::string(kStrategyAnnotation) + ": unknown strategy \"" + *value +
                                      "\", expected apply, replace or create-only" + did_you_mean(*value, kStrategies));
      }
    }
    // "disabled" sets the flag; "enabled" is the default, said explicitly.
    auto disabled_annotation = [&](std::string_view key, bool& disabled) {
      if (auto value = value_of(key)) {
        if (*value == "disabled") {
          disabled = true;
        } else if (*value != "enabled") {
          fail(key, "annotation " + std::string(key) + ": unknown value \"" + *value +
                        "\", expected disabled or enabled" + did_you_mean(*value, {"disabled", "enabled"}));
        }
      }
    };
    disabled_annotation(kTakeoverAnnotation, state.takeover_disabled);
    auto boolean_annotation = [&](std::string_view key, auto&& set) {
      if (auto value = value_of(key)) {
        if (*value == "true") {
          set(true);
        } else if (*value == "false") {
          set(false);
        } else {
          fail(key, "annotation " + std::string(key) + ": expected \"true\" or \"false\", got \"" + *value + "\"");
        }
      }
    };
    boolean_annotation(kRecreateAnnotation, [&](bool value) { state.recreate = value; });
    boolean_annotation(kWaitAnnotation, [&](bool value) { state.wait.enabled = value; });
    if (auto value = value_of(ignore_fields_annotation)) {
      if (auto pointers = parse_ignore_fields(*value); pointers.ok()) {
        state.ignore_fields = std::move(*pointers);
      } else {
        fail(ignore_fields_annotation,
             "annotation " + std::string(ignore_fields_annotation) + ": " + pointers.error().message);
      }
    }
    if (auto value = value_of(kDependsOnAnnotation)) {
      std::string_view list = *value;
      while (!list.empty()) {
        std::size_t comma = list.find(',');
        std::string item(strings::trim(list.substr(0, comma)));
        if (!item.empty()) {
          state.require.push_back(std::move(item));
        }
        if (comma == std::string_view::npos) {
          break;
        }
        list.remove_prefix(comma + 1);
      }
    }
    return ok;
  }

  // Other tools' marks (conventions.hpp), as labels or annotations: addon-manager
  // modes, Flux's ssa/reconcile/prune, Helm's resource-policy, Argo CD's sync-options.
  // kstate.io/strategy, read after, wins over the strategy they imply.
  bool apply_conventions(const json::Value& object, const YamlLocator& at, const std::string& path, State& state) {
    auto strings_of = [&](const char* field) {
      StringMap map;
      const json::Value* found = json::find_path(object, {"metadata", field});
      if (found != nullptr && found->IsObject()) {
        for (const auto& member : found->GetObject()) {
          if (member.value.IsString()) {
            map.emplace(std::string(view(member.name)), std::string(view(member.value)));
          }
        }
      }
      return map;
    };
    const Conventions conventions = read_conventions(strings_of("labels"), strings_of("annotations"));
    for (const auto& problem : conventions.problems) {
      std::vector<std::string_view> expected(problem.expected.begin(), problem.expected.end());
      error(path, at.child("metadata").child(problem.label ? "labels" : "annotations").child(problem.key).position(),
            state.id, problem.message() + did_you_mean(problem.value, expected));
    }
    switch (conventions.management) {
      case Management::apply:
        break;
      case Management::create_only:
        state.strategy = Strategy::create_only;
        break;
      case Management::leave_alone:
        state.left_alone_by = conventions.management_mark;
        break;
    }
    state.prune_disabled = state.prune_disabled || conventions.prune_protected;
    state.takeover_disabled = state.takeover_disabled || conventions.keep_others_fields;
    return conventions.problems.empty();
  }

  // --------------------------------------------------------------------------------
  // State documents

  struct Argument {
    std::string_view name;
    const json::Value* value;
    YamlLocator at;       // the value
    TextPosition key_at;  // the argument's name
  };

  // What a state's arguments say, filled as each is read: the explicit arguments, and
  // where the object comes from (exactly one of an inline manifest, a manifest file, or
  // for object_absent the object's apiVersion/kind/name/namespace).
  struct StateArguments {
    Arguments parsed;
    const Argument* manifest = nullptr;
    const Argument* source = nullptr;
    const Argument* name_path = nullptr;  // present/updated's `name:` (MetalK8s): a manifest file
    std::map<std::string_view, const Argument*> absent_fields;
  };

  // One argument of a state function: the functions that take it and how its value is
  // read. The parser returns what is wrong with the value ("" when it is good). This one
  // table drives the accepted names, their order in messages and their reading.
  struct ArgumentRule {
    std::string_view name;
    unsigned functions;  // kPresent | kUpdated | kAbsent
    std::string (*parse)(const Argument& argument, const std::string& path, StateArguments& into);
  };

  static std::string read_requisite(const Argument& argument, const std::string& path, StateArguments& into) {
    std::string message;
    return parse_requisite(*argument.value, path, requisite_list(into.parsed, argument.name), message) ? "" : message;
  }
  static std::string read_absent_field(const Argument& argument, const std::string&, StateArguments& into) {
    if (!argument.value->IsString()) {
      return std::string("expected a string, not a ") + type_name(*argument.value);
    }
    into.absent_fields[argument.name] = &argument;
    return "";
  }

  static const std::vector<ArgumentRule>& argument_rules() {
    static const std::vector<ArgumentRule> rules = {
        {"manifest", kPresent | kUpdated | kAbsent,
         [](const Argument& argument, const std::string&, StateArguments& into) -> std::string {
           if (!argument.value->IsObject()) {
             return std::string("expected a Kubernetes object (mapping), not a ") + type_name(*argument.value);
           }
           into.manifest = &argument;
           return "";
         }},
        {"source", kPresent | kUpdated | kAbsent,
         [](const Argument& argument, const std::string&, StateArguments& into) -> std::string {
           if (!argument.value->IsString() || argument.value->GetStringLength() == 0) {
             return "expected a file path (string)";
           }
           into.source = &argument;
           return "";
         }},
        {"apiVersion", kAbsent, read_absent_field},
        {"kind", kAbsent, read_absent_field},
        {"name", kPresent | kUpdated | kAbsent,
         [](const Argument& argument, const std::string& path, StateArguments& into) -> std::string {
           if (into.parsed.function == Function::object_absent) {
             return read_absent_field(argument, path, into);
           }
           // MetalK8s: the manifest's path (when no manifest is given; else only a label).
           if (!argument.value->IsString() || argument.value->GetStringLength() == 0) {
             return "expected a manifest file path (string)";
           }
           into.name_path = &argument;
           return "";
         }},
        {"namespace", kAbsent, read_absent_field},
        {"require", kPresent | kUpdated | kAbsent, read_requisite},
        {"require_in", kPresent | kUpdated | kAbsent, read_requisite},
        {"onchanges", kPresent | kUpdated | kAbsent, read_requisite},
        {"watch", kPresent | kUpdated | kAbsent, read_requisite},
        {"wait", kPresent | kUpdated | kAbsent,
         [](const Argument& argument, const std::string&, StateArguments& into) -> std::string {
           Wait wait;
           std::string message;
           if (!parse_wait(*argument.value, wait, message)) {
             return message;
           }
           into.parsed.wait = wait;
           return "";
         }},
        {"strategy", kPresent | kUpdated,
         [](const Argument& argument, const std::string&, StateArguments& into) -> std::string {
           const json::Value& value = *argument.value;
           auto strategy = value.IsString() ? parse_strategy(view(value)) : std::nullopt;
           if (!strategy) {
             return "expected apply, replace or create-only" +
                    (value.IsString() ? did_you_mean(view(value), kStrategies) : std::string());
           }
           into.parsed.strategy = *strategy;
           return "";
         }},
        {"recreate", kPresent,
         [](const Argument& argument, const std::string&, StateArguments& into) -> std::string {
           if (!argument.value->IsBool()) {
             return std::string("expected true or false, not a ") + type_name(*argument.value);
           }
           into.parsed.recreate = argument.value->GetBool();
           return "";
         }},
        {"propagation", kPresent | kAbsent,
         [](const Argument& argument, const std::string&, StateArguments& into) -> std::string {
           const json::Value& value = *argument.value;
           if (!value.IsString() ||
               std::find(kPropagations.begin(), kPropagations.end(), view(value)) == kPropagations.end()) {
             return "expected Background, Foreground or Orphan" +
                    (value.IsString() ? did_you_mean(view(value), kPropagations) : std::string());
           }
           into.parsed.propagation = std::string(view(value));
           return "";
         }},
    };
    return rules;
  }

  static std::vector<std::string_view> arguments_of(Function function) {
    std::vector<std::string_view> names;
    for (const auto& rule : argument_rules()) {
      if ((rule.functions & function_bit(function)) != 0) {
        names.push_back(rule.name);
      }
    }
    return names;
  }

  // A state entry (`ID: {function: arguments}`) in four steps: its function, its
  // arguments as a list, each argument read by its rule, and the object it declares.
  void load_state_entry(std::string_view id_view, const json::Value& body, const YamlLocator& document_at,
                        const std::string& path, std::vector<std::string>& stack) {
    std::string id(id_view);
    TextPosition id_at = document_at.key_position(id);
    YamlLocator body_at = document_at.child(id);
    auto function = state_function(body, body_at, path, id, id_at);
    if (!function) {
      return;
    }
    std::string_view function_name = view(body.MemberBegin()->name);
    TextPosition function_at = body_at.key_position(function_name);
    bool ok = true;
    std::vector<Argument> arguments =
        argument_list(body.MemberBegin()->value, body_at.child(function_name), path, id, ok);
    StateArguments read;
    read.parsed.function = *function;
    ok = read_arguments(arguments, path, id, read) && ok;
    if (!ok) {
      return;
    }
    add_state_object(read, path, id, id_at, function_at, stack);
  }

  // Step 1: the one function the entry maps to its arguments (or an error, and none).
  std::optional<Function> state_function(const json::Value& body, const YamlLocator& body_at, const std::string& path,
                                         const std::string& id, TextPosition id_at) {
    const std::string functions_hint = "object_present, object_updated or object_absent";
    if (!body.IsObject() || body.MemberCount() == 0) {
      error(path, id_at, id,
            std::string("a state must map one function (") + functions_hint + ") to its arguments, not a " +
                (body.IsObject() ? "empty mapping" : type_name(body)));
      return std::nullopt;
    }
    if (body.MemberCount() > 1) {
      error(path, id_at, id, "a state ID holds one function; found " + std::to_string(body.MemberCount()));
      return std::nullopt;
    }
    std::string_view function_name = view(body.MemberBegin()->name);
    auto function = parse_function(function_name);
    if (!function) {
      std::string_view bare =
          function_name.substr(function_name.rfind('.') == std::string_view::npos ? 0 : function_name.rfind('.') + 1);
      error(path, body_at.key_position(function_name), id,
            "unknown function \"" + std::string(function_name) + "\", expected " + functions_hint +
                did_you_mean(bare, kFunctionNames));
    }
    return function;
  }

  // Step 2: the arguments, given as a mapping or as Salt's list of one-key mappings.
  // A malformed list item is reported and `ok` cleared; the others are still read.
  std::vector<Argument> argument_list(const json::Value& raw, const YamlLocator& raw_at, const std::string& path,
                                      const std::string& id, bool& ok) {
    std::vector<Argument> arguments;
    if (raw.IsObject()) {
      for (const auto& member : raw.GetObject()) {
        arguments.push_back({view(member.name), &member.value, raw_at.child(view(member.name)),
                             raw_at.key_position(view(member.name))});
      }
    } else if (raw.IsArray()) {
      for (rapidjson::SizeType i = 0; i < raw.Size(); ++i) {
        const json::Value& item = raw[i];
        YamlLocator item_at = raw_at.item(i);
        if (!item.IsObject() || item.MemberCount() != 1) {
          error(path, item_at.position(), id,
                "each argument in the list form must be a one-key mapping (- name: value)");
          ok = false;
          continue;
        }
        const auto& member = *item.MemberBegin();
        arguments.push_back({view(member.name), &member.value, item_at.child(view(member.name)),
                             item_at.key_position(view(member.name))});
      }
    } else if (!raw.IsNull()) {
      error(path, raw_at.position(), id,
            std::string("arguments must be a mapping or a list of one-key mappings, not a ") + type_name(raw));
      ok = false;
    }
    return arguments;
  }

  // Step 3: each argument read by its rule; every problem is reported (false if any).
  bool read_arguments(const std::vector<Argument>& arguments, const std::string& path, const std::string& id,
                      StateArguments& read) {
    const Function function = read.parsed.function;
    bool ok = true;
    std::set<std::string_view> seen;
    for (const auto& argument : arguments) {
      if (!seen.insert(argument.name).second) {
        error(path, argument.key_at, id, "argument \"" + std::string(argument.name) + "\" given twice");
        ok = false;
        continue;
      }
      const auto& rules = argument_rules();
      auto rule = std::find_if(rules.begin(), rules.end(), [&](const ArgumentRule& candidate) {
        return candidate.name == argument.name && (candidate.functions & function_bit(function)) != 0;
      });
      if (rule == rules.end()) {
        std::vector<std::string_view> allowed = arguments_of(function);
        error(path, argument.key_at, id,
              "unknown argument \"" + std::string(argument.name) + "\" for " + to_string(function) +
                  did_you_mean(argument.name, allowed) + "; accepted: " + strings::join(allowed, ", "));
        ok = false;
        continue;
      }
      std::string problem = rule->parse(argument, path, read);
      if (!problem.empty()) {
        error(path, argument.at.position(), id, std::string(argument.name) + ": " + problem);
        ok = false;
      }
    }
    return ok;
  }

  // Step 4: the object the state declares, from exactly one of its sources.
  void add_state_object(StateArguments& read, const std::string& path, const std::string& id, TextPosition id_at,
                        TextPosition function_at, std::vector<std::string>& stack) {
    const Function function = read.parsed.function;
    if (read.name_path != nullptr && read.manifest == nullptr && read.source == nullptr) {
      read.source = read.name_path;
    }
    int object_sources =
        (read.manifest != nullptr ? 1 : 0) + (read.source != nullptr ? 1 : 0) + (read.absent_fields.empty() ? 0 : 1);
    if (object_sources == 0) {
      error(path, function_at, id,
            std::string(to_string(function)) + " needs " +
                (function == Function::object_absent ? "manifest, source, or apiVersion/kind/name"
                                                     : "manifest, or source or name (a manifest file)"));
      return;
    }
    if (object_sources > 1) {
      error(path, function_at, id,
            "give only one of manifest, source" +
                std::string(function == Function::object_absent ? " or apiVersion/kind/name" : ""));
      return;
    }
    SourcePosition declared{path, id_at.line, id_at.column};
    if (read.manifest != nullptr) {
      add_declared_object(*read.manifest->value, read.manifest->at, path, id, declared, read.parsed);
    } else if (!read.absent_fields.empty()) {
      add_absent_by_name(read.absent_fields, path, id, declared, read.parsed, function_at);
    } else {
      include_source(*read.source, path, id, declared, read.parsed, stack);
    }
  }

  // A requisite's value: a reference or a list of them, each a state ID,
  // Kind/namespace/name, {module: ID} (Salt's form, the module is not checked) or
  // {sls: name} (every state of that state file, "sls:" + its real path).
  static bool parse_requisite(const json::Value& value, const std::string& path, std::vector<std::string>& out,
                              std::string& message) {
    message = "expected a state ID, Kind/namespace/name, or a list of them (or of {module: ID} or {sls: name})";
    if (value.IsString()) {
      out.emplace_back(view(value));
      return value.GetStringLength() > 0;
    }
    if (!value.IsArray()) {
      return false;
    }
    for (const auto& item : value.GetArray()) {
      if (item.IsString() && item.GetStringLength() > 0) {
        out.emplace_back(view(item));
      } else if (item.IsObject() && item.MemberCount() == 1 && item.MemberBegin()->value.IsString() &&
                 item.MemberBegin()->value.GetStringLength() > 0) {
        if (view(item.MemberBegin()->name) != "sls") {
          out.emplace_back(view(item.MemberBegin()->value));
          continue;
        }
        Result<std::string> file = resolve_state_file(view(item.MemberBegin()->value), path);
        if (!file.ok()) {
          message = "sls: " + file.error().message;
          return false;
        }
        out.push_back(std::string(sls_prefix) + stack_key(*file));
      } else {
        return false;
      }
    }
    return true;
  }

  // A wait's sleep or timeout: a number of seconds (30, "30", 2.5), or a Go duration
  // ("30s", "5m", "1h30m", "500ms") read by the same rule as the daemon's config.
  static bool parse_duration(const json::Value& value, double& seconds) {
    if (value.IsNumber()) {
      seconds = value.GetDouble();
      return seconds >= 0;
    }
    if (!value.IsString() || value.GetStringLength() == 0) {
      return false;
    }
    std::string_view text = view(value);
    if (text.find_first_not_of("0123456789.") == std::string_view::npos) {
      char* end = nullptr;
      const std::string number(text);
      seconds = std::strtod(number.c_str(), &end);
      return end == number.c_str() + number.size() && std::isfinite(seconds);
    }
    auto duration = kstate::parse_duration(text);
    if (!duration) {
      return false;
    }
    seconds = std::chrono::duration<double>(*duration).count();
    return true;
  }

  static bool parse_wait(const json::Value& value, Wait& wait, std::string& message) {
    if (value.IsBool()) {
      wait.enabled = value.GetBool();
      return true;
    }
    if (value.IsInt64()) {
      if (value.GetInt64() < 0 || value.GetInt64() > 1'000'000) {
        message = "attempts must be between 0 and 1000000";
        return false;
      }
      wait.enabled = true;
      wait.attempts = static_cast<int>(value.GetInt64());
      return true;
    }
    if (!value.IsObject()) {
      message = "expected true/false, a number of attempts, {attempts, sleep} or {timeout}";
      return false;
    }
    wait.enabled = true;
    for (const auto& member : value.GetObject()) {
      std::string_view key = view(member.name);
      if (key == "attempts") {
        if (!member.value.IsInt64() || member.value.GetInt64() < 0 || member.value.GetInt64() > 1'000'000) {
          message = "attempts must be a whole number between 0 and 1000000";
          return false;
        }
        wait.attempts = static_cast<int>(member.value.GetInt64());
      } else if (key == "sleep") {
        if (!parse_duration(member.value, wait.sleep_seconds)) {
          message = "sleep must be seconds or a duration such as 2s";
          return false;
        }
      } else if (key == "timeout") {
        if (!parse_duration(member.value, wait.timeout_seconds)) {
          message = "timeout must be seconds or a duration such as 5m";
          return false;
        }
      } else {
        message = "unknown key \"" + std::string(key) + "\"" + did_you_mean(key, {"attempts", "sleep", "timeout"}) +
                  "; accepted: attempts, sleep, timeout";
        return false;
      }
    }
    return true;
  }

  void add_declared_object(const json::Value& object, const YamlLocator& at, const std::string& path,
                           const std::string& id, const SourcePosition& declared, const Arguments& arguments) {
    State state;
    state.id = id;
    state.source = declared;
    state.from_state_document = true;
    state.object = json::copy(object);
    if (!substitute(state.object, at, path, id)) {
      return;
    }
    std::vector<ObjectProblem> problems = validate_object(state.object, at);
    for (auto& problem : problems) {
      error(path, problem.position, id, "manifest: " + problem.message);
    }
    if (!problems.empty() || !apply_annotations(state.object, at, path, state, false)) {
      return;
    }
    apply_arguments(arguments, state);
    result_.states.push_back(std::move(state));
  }

  void add_absent_by_name(const std::map<std::string_view, const Argument*>& fields, const std::string& path,
                          const std::string& id, const SourcePosition& declared, const Arguments& arguments,
                          TextPosition function_at) {
    for (std::string_view required : {"apiVersion", "kind", "name"}) {
      if (fields.count(required) == 0) {
        error(path, function_at, id,
              "object_absent by name needs apiVersion, kind and name (missing " + std::string(required) + ")");
        return;
      }
    }
    // The fields name an object: variables are substituted into them as text.
    std::map<std::string_view, std::string> values;
    bool substituted = true;
    for (auto [name, argument] : fields) {
      SubstitutedText text = substitute_text(view(*argument->value), options_.variables);
      for (const auto& problem : text.problems) {
        error(path, argument->at.position(), id, std::string(name) + ": " + problem.message());
        substituted = false;
      }
      values[name] = std::move(text.text);
    }
    if (!substituted) {
      return;
    }
    json::Document object;
    object.SetObject();
    auto& allocator = object.GetAllocator();
    json::set_string(object, "apiVersion", values.at("apiVersion"), allocator);
    json::set_string(object, "kind", values.at("kind"), allocator);
    json::Value& metadata = json::ensure_object(object, "metadata", allocator);
    json::set_string(metadata, "name", values.at("name"), allocator);
    if (auto found = values.find("namespace"); found != values.end()) {
      json::set_string(metadata, "namespace", found->second, allocator);
    }
    // Problems are reported at the argument that holds the bad value.
    for (auto& problem : validate_object(object, YamlLocator())) {
      TextPosition at = function_at;
      for (auto [name, argument] : fields) {
        if (problem.field == name || (problem.field == "metadata.name" && name == "name") ||
            (problem.field == "metadata.namespace" && name == "namespace")) {
          at = argument->at.position();
        }
      }
      error(path, at, id, problem.message);
      return;
    }
    State state;
    state.id = id;
    state.source = declared;
    state.from_state_document = true;
    apply_arguments(arguments, state);
    state.object = std::move(object);
    result_.states.push_back(std::move(state));
  }

  void include_source(const Argument& source, const std::string& path, const std::string& id,
                      const SourcePosition& declared, const Arguments& arguments, std::vector<std::string>& stack) {
    if (!options_.follow_sources) {
      error(path, source.at.position(), id, "source: includes are disabled here");
      return;
    }
    std::string relative(view(*source.value));
    fs::path target = fs::path(relative).is_absolute() ? fs::path(relative) : fs::path(path).parent_path() / relative;
    std::string target_path = target.string();
    std::string key = stack_key(target_path);
    TextPosition at = source.at.position();
    if (std::find(stack.begin(), stack.end(), key) != stack.end()) {
      std::string chain;
      for (const auto& file : stack) {
        chain += file + " -> ";
      }
      error(path, at, id, "source: include cycle: " + chain + key);
      return;
    }
    if (static_cast<int>(stack.size()) > kMaxIncludeDepth) {
      error(path, at, id, "source: includes nested deeper than " + std::to_string(kMaxIncludeDepth) + " files");
      return;
    }
    FileContent content = read_file(target_path, options_.limits.max_file_bytes);
    if (!content.error.empty()) {
      error(path, at, id, "source: " + target_path + ": " + content.error);
      return;
    }
    record_file(target_path, content.text);
    result_.included_by[target_path].insert(path);
    std::size_t errors_before = result_.errors.size();
    std::vector<State> objects;
    IncludeContext include{id, arguments, &objects};
    stack.push_back(key);
    load_documents(content.text, target_path, stack, &include);
    stack.pop_back();
    if (result_.errors.size() != errors_before) {
      result_.failed_files.insert(path);  // the including file's state is incomplete
    }
    if (objects.empty()) {
      if (result_.errors.size() == errors_before) {
        error(path, at, id, "source: " + target_path + " holds no Kubernetes object");
      }
      return;
    }
    bool single = objects.size() == 1;
    for (auto& state : objects) {
      state.id = single ? id : id + "/" + state.id;
      state.parent_id = id;
      state.from_state_document = true;
      if (single) {
        state.source = declared;
      }
      result_.states.push_back(std::move(state));
    }
  }

  LoadResult& result_;
  const LoadOptions& options_;
  std::set<std::string> included_;  // real paths of the files `include:` loaded
};

// Group of an apiVersion ("apps/v1" -> "apps", "v1" -> "").
std::string_view group_of(std::string_view api_version) {
  std::size_t slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
}

// Identity of the object a state concerns, independent of the version it is written in.
std::string object_identity(const json::Value& object) {
  std::string identity(group_of(json::get_string(object, "apiVersion").value_or("")));
  identity += '/';
  identity += object_key(object);
  return identity;
}

// The same state loaded twice: a state file included by two files, or one the walk
// loads that another includes.
bool same_declaration(const State& first, const State& second) {
  if (first.function != second.function || first.source.line != second.source.line ||
      first.source.column != second.source.column || first.object != second.object) {
    return false;
  }
  if (first.source.file == second.source.file) {
    return true;
  }
  std::error_code error;
  return fs::equivalent(first.source.file, second.source.file, error) && !error;
}

void check_result(LoadResult& result, const LoadOptions& options) {
  // Before IDs are compared: the kinds known here (built in, or CRDs of this set).
  std::vector<LoadError> dropped = drop_cluster_scoped_namespaces(result.states);
  result.warnings.insert(result.warnings.end(), dropped.begin(), dropped.end());
  if (options.check_references) {
    std::vector<LoadError> errors = check_states(result.states, result.failed_files);
    result.errors.insert(result.errors.end(), errors.begin(), errors.end());
  }
}

}  // namespace

Result<std::string> resolve_state_file(std::string_view name, const std::string& from_file) {
  const fs::path folder = fs::path(from_file).parent_path();
  auto exists = [](const fs::path& path) {
    std::error_code ignored;
    return fs::is_regular_file(path, ignored);
  };
  const bool salt_url = name.starts_with("salt://");
  const bool is_path =
      !salt_url && (name.find('/') != std::string_view::npos || name.ends_with(".sls") || has_manifest_extension(name));
  if (is_path) {
    fs::path path = fs::path(name).is_absolute() ? fs::path(name) : folder / fs::path(name);
    if (!exists(path)) {
      return Error(ErrorKind::invalid_input, path.lexically_normal().string() + ": no such file");
    }
    return path.lexically_normal().string();
  }
  // The candidates under a root folder, and the roots to try.
  std::vector<fs::path> relative;
  std::vector<fs::path> roots;
  std::string_view rest = name;
  if (salt_url) {
    rest.remove_prefix(std::string_view("salt://").size());
    relative.emplace_back(rest);
  } else {
    std::size_t dots = 0;
    while (dots < rest.size() && rest[dots] == '.') {
      ++dots;
    }
    rest.remove_prefix(dots);
    if (rest.empty() || rest.find("..") != std::string_view::npos || rest.back() == '.') {
      return Error(ErrorKind::invalid_input, "\"" + std::string(name) + "\" is not an SLS name (a.b.c or .c)");
    }
    std::string as_path(rest);
    std::replace(as_path.begin(), as_path.end(), '.', '/');
    for (const char* suffix : {".sls", "/init.sls", ".yaml", ".yml"}) {
      relative.emplace_back(as_path + suffix);
    }
    if (dots > 0) {
      fs::path root = folder;
      for (std::size_t up = 1; up < dots; ++up) {
        root = root.parent_path();
      }
      roots.push_back(root);
    }
  }
  if (roots.empty()) {
    // The nearest folder upwards that has it: the state tree's root (Salt's file root).
    fs::path root = fs::absolute(folder.empty() ? fs::path(".") : folder).lexically_normal();
    while (true) {
      roots.push_back(root);
      if (!root.has_relative_path()) {
        break;
      }
      root = root.parent_path();
    }
  }
  for (const auto& root : roots) {
    for (const auto& candidate : relative) {
      fs::path path = (root / candidate).lexically_normal();
      if (exists(path)) {
        return path.string();
      }
    }
  }
  std::string tried;
  for (const auto& candidate : relative) {
    tried += (tried.empty() ? "" : ", ") + candidate.string();
  }
  return Error(ErrorKind::invalid_input,
               "cannot find \"" + std::string(name) + "\": no " + tried + " under " +
                   (roots.size() == 1 ? roots.front().string() : roots.front().string() + " or a folder above it"));
}

std::vector<LoadError> check_states(std::vector<State>& states, std::set<std::string>& failed_files) {
  std::vector<LoadError> errors;
  std::vector<bool> keep(states.size(), true);
  auto reject = [&](std::size_t index, std::string message) {
    errors.push_back({states[index].source, states[index].id, std::move(message)});
    failed_files.insert(states[index].source.file);
    keep[index] = false;
  };
  // Keyed by views of the states' IDs and of `identities`, which outlive the maps (the
  // states are not moved before the end): no string copied per state.
  std::vector<std::string> identities(states.size());
  std::unordered_map<std::string_view, std::size_t> by_id;
  std::unordered_map<std::string_view, std::size_t> by_object;
  by_id.reserve(states.size());
  by_object.reserve(states.size());
  for (std::size_t i = 0; i < states.size(); ++i) {
    State& state = states[i];
    auto [existing_id, inserted] = by_id.emplace(state.id, i);
    if (!inserted) {
      const State& first = states[existing_id->second];
      if (same_declaration(first, state)) {
        keep[i] = false;  // one state file included by several others (Salt loads it once)
        continue;
      }
      reject(i, "duplicate state ID (first declared at " + first.source.to_string() + ")");
      continue;
    }
    const json::Value* name = json::find_path(state.object, {"metadata", "name"});
    if (name == nullptr || !name->IsString()) {
      continue;  // generateName: every apply makes a new object
    }
    if (state.function == Function::object_updated) {
      continue;  // adjusts an object declared elsewhere (MetalK8s' coredns-replicas pattern)
    }
    identities[i] = object_identity(state.object);
    auto [existing_object, fresh] = by_object.emplace(identities[i], i);
    if (fresh) {
      continue;
    }
    std::size_t first_index = existing_object->second;
    const State& first = states[first_index];
    if (first.function == state.function && first.object == state.object) {
      // Identical duplicate: keep the state whose ID a person wrote.
      if (state.from_state_document && !first.from_state_document) {
        keep[first_index] = false;
        by_id.erase(first.id);
        existing_object->second = i;
      } else {
        keep[i] = false;
        by_id.erase(existing_id);
      }
      continue;
    }
    std::string what = first.function != state.function
                           ? std::string("with a different function (") + to_string(first.function) + " there, " +
                                 to_string(state.function) + " here)"
                           : std::string("with different content");
    reject(i, object_key(state.object) + " is also declared by state " + first.id + " at " + first.source.to_string() +
                  ", " + what);
  }
  // Names a `require` may use: state IDs, include parents, and Kind/namespace/name.
  // Only needed when some state requires another: most sets have no `require`.
  auto requisites_of = [](const State& state) {
    return std::array<const std::vector<std::string>*, 4>{&state.require, &state.require_in, &state.onchanges,
                                                          &state.watch};
  };
  const bool any_require = std::any_of(states.begin(), states.end(), [&](const State& state) {
    auto lists = requisites_of(state);
    return std::any_of(lists.begin(), lists.end(), [](const auto* list) { return !list->empty(); });
  });
  std::unordered_set<std::string> known;
  for (std::size_t i = 0; any_require && i < states.size(); ++i) {
    if (!keep[i]) {
      continue;
    }
    known.insert(states[i].id);
    known.insert(object_key(states[i].object));
    if (!states[i].parent_id.empty()) {
      known.insert(states[i].parent_id);
    }
    if (!states[i].sls_file.empty()) {
      known.insert(std::string(sls_prefix) + states[i].sls_file);
    }
  }
  for (std::size_t i = 0; any_require && i < states.size(); ++i) {
    if (!keep[i]) {
      continue;
    }
    const char* const names[] = {"requires", "require_in names", "onchanges names", "watches"};
    auto lists = requisites_of(states[i]);
    for (std::size_t list = 0; list < lists.size() && keep[i]; ++list) {
      for (const auto& required : *lists[list]) {
        if (known.count(required) > 0) {
          continue;
        }
        if (required.starts_with(sls_prefix)) {
          reject(i, std::string(names[list]) + " every state of " + required.substr(sls_prefix.size()) +
                        ", which declares none that loaded (is it included?)");
          break;
        }
        std::vector<std::string_view> candidates(known.begin(), known.end());
        reject(i, std::string(names[list]) + " \"" + required +
                      "\", which is not a state ID or an object in the manifests" + did_you_mean(required, candidates));
        break;
      }
    }
  }
  std::vector<State> kept;
  kept.reserve(states.size());
  for (std::size_t i = 0; i < states.size(); ++i) {
    if (keep[i]) {
      kept.push_back(std::move(states[i]));
    }
  }
  states = std::move(kept);
  return errors;
}

std::vector<std::string> list_manifest_files(const std::vector<std::string>& paths, std::vector<LoadError>& errors) {
  std::vector<std::string> files;
  for (auto& listed : list_manifest_files_with_stat(paths, errors)) {
    files.push_back(std::move(listed.path));
  }
  return files;
}

std::vector<ListedFile> list_manifest_files_with_stat(const std::vector<std::string>& paths,
                                                      std::vector<LoadError>& errors) {
  std::vector<ListedFile> files;
  std::set<fs::path> visited_directories;
  // The same file reached twice (two links to one target) is known by its device and
  // inode: one stat per file, where resolving its canonical path took one per folder
  // on the way (the daemon lists the whole tree on every resync).
  std::set<std::pair<dev_t, ino_t>> seen_files;
  std::set<std::string> seen_unreadable;
  for (const auto& path : paths) {
    std::error_code error;
    fs::file_status status = fs::status(path, error);
    if (error || !fs::exists(status)) {
      errors.push_back({{path, 0, 0}, {}, "no such file or directory"});
      continue;
    }
    std::vector<FoundFile> found;
    if (fs::is_directory(status)) {
      walk_directory(path, visited_directories, found, errors);
      std::sort(found.begin(), found.end(), [](const FoundFile& a, const FoundFile& b) { return a.path < b.path; });
    } else {
      FoundFile file{path, {}, {}};
      if (::stat(path.c_str(), &file.target) == 0 && ::lstat(path.c_str(), &file.link) == 0) {
        found.push_back(std::move(file));
      } else if (seen_unreadable.insert(path).second) {
        files.push_back({path, false, {}, {}});
      }
    }
    for (auto& file : found) {
      if (seen_files.insert(file.identity()).second) {
        files.push_back({std::move(file.path), true, file.link, file.target});
      }
    }
  }
  return files;
}

// Files load independently (each with its own Loader), on several threads, and are
// merged in file order: the result is the same as loading them one after another.
struct BackgroundLoad::Shared {
  LoadOptions options;
  std::vector<std::string> files;
  std::vector<LoadError> walk_errors;
  std::vector<LoadResult> per_file;
  std::atomic<std::size_t> next_file{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;

  void load_some() {
    try {
      for (std::size_t i = next_file++; i < files.size(); i = next_file++) {
        Loader loader(per_file[i], options);
        loader.load_file(files[i]);
      }
    } catch (...) {
      std::lock_guard lock(failure_mutex);
      failure = std::current_exception();
    }
  }
};

BackgroundLoad::BackgroundLoad(const std::vector<std::string>& paths, const LoadOptions& options, int threads)
    : shared_(std::make_shared<Shared>()) {
  shared_->options = options;
  if (shared_->options.quotable_paths.empty()) {
    shared_->options.quotable_paths = paths;  // the folders and files given
  }
  shared_->files = list_manifest_files(paths, shared_->walk_errors);
  shared_->per_file.resize(shared_->files.size());
  std::size_t count = std::min(static_cast<std::size_t>(std::max(threads, 0)), shared_->files.size());
  for (std::size_t t = 0; t < count; ++t) {
    threads_.emplace_back([shared = shared_] { shared->load_some(); });
  }
}

BackgroundLoad::~BackgroundLoad() {
  shared_->next_file = shared_->files.size();  // no new files; the ones being read finish
  for (auto& thread : threads_) {
    if (thread.joinable()) {
      thread.join();
    }
  }
}

LoadResult BackgroundLoad::finish() {
  shared_->load_some();
  for (auto& thread : threads_) {
    thread.join();
  }
  threads_.clear();
  if (shared_->failure) {
    std::rethrow_exception(shared_->failure);
  }
  LoadResult result;
  for (auto& walk_error : shared_->walk_errors) {
    result.failed_files.insert(walk_error.position.file);
    result.errors.push_back(std::move(walk_error));
  }
  for (auto& part : shared_->per_file) {
    for (auto& state : part.states) {
      result.states.push_back(std::move(state));
    }
    for (auto& error : part.errors) {
      result.errors.push_back(std::move(error));
    }
    result.failed_files.merge(part.failed_files);
    for (auto& file : part.files) {
      // A file a `source:` of an earlier file already read is listed once, where it
      // was first read (as loading in order does).
      if (result.file_hashes.emplace(file, part.file_hashes[file]).second) {
        result.files.push_back(std::move(file));
      }
    }
    for (auto& [included, by] : part.included_by) {
      result.included_by[included].merge(by);
    }
  }
  check_result(result, shared_->options);
  return result;
}

LoadResult load_paths(const std::vector<std::string>& paths, const LoadOptions& options) {
  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  BackgroundLoad load(paths, options, std::max(threads, 1) - 1);  // the calling thread is one of them
  return load.finish();
}

LoadResult load_file(const std::string& path, const LoadOptions& options) {
  LoadResult result;
  Loader loader(result, options);
  loader.load_file(path);
  check_result(result, options);
  return result;
}

LoadResult load_text(std::string_view text, const std::string& path, const LoadOptions& options) {
  LoadResult result;
  Loader loader(result, options);
  loader.load_text(text, path);
  check_result(result, options);
  return result;
}

}  // namespace kstate::manifests
