#!/usr/bin/env bash
# The prepared GPU run of bench/gpu.py (issue 22): offline, about 4 minutes on one H100, stopped
# at 9 minutes whatever happens so that a 10-minute lease still brings its figures back.
#
#   bench/gpu.sh wheels   # here, where pip reaches a registry: the packages a bare GPU image
#                         # (python3 3.12 with torch) lacks, as wheels in .whl/, at the versions
#                         # this checkout's Python has
#   bench/gpu.sh [ARGS]   # there: installs .whl/ (if present) into /tmp/site, runs the bench
#                         # (--device cuda --sizes 0.5b,1.5b --steps 3, then ARGS), copies the
#                         # output to $OUT/gpu.txt when $OUT is set
set -euo pipefail
cd "$(dirname "$0")/.."

# What bench/gpu.py imports beyond torch, safetensors, tokenizers, numpy, pandas and pyarrow:
# trl and its datasets, transformers/peft/accelerate at this checkout's versions, and what
# temper's learner imports (apsw, pydantic).
PACKAGES="trl datasets dill multiprocess transformers kernels tomlkit peft accelerate apsw pydantic
pydantic_core annotated_types typing_inspection"

if [[ "${1:-}" == "wheels" ]]; then
    grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >>.git/info/exclude
    pins=$(python3 -c 'import importlib.metadata as m, sys; print(" ".join(f"{n}=={m.version(n)}" for n in sys.argv[1:]))' $PACKAGES)
    platforms=""
    for n in 39 35 34 31 28 27 24 17; do platforms+=" --platform manylinux_2_${n}_x86_64"; done
    # shellcheck disable=SC2086  # word splitting wanted
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        $platforms --platform manylinux2014_x86_64 -d .whl $pins
    ls -la .whl
    exit 0
fi

if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export LITELLM_LOCAL_MODEL_COST_MAP=True PYTHONUNBUFFERED=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
timeout 540 python3 bench/gpu.py --device cuda --sizes 0.5b,1.5b --steps 3 "$@" 2>&1 | tee "${OUT:-/tmp}/gpu.txt"
