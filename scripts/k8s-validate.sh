#!/usr/bin/env bash
# Validates scripts/k8s-indexed-job.yaml (or the manifests given) against the Kubernetes API
# schema with kubernetes-validate from PyPI (the OpenAPI schemas of each Kubernetes release,
# shipped in the wheel: no cluster needed), strict: unknown fields are errors.
#
#   scripts/k8s-validate.sh [MANIFEST...]
#
# Environment: CHUNKBENCH_K8S_VENV (default $HOME/.cache/chunkbench/venv-k8s-validate),
# K8S_VERSION (default 1.33.0, the schema version checked).
set -euo pipefail
cd "$(dirname "$0")/.."
PINS="kubernetes-validate==1.37.0 jsonschema==4.26.0 referencing==0.37.0 PyYAML==6.0.4"
VENV=${CHUNKBENCH_K8S_VENV:-$HOME/.cache/chunkbench/venv-k8s-validate}
# shellcheck source=pinned-venv.sh
. scripts/pinned-venv.sh
pinned_venv "$VENV" "$PINS"
[ $# -gt 0 ] || set -- scripts/k8s-indexed-job.yaml
exec "$VENV/bin/kubernetes-validate" --strict -k "${K8S_VERSION:-1.33.0}" "$@"
