# Headroom's notebook runner (`headroom run --notebook NB.ipynb`): executes the notebook top to
# bottom in a fresh kernel with nbclient, as `jupyter execute` does, and passes every output of
# its cells through as it arrives (stream text to stdout or stderr, errors' tracebacks to
# stderr), so a training cell's progress is seen live and its log lines (epochs) are read. The
# notebook file is not changed. Exit status 1 when a cell fails.
import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


class _Streaming(NotebookClient):
    def process_message(self, msg, cell, cell_index):
        kind = msg.get("msg_type") or msg.get("header", {}).get("msg_type")
        content = msg.get("content", {})
        if kind == "stream":
            out = sys.stderr if content.get("name") == "stderr" else sys.stdout
            out.write(content.get("text", ""))
            out.flush()
        elif kind == "error":
            sys.stderr.write("\n".join(content.get("traceback", [])) + "\n")
            sys.stderr.flush()
        return super().process_message(msg, cell, cell_index)


def main(path):
    import os

    nb = nbformat.read(path, as_version=4)
    client = _Streaming(nb, timeout=None,
                        resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}})
    try:
        client.execute()
    except CellExecutionError as e:
        sys.stderr.write(f"the notebook stopped at a failing cell: {str(e).splitlines()[0]}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
