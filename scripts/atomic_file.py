"""Final outputs of the scripts, written through a temporary name beside them and renamed into
place only once complete: an interrupted or failed run leaves the old file (or none), never part
of a new one that looks whole."""
import contextlib
import os


@contextlib.contextmanager
def replacing(path):
    """Yields the temporary name to write; renames it onto path when the block ends without an
    error, removes it otherwise. The name keeps path's extension (savefig picks its format by
    it)."""
    root, ext = os.path.splitext(str(path))
    tmp = f"{root}.{os.getpid()}.tmp{ext}"
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_atomically(path, write, mode="w"):
    """write(f) on a file opened in `mode` under the temporary name, then renamed onto path."""
    with replacing(path) as tmp, open(tmp, mode, **({} if "b" in mode else {"newline": ""})) as f:
        write(f)
