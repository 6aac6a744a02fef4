#!/usr/bin/env bash
# Regenerates crates/chunker/tests/data/tiktoken/counts.json: the token counts of OpenAI's
# `tiktoken` (pinned below, from PyPI) for cl100k_base and o200k_base on real text — every
# QuALITY article and the first OpenStax pages, at least 1 MB in all — which
# crates/chunker/tests/tiktoken_parity.rs compares with chunkbench's named encodings.
#
# tiktoken downloads its BPE files at run time; there is no network here, so the script gives
# it the files the tiktoken-rs crate ships (the same bytes: tiktoken checks their sha256)
# through TIKTOKEN_CACHE_DIR, named as tiktoken names its cache entries (sha1 of the URL).
#
# Needs the dataset store (`chunkbench data fetch`: data/quality, data/openstax) and the cargo
# registry holding tiktoken-rs (any build of the workspace fetches it).
# Environment: VENV (default .venv-tiktoken), CARGO_HOME (default ~/.cargo).
set -euo pipefail

TIKTOKEN_VERSION=0.9.0
TIKTOKEN_RS_VERSION=0.9.1 # the tiktoken-rs version in Cargo.lock

ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$ROOT/.venv-tiktoken}
ASSETS=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/tiktoken-rs-"$TIKTOKEN_RS_VERSION"/assets | head -1)
OUT="$ROOT/crates/chunker/tests/data/tiktoken/counts.json"

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check "tiktoken==$TIKTOKEN_VERSION"
CACHE=$(mktemp -d)
trap 'rm -rf "$CACHE"' EXIT
for enc in cl100k_base o200k_base; do
    url="https://openaipublic.blob.core.windows.net/encodings/$enc.tiktoken"
    key=$(printf '%s' "$url" | sha1sum | cut -d' ' -f1)
    cp "$ASSETS/$enc.tiktoken" "$CACHE/$key"
done
mkdir -p "$(dirname "$OUT")"
TIKTOKEN_CACHE_DIR=$CACHE ROOT=$ROOT OUT=$OUT TIKTOKEN_VERSION=$TIKTOKEN_VERSION \
    TIKTOKEN_RS_VERSION=$TIKTOKEN_RS_VERSION "$VENV/bin/python" - <<'PY'
import hashlib, json, os
import tiktoken

root, out = os.environ["ROOT"], os.environ["OUT"]
encs = {n: tiktoken.get_encoding(n) for n in ("cl100k_base", "o200k_base")}
docs, total = [], 0
def take(dataset, limit=None):
    global total
    with open(os.path.join(root, "data", dataset, "documents.jsonl"), encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            t = d["text"].encode("utf-8")
            row = {"dataset": dataset, "id": d["id"], "bytes": len(t),
                   "sha256": hashlib.sha256(t).hexdigest()}
            for n, e in encs.items():
                row[n] = len(e.encode_ordinary(d["text"]))
            docs.append(row)
            total += len(t)
            if limit is not None and total >= limit:
                return
take("quality")
take("openstax", limit=1_100_000)
with open(out, "w", encoding="utf-8") as f:
    json.dump({"generator": {"tiktoken": os.environ["TIKTOKEN_VERSION"],
                             "bpe_files": f"tiktoken-rs {os.environ['TIKTOKEN_RS_VERSION']} assets",
                             "counting": "encode_ordinary"},
               "total_bytes": total, "documents": docs}, f, indent=1)
    f.write("\n")
print(f"{len(docs)} documents, {total} bytes -> {out}")
PY
