#!/usr/bin/env bash
# Runs a command and checks its exit status and that its output matches a regex.
# Usage: expect_exit.sh STATUS REGEX -- COMMAND...
set -u
want="$1"; regex="$2"; shift 3
out="$("$@" 2>&1)"; got=$?
echo "$out"
if [[ "$got" != "$want" ]]; then echo "FAIL: exit status $got, wanted $want"; exit 1; fi
if ! grep -Eq -- "$regex" <<<"$out"; then echo "FAIL: output lacks /$regex/"; exit 1; fi
echo "ok"
