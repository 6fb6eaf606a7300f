// Loading manifests: files and directories -> ordered States plus exact, per-problem
// errors. This is the one entry point the CLI (`kstate apply|test PATH...`) and the
// daemon (full scans and single-file reloads) use, so both see the same states, the
// same IDs and the same messages.
//
// What is loaded
//  - A directory is walked recursively; files named *.yaml, *.yml or *.json are loaded
//    in lexical (byte) order of their full paths. Skipped: names starting with "."
//    (dotfiles, dot-directories, the ConfigMap-volume `..data` / `..2024_...` entries:
//    the volume's visible `key -> ..data/key` symlinks are what is read, so every key is
//    loaded once and always from the current generation), editor leftovers (`*~`,
//    `*.swp`, `*.swo`, `*.swx`, `#*#`, vim's `4913`), and anything that is not a regular
//    file after following symlinks. Symlinks are followed; a file or directory reached
//    twice (symlink loops, two links to one target) is loaded once.
//  - A path given explicitly is loaded whatever its extension.
//  - Each file holds YAML documents (`---`) or JSON; empty documents are ignored.
//    YAML becomes JSON exactly as kubectl reads it (see yaml_to_json.hpp).
//
// Documents
//  - A document with top-level `apiVersion` and `kind` is a Kubernetes object. `kind:
//    List` (and any `*List` kind with an `items` array) is expanded: each item is its
//    own state. The state is object_present with ID `Kind/namespace/name` (`Kind/name`
//    when the object has no namespace; `generateName` stands in for a missing name),
//    unless annotations say otherwise:
//      kstate.io/state: present|updated|absent    kstate.io/strategy: apply|replace|create-only
//      kstate.io/prune: disabled                   kstate.io/recreate: "true"
//      kstate.io/wait: "true"                      kstate.io/depends-on: "id, Kind/ns/name, ..."
//      addonmanager.kubernetes.io/mode: EnsureExists (-> create-only) | Reconcile (-> apply)
//      kustomize.toolkit.fluxcd.io/prune: disabled (-> prune disabled)
//    kstate.io/strategy wins over the addon-manager mode.
//  - Any other mapping is a Salt-style state document: each top-level key is a state ID
//    mapping one function (object_present | object_updated | object_absent, optionally
//    prefixed `metalk8s_kubernetes.` or `kubernetes.`) to its arguments, given as a
//    mapping or as Salt's list of one-key mappings:
//      manifest: {...}            the object (all functions)
//      source: path.yaml          file relative to the including file; may hold many
//                                 objects: one object -> the state keeps its ID; several
//                                 -> IDs `<id>/<Kind/namespace/name>`; every such state has
//                                 parent_id = <id>, and `require: [<id>]` means all of them.
//                                 State documents inside an included file keep their IDs.
//                                 Include cycles are errors.
//      name: path.yaml            (object_present, object_updated) as MetalK8s writes it:
//                                 the manifest's path, like source: (only a label when a
//                                 manifest is given)
//      apiVersion, kind, name, namespace   (object_absent only) the object to delete
//      require: id | [id | Kind/ns/name | {module: id} | {sls: name}]   and the other
//      Salt requisites, written the same way: require_in (the states named require this
//      one), onchanges (run only when one of them changed something), watch (like
//      require; when one changed, a Deployment, DaemonSet or StatefulSet is restarted as
//      `kubectl rollout restart` does)   wait: bool | attempts |
//      {attempts, sleep} | {timeout}   strategy: apply|replace|create-only (present,
//      updated)   recreate: bool (present)   propagation: Background|Foreground|Orphan
//      (present, absent). Annotations on the manifest apply where no argument is given.
//    A top-level `include:` (a list of SLS names or paths, resolve_state_file) loads
//    those state files, each once; their states keep their IDs.
//  - kustomize build files (`apiVersion: kustomize.config.k8s.io/...`, or a
//    kustomization.yaml without apiVersion) get one clear error; kstate does not run
//    kustomize.
//
// Checks before anything is sent: apiVersion, kind and metadata.name (or generateName)
// present and well-formed (DNS-1123 subdomain; labels for Namespace names and DNS-1035
// for Services; path segments for RBAC kinds), namespace a DNS-1123 label; unknown
// functions, arguments and annotation values rejected with a "did you mean"
// suggestion; duplicate state IDs; the same object (group, kind, namespace, name)
// declared twice with different content or functions; `require` naming nothing known.
// Identical duplicates (same object, same content, same function: typically a file in
// the watched directory that a state document also includes by `source:`) are not an
// error: the state from a state document is kept (its ID is the one people `require`),
// else the first in load order.
//
// Errors never stop other files (or other documents of the same file, except after a
// YAML syntax error) from loading: a state with an error is left out, and its file is
// listed in `failed_files` so that prune can be held back.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "manifests/state.hpp"
#include "manifests/variables.hpp"
#include "manifests/yaml_to_json.hpp"

