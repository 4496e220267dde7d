#!/usr/bin/env bash
# Fails when proto/src/gen (TypeScript), the learner's, the Python reward-service example's or the Python
# client's (clients/python) stubs differ from what the .proto files
# generate (drift check), runs `buf lint` on the contracts, and `buf breaking` against the released
# contract (proto/breaking-baseline.binpb, `buf build` of rewardmesh.v1 before the text-learner change).
set -euo pipefail
cd "$(dirname "$0")/../proto"
buf=../node_modules/.bin/buf
"$buf" lint
"$buf" breaking --against breaking-baseline.binpb
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/buf.gen.yaml" <<YAML
version: v2
clean: true
plugins:
  - local: $(cd .. && pwd)/node_modules/.bin/protoc-gen-es
    out: $tmp/gen
    opt:
      - target=ts
      - import_extension=js
YAML
"$buf" generate --template "$tmp/buf.gen.yaml"
if ! diff -ru src/gen "$tmp/gen" >"$tmp/diff"; then
  cat "$tmp/diff" | head -50
  echo "check-generated: proto/src/gen is stale — run 'npm run generate' and commit the result" >&2
  exit 1
fi
echo "check-generated: proto/src/gen matches the protos"
py_gen=../trainer/learner-torch/reward_mesh_learner/_gen
bash ../scripts/generate-python.sh "$tmp/py" "$tmp/py-reward" "$tmp/py-client"
if ! diff -ru -x __pycache__ "$py_gen" "$tmp/py" >"$tmp/pydiff"; then
  head -50 "$tmp/pydiff"
  echo "check-generated: $py_gen is stale — run 'npm run generate' and commit the result" >&2
  exit 1
fi
echo "check-generated: the learner's Python stubs match the protos"
py_reward=../examples/python-reward-service/_gen
if ! diff -ru -x __pycache__ "$py_reward" "$tmp/py-reward" >"$tmp/pyrdiff"; then
  head -50 "$tmp/pyrdiff"
  echo "check-generated: $py_reward is stale — run 'npm run generate' and commit the result" >&2
  exit 1
fi
echo "check-generated: the Python reward-service example's stubs match the protos"
py_client=../clients/python/reward_mesh/_gen
if ! diff -ru -x __pycache__ "$py_client" "$tmp/py-client" >"$tmp/pycdiff"; then
  head -50 "$tmp/pycdiff"
  echo "check-generated: $py_client is stale — run 'npm run generate' and commit the result" >&2
  exit 1
fi
echo "check-generated: the Python client's stubs match the protos"
