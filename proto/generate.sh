#!/usr/bin/env bash
# Regenerates the checked-in Python stubs in proto/gen/ from the .proto sources in proto/.
# The stubs are the test oracle only; the connector hand-encodes messages on its hot path.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-python}"
mkdir -p "$here/gen"
"$python" -m grpc_tools.protoc -I "$here" --python_out="$here/gen" --pyi_out="$here/gen" \
  --grpc_python_out="$here/gen" "$here"/*.proto
