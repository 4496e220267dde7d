#!/usr/bin/env bash
# Fails when proto/src/gen differs from what `buf generate` makes of the .proto files (drift check),
# and runs `buf lint` on the contracts.
set -euo pipefail
cd "$(dirname "$0")/../proto"
buf=../node_modules/.bin/buf
"$buf" lint
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
