#!/usr/bin/env bash
# Creates (or reuses) the Python environment of the llama.cpp server the reader tests and the
# reader benchmark run against: llama-cpp-python[server] from PyPI, which compiles llama.cpp
# from its sdist (about 5 min on 2 cores; cmake and ninja come as wheels). Prints its python
# path. The venv lives outside the repository so clones share it.
#
#   scripts/llama-server/setup.sh        # -> /root/.cache/chunkbench/venv-llama-server-avx2/bin/python
#
# The build targets a fixed instruction set, AVX2 + FMA + F16C (GGML_NATIVE off), not the
# machine's own: the reader parity tests compare llama.cpp's quantized log-likelihoods with
# the local f32 reader's within a tolerance, and llama.cpp's kernels differ by instruction
# set. Measured 2026-12-04 on an AVX-512 machine: the native build put one of 36 cloze options
# outside the tolerance (SciQ "meteorology": server -2.256, local -2.932 nats, bound 0.493);
# the AVX2 build on the same machine put none outside. CHUNKBENCH_LLAMA_NATIVE=1 builds for
# this machine's CPU instead (a separate venv, -native), e.g. to benchmark llama.cpp at its
# best on an AVX-512 machine. pip's wheel cache is bypassed so a wheel built with other flags
# is never reused.
#
# Environment: CHUNKBENCH_LLAMA_SERVER_VENV (default
# $HOME/.cache/chunkbench/venv-llama-server-avx2, or -native), CHUNKBENCH_LLAMA_NATIVE.
set -euo pipefail

PINS="llama-cpp-python[server]==0.3.36"

if [ "${CHUNKBENCH_LLAMA_NATIVE:-0}" = 1 ]; then
  flavour=native
  export CMAKE_ARGS="-DGGML_NATIVE=ON"
else
  flavour=avx2
  export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX_VNNI=OFF"
fi
export PIP_NO_CACHE_DIR=1
VENV=${CHUNKBENCH_LLAMA_SERVER_VENV:-$HOME/.cache/chunkbench/venv-llama-server-$flavour}
# shellcheck source=../pinned-venv.sh
. "$(dirname "$0")/../pinned-venv.sh"
pinned_venv "$VENV" "$PINS"
echo "$VENV/bin/python"
