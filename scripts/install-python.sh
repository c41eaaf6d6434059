#!/usr/bin/env bash
# A Python environment for the package `ptlab` (docs/python.md): a
# virtualenv in target/pyenv (ignored by git, made again by this script),
# the tools and libraries the tests and the notebook need, pinned, and the
# package built from crates/python and python/ptlab into it (maturin
# develop: the dev profile, which shares target/ with cargo's own builds).
#
# PYTHON: the interpreter to make the environment with (default python3).
# PTLAB_PYENV: where (default target/pyenv).
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-python3}"
env="${PTLAB_PYENV:-target/pyenv}"
if [ ! -x "$env/bin/python" ]; then
  "$py" -m venv "$env"
fi
"$env/bin/python" -m pip install --quiet --upgrade pip
"$env/bin/python" -m pip install --quiet \
  maturin==1.16.0 pytest==9.2.0 pandas==3.1.1 pyarrow==26.0.1 \
  ray==2.60.0 nbformat==5.11.1 matplotlib==3.11.2
# maturin develop installs into the active virtualenv.
VIRTUAL_ENV="$(cd "$env" && pwd)" PATH="$(cd "$env" && pwd)/bin:$PATH" \
  "$env/bin/maturin" develop --quiet
"$env/bin/python" -c 'import ptlab; print("ptlab", ptlab.__version__, "installed in", ptlab.__file__)'
