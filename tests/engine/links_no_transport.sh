#!/bin/bash
# The engine knows no transport: a program built from it alone loads no gRPC, civetweb or
# prometheus library. Usage: links_no_transport.sh CONTROL BINARY...
# CONTROL is a program of the gRPC layer, which must show those libraries, so that a broken
# `ldd` cannot pass the check.
set -euo pipefail
transport='libgrpc|libgpr|civetweb|prometheus'
control=$1
shift
# ldd's output is read whole first: grep -q stops reading at its first match, and under pipefail
# ldd's SIGPIPE would fail the pipeline.
control_libraries=$(ldd "$control")
if ! grep -Eq "$transport" <<<"$control_libraries"; then
  echo "FAIL: ldd shows no transport library in the control $control; the check cannot see them"
  exit 1
fi
status=0
for binary in "$@"; do
  libraries=$(ldd "$binary")
  if found=$(grep -E "$transport" <<<"$libraries"); then
    echo "FAIL: $binary, built from the engine alone, loads:"
    echo "$found"
    status=1
  else
    echo "ok: $binary loads no gRPC, civetweb or prometheus library"
  fi
done
exit $status
