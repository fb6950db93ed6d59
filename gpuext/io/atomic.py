"""Files that appear whole or not at all: write to a temporary name next to the target, then rename."""
from __future__ import annotations

import json
import os
import tempfile


def write_bytes(path: str, data: bytes) -> None:
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)   # as open() would have made it, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_json(path: str, obj) -> None:
    write_bytes(path, (json.dumps(obj, indent=2) + "\n").encode())
