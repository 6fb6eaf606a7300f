// YAML text -> JSON documents, the way kubectl reads a manifest (sigs.k8s.io/yaml:
// go-yaml v2 with YAML 1.1 scalar resolution, then JSON). Users write YAML but the
// API server receives JSON, so `on`, `0777`, `1.10` or `~` must mean here exactly what
// they mean to kubectl, or the same file would do different things with each tool.
//
// The rules (checked against kubectl 1.32, see tests/manifests/data/README.md):
//  - quoted and block scalars, and `!!str`, are strings;
//  - plain y|Y|yes|Yes|YES|true|True|TRUE|on|On|ON are true, n|N|no|No|NO|false|...|
//    off|Off|OFF false; ""|~|null|Null|NULL null;
//  - plain integers as Go's strconv.ParseInt(s, 0, 64) after removing `_`: 0x1F, 0o17,
//    0b101, 0777 (octal: 511), +1, then ParseUint for 2^63..2^64-1 (kept exactly: the
//    digits are not rounded through a double), then decimal floats
//    ([-+]?(.d+|d+(.d*)?)([eE][-+]?d+)?); floats with an integral value are written
//    as integers (1e3 -> 1000) as Go's encoding/json does; out-of-range floats (1e400)
//    stay strings; .inf/.nan are rejected (JSON has no such numbers);
//  - timestamps (2024-01-01) stay strings; `!!binary` is base64-decoded into a string
//    (invalid UTF-8 becomes U+FFFD) as go-yaml v2 does; `!!int "12"` is 12;
//  - mapping keys become strings (true, 511, 1000, 1.1); null, uint64, sequence and
//    mapping keys are rejected as kubectl rejects them;
//  - anchors/aliases are expanded; merge keys `<<` (a mapping or a list of mappings,
//    earlier ones winning) are applied in document order, later entries overriding
//    earlier ones, as go-yaml v2 does;
//  - duplicate keys in one mapping are rejected (kubectl's strict decoding does; its
//    lenient path silently keeps the last one, which hides mistakes).
// Limits (document size, nesting depth, alias expansion; documents and nodes per file)
// stop hostile or broken input ("billion laughs", millions of empty documents) with a
// clear error instead of exhausting memory.
//
// Parsing uses libyaml, the C parser go-yaml v2 is a port of, so what is a syntax error
// (and where) is what kubectl reports. Positions are 1-based line and column.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"

namespace kstate::manifests {

struct YamlLimits {
  // The API server refuses request bodies over 3 MiB, so no single object can be larger.
  std::size_t max_document_bytes = 3 * 1024 * 1024;
  // Deep CRD schemas reach ~40 levels; 256 leaves room while bounding recursion.
  int max_nesting_depth = 256;
  // Nodes materialised by aliases and merge keys, summed over one document.
  std::size_t max_alias_expanded_nodes = 100'000;
  // Per file, so that memory stays in proportion to what a file holds: every document
  // and node costs memory whether or not it makes an object (4 million empty `---`
  // documents, 16 MB of text, took 4.2 GB). Documents: empty ones count; an ApplySet
  // records about 10,000 objects, and the largest real bundles hold a few hundred.
  // Nodes: those parsed plus those aliases and merge keys materialise; a 3.5 MB bundle
  // of CRDs has ~150,000. At these limits a file takes a few hundred MB at most.
  std::size_t max_documents_per_file = 10'000;
  std::size_t max_nodes_per_file = 2'000'000;
};

// A 1-based line and column inside a file (0 when unknown).
struct TextPosition {
  int line = 0;
  int column = 0;
};

struct YamlNodeArena;  // the parsed YAML tree, kept to answer "where was this value?"

// Points at a node of a parsed document to find the position of a value for error
// messages. Looking up a child that does not exist keeps the parent's position, so an
// error about a missing field points at the mapping that lacks it.
class YamlLocator {
 public:
  YamlLocator() = default;
  YamlLocator(std::shared_ptr<const YamlNodeArena> arena, int node, TextPosition position)
      : arena_(std::move(arena)), node_(node), position_(position) {}

  TextPosition position() const { return position_; }
  // Position of the mapping key itself (for "unknown argument" errors); the value's
  // position when the key is not found.
  TextPosition key_position(std::string_view key) const;
  YamlLocator child(std::string_view key) const;
  YamlLocator item(std::size_t index) const;

 private:
  std::shared_ptr<const YamlNodeArena> arena_;
  int node_ = -1;
  TextPosition position_;
};

struct YamlError {
  TextPosition position;
  std::string message;
};

struct YamlDocument {
  json::Document json;  // kNullType for an empty document
  YamlLocator locator;  // root of the document
  TextPosition start;
};

// One file's documents, in order. Documents that failed (syntax error, limit, a value
// JSON cannot hold) are not in `documents`; each failure is one entry in `errors`.
// A syntax error ends the file (YAML cannot resynchronise after one).
struct YamlStream {
  std::vector<YamlDocument> documents;
  std::vector<YamlError> errors;
};

YamlStream parse_yaml_documents(std::string_view text, const YamlLimits& limits = {});

}  // namespace kstate::manifests
