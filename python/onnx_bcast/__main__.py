"""``onnx-bcast`` and ``python -m onnx_bcast``: the command line, the same program as the Rust binary (same flags,
output and exit codes), run by the compiled extension."""

import signal
import sys

from . import _native


def main() -> None:
    # The run happens inside one call into Rust, where Python's own SIGINT handler would wait for it to end:
    # Ctrl-C stops the command at once, as it stops the binary.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # Named as the binary is, so that help and usage read the same whichever way it was started.
    sys.exit(_native.run_cli(["onnx-bcast", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
