#!/usr/bin/env bash
# Regenerates the lock files from the .in files: every transitive
# dependency pinned, with the sha256 of every wheel and sdist of that
# version, for Python 3.10 and newer on any platform. Run as `make locks`.
# The runner installs a lock with
#   pip install --require-hashes --no-deps -r LOCK
set -euo pipefail
cd "$(dirname "$0")"

UV_VERSION=0.13.9
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
PIP_CONFIG_FILE=/dev/null python3 -m venv "$work/venv"
PIP_CONFIG_FILE=/dev/null "$work/venv/bin/pip" install -q --disable-pip-version-check "uv==$UV_VERSION"
uv=("$work/venv/bin/uv" pip compile --quiet --universal --python-version 3.10 --generate-hashes --no-header --no-config)

"${uv[@]}" lm-eval.in -o lm-eval.txt
"${uv[@]}" lm-eval-bfcl.in -o "$work/deps.txt"
"${uv[@]}" --no-deps bfcl-eval.in -o "$work/bfcl.txt"
{
  echo "# lm-eval + bfcl-eval, from lm-eval-bfcl.in and bfcl-eval.in by compile.sh."
  cat "$work/bfcl.txt" "$work/deps.txt"
} > lm-eval-bfcl.txt
sed -i '1i # lm-eval, from lm-eval.in by compile.sh.' lm-eval.txt
# aiperf supports Python 3.11 to 3.13 only; it gets a venv of its own.
"$work/venv/bin/uv" pip compile --quiet --universal --python-version 3.11 --generate-hashes --no-header --no-config aiperf.in -o aiperf.txt
sed -i '1i # aiperf, from aiperf.in by compile.sh (Python 3.11 and newer: aiperf needs it).' aiperf.txt
# pytest goes into the server's Python (3.10 and newer), only when missing.
"${uv[@]}" pytest.in -o pytest.txt
sed -i "1i # pytest, from pytest.in by compile.sh (the server's Python, when it lacks pytest)." pytest.txt