namespace kstate::manifests {

struct LoadError {
  SourcePosition position;
  std::string state_id;  // empty when the problem is not tied to a state
  std::string message;
  // "path:line:column: state ID: message", or "path:line:column: message" without an
  // ID; line and column are left out when unknown ("path: message").
  std::string to_string() const;
};

struct LoadLimits {
  // Largest file read. Bundles of CRDs (e.g. prometheus-operator's) reach a few MiB.
  std::size_t max_file_bytes = 32 * 1024 * 1024;
  YamlLimits yaml;  // per document: size 3 MiB, nesting 256, alias expansion 100,000 nodes
};

struct LoadOptions {
  LoadLimits limits;
  // Cross-state checks (duplicate IDs, duplicate objects, `require` targets). The
  // daemon turns them off when reloading one file, merges the states with the other
  // files' states, and calls check_states() on the whole set.
  bool check_references = true;
  // Whether `source:` may read other files. Off for untrusted text (the fuzz target):
  // the state then gets an error instead.
  bool follow_sources = true;
  // Threads load_paths loads files on, the calling one included (0: one per CPU). The
  // result does not depend on it.
  int threads = 0;
  // Where the manifests are: files and folders whose content errors may quote. An
  // error in a file whose real path (symbolic links resolved) lies outside all of them
  // (a link in the folder to /etc/shadow, a `source:` of a file elsewhere) keeps its
  // position but not its message or state ID, which could quote the file's content:
  // "its content is not shown: the file is outside the manifests folder". Empty:
  // load_paths uses the paths it is given; load_file and load_text quote everything.
  std::vector<std::string> quotable_paths;
  // Values of ${NAME} references in objects (variables.hpp). Substitution always runs:
  // a reference to a variable not here and without a default is an error.
  VariableMap variables;
};

struct LoadResult {
  std::vector<State> states;  // files in lexical path order, documents in file order
  std::vector<LoadError> errors;
  // What was changed and not refused (a cluster-scoped object's namespace dropped,
  // cluster_scope.hpp): said, nothing held back.
  std::vector<LoadError> warnings;
  std::set<std::string> failed_files;              // files with at least one error
  std::vector<std::string> files;                  // every file read (directory walk and includes), in order
  std::map<std::string, std::string> file_hashes;  // path -> SHA-256 of the content, lowercase hex
  // Included file -> files that include it by `source:` (so a change to an included
  // file can be traced to the files to reload).
  std::map<std::string, std::set<std::string>> included_by;

  bool ok() const { return errors.empty(); }
  // All errors, one per line (LoadError::to_string), in the order found.
  std::string error_text() const;
};

// Files and directories, as given on the command line or in the daemon's config.
LoadResult load_paths(const std::vector<std::string>& paths, const LoadOptions& options = {});
// load_paths in the background: the files start loading on `threads` threads at once,
// and finish() loads the ones left on the calling thread too, then merges them in file
// order (the same result as load_paths). `kstate apply` connects to the API server
// meanwhile. The directory walk itself happens in the constructor.
class BackgroundLoad {
 public:
  BackgroundLoad(const std::vector<std::string>& paths, const LoadOptions& options, int threads);
  ~BackgroundLoad();
  BackgroundLoad(const BackgroundLoad&) = delete;
  BackgroundLoad& operator=(const BackgroundLoad&) = delete;
  // Once. This thread loads the files still left too, then merges.
  LoadResult finish();

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
  std::vector<std::thread> threads_;
};

// One file (the daemon's reload of a changed file); its extension is not checked.
LoadResult load_file(const std::string& path, const LoadOptions& options = {});
// Text already in memory; `path` names it in messages and resolves relative `source:`.
LoadResult load_text(std::string_view text, const std::string& path, const LoadOptions& options = {});

// The files load_paths would read for these paths, in load order, with errors for
// paths that do not exist or cannot be listed.
std::vector<std::string> list_manifest_files(const std::vector<std::string>& paths, std::vector<LoadError>& errors);

// The same files with what the walk learnt of each: the lstat of its name (`link`) and
// the stat it is read through (`target`: the same unless the name is a symbolic link),
// so that a caller checking modes or fingerprints of every file (the daemon's resync)
// need not stat them again. `stated` is false for a path given that could not be stat'ed.
struct ListedFile {
  std::string path;
  bool stated = false;
  struct stat link {};
  struct stat target {};
};
std::vector<ListedFile> list_manifest_files_with_stat(const std::vector<std::string>& paths,
                                                      std::vector<LoadError>& errors);

// Cross-state checks over a complete set (see LoadOptions::check_references). Removes
// states that fail (the later of two conflicting declarations, states whose `require`
// names nothing known, identical duplicates) and returns one error per problem;
// `failed_files` receives their files.
std::vector<LoadError> check_states(std::vector<State>& states, std::set<std::string>& failed_files);

// The file an `include:` item or a `- sls:` requisite names, from the file that names
// it, as Salt maps SLS names to files with the manifests tree as its file root:
//  - "a.b.c" is a/b/c.sls, a/b/c/init.sls, a/b/c.yaml or a/b/c.yml (the first that
//    exists) under the nearest folder, from the naming file's own upwards, that has one;
//  - ".c" is c under the naming file's folder, "..c" under its parent, and so on;
//  - "salt://a/b.yaml" is a/b.yaml under the nearest such folder;
//  - a name with a slash or ending .sls, .yaml, .yml or .json is a path, relative to
//    the naming file's folder unless absolute.
// An error (invalid_input) lists the files tried.
Result<std::string> resolve_state_file(std::string_view name, const std::string& from_file);

// SHA-256 of bytes as lowercase hex (OpenSSL).
std::string sha256_hex(std::string_view bytes);

// "did you mean" helper: the candidate closest to `word` (edit distance), or "" when
// none is close enough to be a plausible typo.
std::string closest_match(std::string_view word, const std::vector<std::string_view>& candidates);

}  // namespace kstate::manifests
