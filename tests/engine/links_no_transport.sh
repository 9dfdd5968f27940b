#!/bin/bash
# The engine knows no transport: a program built from it alone loads no gRPC, civetweb or
# prometheus library. Usage: links_no_transport.sh CONTROL BINARY...
# CONTROL is a program of the gRPC layer, which must show those libraries, so that a broken
# `ldd` cannot pass the check.
set -euo pipefail
transport='libgrpc|libgpr|civetweb|prometheus'
control=$1
shift
if ! ldd "$control" | grep -Eq "$transport"; then
  echo "FAIL: ldd shows no transport library in the control $control; the check cannot see them"
  exit 1
fi
status=0
for binary in "$@"; do
  if found=$(ldd "$binary" | grep -E "$transport"); then
    echo "FAIL: $binary, built from the engine alone, loads:"
    echo "$found"
    status=1
  else
    echo "ok: $binary loads no gRPC, civetweb or prometheus library"
  fi
done
exit $status
