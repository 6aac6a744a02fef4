# Sourced by the setup scripts of the Python environments tests use (scripts/adapters/setup.sh,
# scripts/embed-server/setup.sh): `pinned_venv VENV PINS` creates the venv at VENV when absent
# and installs PINS (pip requirement specifiers, space-separated) unless the venv's stamp file
# already records exactly these pins, then records them. Output goes to stderr.
pinned_venv() {
    local venv=$1 pins=$2
    local stamp="$venv/.chunkbench-pins"
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv" >&2
    fi
    if [ "$(cat "$stamp" 2>/dev/null)" != "$pins" ]; then
        # shellcheck disable=SC2086
        "$venv/bin/pip" install --quiet --disable-pip-version-check $pins >&2
        echo "$pins" >"$stamp"
    fi
}
