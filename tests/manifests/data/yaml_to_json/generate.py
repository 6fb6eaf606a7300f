#!/usr/bin/env python3
"""Regenerates cases.json: the YAML typing cases that bite Kubernetes users, each with
the JSON kubectl produces for it. Every case is wrapped as `x:` in a ConfigMap and run
through `kubectl label --local -f - -o json k=v` (offline: no server needed), which
reads the file with sigs.k8s.io/yaml exactly as `kubectl apply/create` do; the value of
`x` is recorded. Cases kstate deliberately treats differently carry "kstate" (what
kstate produces) and "why"; kubectl's own output stays in "kubectl" for the record.

Usage: python3 generate.py > cases.json   (needs kubectl on PATH)
"""
import json
import subprocess
import sys

CASES = [
    # (name, YAML body of x, override)
    ("on is true", "v: on", None),
    ("On is true", "v: On", None),
    ("off is false", "v: off", None),
    ("yes is true", "v: yes", None),
    ("NO is false", "v: NO", None),
    ("y is true (YAML 1.1)", "v: y", None),
    ("n is false (YAML 1.1)", "v: n", None),
    ("Y is true", "v: Y", None),
    ("True is true", "v: True", None),
    ("tRue is a string", "v: tRue", None),
    ("octal 0777 is 511", "v: 0777", None),
    ("0o17 is 15", "v: 0o17", None),
    ("018 is not octal: float 18", "v: 018", None),
    ("1e3 is 1000", "v: 1e3", None),
    ("1.5e+3 is 1500", "v: 1.5e+3", None),
    ("1.10 is the number 1.1", "v: 1.10", None),
    ("1.0 is 1", "v: 1.0", None),
    (".5 is 0.5", "v: .5", None),
    ("1. is 1", "v: 1.", None),
    ("+1 is 1", "v: +1", None),
    ("tilde is null", "v: ~", None),
    ("null is null", "v: null", None),
    ("NULL is null", "v: NULL", None),
    ("empty value is null", "v:", None),
    ("0x1F is 31", "v: 0x1F", None),
    ("-0x1F is -31", "v: -0x1F", None),
    ("0b101 is 5", "v: 0b101", None),
    ("-0b11 is -3", "v: -0b11", None),
    ("0b2 is a string", "v: 0b2", None),
    ("double-quoted 123 stays a string", 'v: "123"', None),
    ("single-quoted yes stays a string", "v: 'yes'", None),
    ("double-quoted true stays a string", 'v: "true"', None),
    ("block scalar stays a string", "v: |\n    0777\n", None),
    ("uint64 big integer", "v: 12345678901234567890",
     {"kstate": {"v": 12345678901234567890},
      "why": "sigs.k8s.io/yaml produces the exact uint64; kubectl's later unstructured round trip "
             "turns it into a float64 (12345678901234567000). kstate keeps the digits (DESIGN.md)."}),
    ("int64 minimum", "v: -9223372036854775808", None),
    ("int64 maximum", "v: 9223372036854775807", None),
    ("beyond uint64 is a float", "v: 123456789012345678901234567890", None),
    ("1_000 is 1000", "v: 1_000", None),
    ("0x_1F is 31", "v: 0x_1F", None),
    ("_1 is a string", "v: _1", None),
    ("1e400 overflows: string", "v: 1e400", None),
    ("date stays a string", "v: 2024-01-01", None),
    ("timestamp stays a string", "v: 2024-01-01T10:00:00Z", None),
    ("base 60 is a string", "v: 1:20", None),
    ("!!binary is decoded", "v: !!binary aGVsbG8=", None),
    ("!!binary invalid UTF-8 becomes U+FFFD", "v: !!binary /w==", None),
    ("!!str 1 is a string", "v: !!str 1", None),
    ("!!str 0x1F is a string", "v: !!str 0x1F", None),
    ("!!int quoted is a number", 'v: !!int "12"', None),
    ("!!float on an int", "v: !!float 1", None),
    ("!!bool yes", "v: !!bool yes", None),
    ("!!null empty", 'v: !!null ""', None),
    ("local tag keeps text", "v: !foo 1", None),
    ("empty quoted string", 'v: ""', None),
    ("small float", "v: 0.000001", None),
    ("tiny float", "v: 1e-7", None),
    ("keys on/0777/1.10/1e3/0x1F/dates", "on: a\n0777: b\n1.10: c\n1e3: d\n0x1F: e\n2024-01-01: f\nfalse: g", None),
    ("float keys print as float32 (%g)", "123456789.5: a\n0.00001: b\n1e300: c\n-1e300: d\n1.5e6: e", None),
    ("anchors and aliases", "base: &b {a: 1, b: [x, y]}\ncopy: *b", None),
    ("merge key, explicit keys win when after", "base: &b {a: 1, b: 2}\nm:\n  <<: *b\n  b: 3\n  c: 4", None),
    ("merge key after explicit key overrides it (go-yaml v2)", "base: &b {a: 1, b: 2}\nm:\n  b: 3\n  <<: *b", None),
    ("merge list: earlier maps win", "m:\n  <<: [{a: 1}, {a: 2, b: 2}]", None),
    ("quoted << is a plain key", 'm:\n  "<<": {a: 1}', None),
    ("duplicate keys", "a: 1\na: 2",
     {"kstate_error": "duplicate key \"a\"",
      "why": "kubectl's lenient YAML-to-JSON keeps the last value silently; its strict decoder "
             "(YAMLToJSONStrict, used for server-side field validation) rejects it. kstate rejects, "
             "as a duplicate key is almost always a mistake."}),
    ("keys that collide after conversion (on/yes)", "on: 1\nyes: 2",
     {"kstate_error": "duplicate key \"true\"",
      "why": "both keys are boolean true; kubectl keeps one of them at random (Go map order)."}),
    (".inf is rejected", "v: .inf", {"kstate_error": "JSON cannot represent"}),
    ("-.Inf is rejected", "v: -.Inf", {"kstate_error": "JSON cannot represent"}),
    (".nan is rejected", "v: .nan", {"kstate_error": "JSON cannot represent"}),
    ("null key is rejected", "~: d", {"kstate_error": "unsupported map key: null"}),
    ("uint64 key is rejected", "18446744073709551615: f", {"kstate_error": "unsupported map key of type uint64"}),
    ("sequence key is rejected", "[1, 2]: a", {"kstate_error": "invalid map key"}),
    ("!!int on text is rejected", "v: !!int abc", {"kstate_error": "cannot decode !!str `abc` as a !!int"}),
]


def kubectl(body):
    indented = "\n".join("  " + line for line in body.splitlines())
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: t\nx:\n" + indented + "\n"
    run = subprocess.run(["kubectl", "label", "--local", "-f", "-", "-o", "json", "k=v"], input=text,
                         capture_output=True, text=True)
    if run.returncode != 0:
        return None, run.stderr.strip()
    return json.loads(run.stdout).get("x"), None


out = []
for name, body, override in CASES:
    value, error = kubectl(body)
    case = {"name": name, "yaml": body}
    if error is None:
        case["kubectl"] = value
    else:
        case["kubectl_error"] = error
    if override:
        case.update(override)
    out.append(case)
json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
sys.stdout.write("\n")
