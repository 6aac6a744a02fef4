"""The ``chunkbench`` command the wheel installs: the command line's own main
(``chunkbench::main_from`` in crates/cli), run inside this interpreter."""

import signal
import sys

from . import _native


def main() -> None:
    """Runs ``chunkbench`` with ``sys.argv`` and exits with its code (0, 1 a regression, 2
    unusable input)."""
    # Ctrl-C ends the command as it ends the native binary (Python's handler would only set a
    # flag the Rust code never reads); finished cells are on disk, so a run resumes.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    argv = ["chunkbench"] + sys.argv[1:]
    sys.exit(_native.cli_main(argv))
