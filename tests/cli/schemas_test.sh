#!/usr/bin/env bash
# The JSON Schemas in docs/schemas/ describe what the readers accept and the writers produce:
# every built-in cluster (YAML read as JSON), the graphs that build-graph writes and the test
# graph, a placement the writer produced, and the outcome of `simulate --json` must validate.
# Usage: bash schemas_test.sh PATH_TO_placesim
set -u
BIN=${1:?usage: schemas_test.sh PATH_TO_placesim}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0

"$BIN" build-graph --graph rnnlm --graph-opt steps=4 -o "$TMP/rnnlm.json" || fail=1
"$BIN" simulate --graph "$ROOT/tests/data/good/tiny-graph.json" --cluster paper-2gpu \
  --placement "$ROOT/tests/data/good/tiny-placement.json" --json > "$TMP/outcome.json" || fail=1

python3 - "$ROOT" "$TMP" <<'PY' || fail=1
import glob, json, sys
import jsonschema, yaml
root, tmp = sys.argv[1], sys.argv[2]
def schema(name):
    return json.load(open(f"{root}/docs/schemas/{name}.schema.json"))
cases = [(f, "cluster", yaml.safe_load(open(f))) for f in sorted(glob.glob(f"{root}/scenarios/clusters/*.yaml"))]
cases += [(f, "graph", json.load(open(f))) for f in [f"{root}/tests/data/good/tiny-graph.json", f"{tmp}/rnnlm.json"]]
cases += [(f"{root}/tests/data/good/tiny-placement.json", "placement", json.load(open(f"{root}/tests/data/good/tiny-placement.json")))]
cases += [(f"{tmp}/outcome.json", "outcome", json.load(open(f"{tmp}/outcome.json")))]
# Files the readers reject for their shape must not validate either.
rejected = [(f"{root}/tests/data/bad/graph-unknown-key.json", "graph"),
            (f"{root}/tests/data/bad/graph-wrong-type.json", "graph"),
            (f"{root}/tests/data/bad/placement-unknown-key.json", "placement")]
bad = 0
for path, kind, doc in cases:
    errors = list(jsonschema.Draft202012Validator(schema(kind)).iter_errors(doc))
    for e in errors[:3]:
        print(f"FAIL {path}: {list(e.absolute_path)}: {e.message[:200]}")
    bad += bool(errors)
for path, kind in rejected:
    if jsonschema.Draft202012Validator(schema(kind)).is_valid(json.load(open(path))):
        print(f"FAIL {path}: validates against {kind}.schema.json but the reader rejects it")
        bad += 1
print(f"{len(cases) + len(rejected) - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
PY
[ $fail -eq 0 ]
