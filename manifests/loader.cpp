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
#include "manifests/file_names.hpp"
#include "manifests/object_validation.hpp"

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
constexpr std::string_view kPruneAnnotation = "kstate.io/prune";
constexpr std::string_view kRecreateAnnotation = "kstate.io/recreate";
constexpr std::string_view kTakeoverAnnotation = "kstate.io/takeover";
constexpr std::string_view kWaitAnnotation = "kstate.io/wait";
constexpr std::string_view kDependsOnAnnotation = "kstate.io/depends-on";
constexpr std::string_view kAddonManagerAnnotation = "addonmanager.kubernetes.io/mode";
constexpr std::string_view kFluxPruneAnnotation = "kustomize.toolkit.fluxcd.io/prune";
constexpr int kMaxIncludeDepth = 16;

const std::vector<std::string_view> kFunctionNames = {"object_present", "object_updated", "object_absent"};
const std::vector<std::string_view> kPropagations = {"Background", "Foreground", "Orphan"};
const std::vector<std::string_view> kStrategies = {"apply", "replace", "create-only"};

std::vector<std::string_view> arguments_of(Function function) {
  switch (function) {
    case Function::object_present:
      return {"manifest", "source", "require", "wait", "strategy", "recreate", "propagation"};
    case Function::object_updated:
      return {"manifest", "source", "require", "wait", "strategy"};
    case Function::object_absent:
      return {"manifest", "source", "apiVersion", "kind", "name", "namespace", "require", "wait", "propagation"};
  }
  return {};
}

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
};

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
      error(path, yaml_error.position, {}, yaml_error.message);
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
      load_state_entry(view(member.name), member.value, document.locator, path, stack);
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
    state.id = object_key(object);
    state.source = {path, at.position().line, at.position().column};
    std::vector<ObjectProblem> problems = validate_object(object, at);
    if (!problems.empty()) {
      for (auto& problem : problems) {
        error(path, problem.position, state.id, problem.message);
      }
      return;
    }
    bool ok = apply_annotations(object, at, path, state, include == nullptr);
    if (include != nullptr) {
      apply_arguments(include->arguments, state);
    }
    if (!ok) {
      return;
    }
    if (owner != nullptr) {
      state.object = std::move(*owner);
    } else {
      state.object = json::copy(object);
    }
    if (include != nullptr) {
      include->objects->push_back(std::move(state));
    } else {
      result_.states.push_back(std::move(state));
    }
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
  }

  // Reads the kstate.io/... and compatible annotations into the state. Returns false
  // (with errors) when a value is not understood.
  bool apply_annotations(const json::Value& object, const YamlLocator& at, const std::string& path, State& state,
                         bool function_from_annotation) {
    const json::Value* annotations = json::find_path(object, {"metadata", "annotations"});
    if (annotations == nullptr || !annotations->IsObject()) {
      return true;
    }
    YamlLocator annotations_at = at.child("metadata").child("annotations");
    bool ok = true;
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
    if (auto value = value_of(kAddonManagerAnnotation)) {
      if (*value == "EnsureExists") {
        state.strategy = Strategy::create_only;
      } else if (*value == "Reconcile") {
        state.strategy = Strategy::apply;
      } else {
        fail(kAddonManagerAnnotation, "annotation " + std::string(kAddonManagerAnnotation) + ": unknown value \"" +
                                          *value + "\", expected EnsureExists or Reconcile" +
                                          did_you_mean(*value, {"EnsureExists", "Reconcile"}));
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
    for (std::string_view key : {kPruneAnnotation, kFluxPruneAnnotation}) {
      disabled_annotation(key, state.prune_disabled);
    }
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

  // --------------------------------------------------------------------------------
  // State documents

  struct Argument {
    std::string_view name;
    const json::Value* value;
    YamlLocator at;       // the value
    TextPosition key_at;  // the argument's name
  };

  void load_state_entry(std::string_view id_view, const json::Value& body, const YamlLocator& document_at,
                        const std::string& path, std::vector<std::string>& stack) {
    std::string id(id_view);
    TextPosition id_at = document_at.key_position(id);
    YamlLocator body_at = document_at.child(id);
    const std::string functions_hint = "object_present, object_updated or object_absent";
    if (!body.IsObject() || body.MemberCount() == 0) {
      error(path, id_at, id,
            std::string("a state must map one function (") + functions_hint + ") to its arguments, not a " +
                (body.IsObject() ? "empty mapping" : type_name(body)));
      return;
    }
    if (body.MemberCount() > 1) {
      error(path, id_at, id, "a state ID holds one function; found " + std::to_string(body.MemberCount()));
      return;
    }
    const auto& function_member = *body.MemberBegin();
    std::string_view function_name = view(function_member.name);
    TextPosition function_at = body_at.key_position(function_name);
    auto function = parse_function(function_name);
    if (!function) {
      std::string_view bare =
          function_name.substr(function_name.rfind('.') == std::string_view::npos ? 0 : function_name.rfind('.') + 1);
      error(path, function_at, id,
            "unknown function \"" + std::string(function_name) + "\", expected " + functions_hint +
                did_you_mean(bare, kFunctionNames));
      return;
    }
    // Arguments: a mapping, or Salt's list of one-key mappings.
    std::vector<Argument> arguments;
    const json::Value& raw = function_member.value;
    YamlLocator raw_at = body_at.child(function_name);
    bool ok = true;
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
      return;
    }
    Arguments parsed;
    parsed.function = *function;
    const json::Value* manifest = nullptr;
    YamlLocator manifest_at;
    const Argument* source = nullptr;
    std::map<std::string_view, const Argument*> absent_fields;
    std::set<std::string_view> seen;
    std::vector<std::string_view> allowed = arguments_of(*function);
    for (const auto& argument : arguments) {
      if (!seen.insert(argument.name).second) {
        error(path, argument.key_at, id, "argument \"" + std::string(argument.name) + "\" given twice");
        ok = false;
        continue;
      }
      if (std::find(allowed.begin(), allowed.end(), argument.name) == allowed.end()) {
        error(path, argument.key_at, id,
              "unknown argument \"" + std::string(argument.name) + "\" for " + to_string(*function) +
                  did_you_mean(argument.name, allowed) + "; accepted: " + strings::join(allowed, ", "));
        ok = false;
        continue;
      }
      const json::Value& value = *argument.value;
      auto fail = [&](std::string message) {
        error(path, argument.at.position(), id, std::string(argument.name) + ": " + message);
        ok = false;
      };
      if (argument.name == "manifest") {
        if (!value.IsObject()) {
          fail(std::string("expected a Kubernetes object (mapping), not a ") + type_name(value));
        } else {
          manifest = &value;
          manifest_at = argument.at;
        }
      } else if (argument.name == "source") {
        if (!value.IsString() || value.GetStringLength() == 0) {
          fail("expected a file path (string)");
        } else {
          source = &argument;
        }
      } else if (argument.name == "apiVersion" || argument.name == "kind" || argument.name == "name" ||
                 argument.name == "namespace") {
        if (!value.IsString()) {
          fail(std::string("expected a string, not a ") + type_name(value));
        } else {
          absent_fields[argument.name] = &argument;
        }
      } else if (argument.name == "require") {
        if (!parse_require(value, parsed.require)) {
          fail("expected a state ID, Kind/namespace/name, or a list of them (or of {module: ID} mappings)");
        }
      } else if (argument.name == "wait") {
        Wait wait;
        std::string message;
        if (!parse_wait(value, wait, message)) {
          fail(message);
        } else {
          parsed.wait = wait;
        }
      } else if (argument.name == "strategy") {
        auto strategy = value.IsString() ? parse_strategy(view(value)) : std::nullopt;
        if (!strategy) {
          fail("expected apply, replace or create-only" +
               (value.IsString() ? did_you_mean(view(value), kStrategies) : std::string()));
        } else {
          parsed.strategy = *strategy;
        }
      } else if (argument.name == "recreate") {
        if (!value.IsBool()) {
          fail(std::string("expected true or false, not a ") + type_name(value));
        } else {
          parsed.recreate = value.GetBool();
        }
      } else if (argument.name == "propagation") {
        if (!value.IsString() ||
            std::find(kPropagations.begin(), kPropagations.end(), view(value)) == kPropagations.end()) {
          fail("expected Background, Foreground or Orphan" +
               (value.IsString() ? did_you_mean(view(value), kPropagations) : std::string()));
        } else {
          parsed.propagation = std::string(view(value));
        }
      }
    }
    int object_sources = (manifest != nullptr ? 1 : 0) + (source != nullptr ? 1 : 0) + (absent_fields.empty() ? 0 : 1);
    if (ok && object_sources == 0) {
      error(path, function_at, id,
            std::string(to_string(*function)) + " needs " +
                (*function == Function::object_absent ? "manifest, source, or apiVersion/kind/name"
                                                      : "manifest or source"));
      return;
    }
    if (ok && object_sources > 1) {
      error(path, function_at, id,
            "give only one of manifest, source" +
                std::string(*function == Function::object_absent ? " or apiVersion/kind/name" : ""));
      return;
    }
    if (!ok) {
      return;
    }
    SourcePosition declared{path, id_at.line, id_at.column};
    if (manifest != nullptr) {
      add_declared_object(*manifest, manifest_at, path, id, declared, parsed);
    } else if (!absent_fields.empty()) {
      add_absent_by_name(absent_fields, path, id, declared, parsed, function_at);
    } else {
      include_source(*source, path, id, declared, parsed, stack);
    }
  }

  static bool parse_require(const json::Value& value, std::vector<std::string>& out) {
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
      } else if (item.IsObject() && item.MemberCount() == 1 && item.MemberBegin()->value.IsString()) {
        out.emplace_back(view(item.MemberBegin()->value));  // Salt: {module: id}
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
    std::vector<ObjectProblem> problems = validate_object(object, at);
    for (auto& problem : problems) {
      error(path, problem.position, id, "manifest: " + problem.message);
    }
    if (!problems.empty()) {
      return;
    }
    State state;
    state.id = id;
    state.source = declared;
    state.from_state_document = true;
    if (!apply_annotations(object, at, path, state, false)) {
      return;
    }
    apply_arguments(arguments, state);
    state.object = json::copy(object);
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
    json::Document object;
    object.SetObject();
    auto& allocator = object.GetAllocator();
    json::set_string(object, "apiVersion", view(*fields.at("apiVersion")->value), allocator);
    json::set_string(object, "kind", view(*fields.at("kind")->value), allocator);
    json::Value& metadata = json::ensure_object(object, "metadata", allocator);
    json::set_string(metadata, "name", view(*fields.at("name")->value), allocator);
    if (auto found = fields.find("namespace"); found != fields.end()) {
      json::set_string(metadata, "namespace", view(*found->second->value), allocator);
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
  const bool any_require =
      std::any_of(states.begin(), states.end(), [](const State& state) { return !state.require.empty(); });
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
  }
  for (std::size_t i = 0; any_require && i < states.size(); ++i) {
    if (!keep[i]) {
      continue;
    }
    for (const auto& required : states[i].require) {
      if (known.count(required) == 0) {
        std::vector<std::string_view> candidates(known.begin(), known.end());
        reject(i, "requires \"" + required + "\", which is not a state ID or an object in the manifests" +
                      did_you_mean(required, candidates));
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
