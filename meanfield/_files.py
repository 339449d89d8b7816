"""Opening a user's file as untrusted input: regular files only, reads bounded by the file's size.

Every reader of the library (:func:`meanfield.data.read_mnist_idx`,
:func:`meanfield.data.read_cifar10_batch`, :func:`meanfield.figures.load`, the ``--inputs`` of
``meanfield audit``) opens its file through :func:`open_regular_file`: a named pipe (FIFO), a
character or block device (``/dev/zero``), a socket or a directory is refused with a
``ValueError`` naming the path before anything is read, so no reader blocks on a pipe that is
never written or reads a device without end. The file is opened with ``O_NONBLOCK`` and checked
again on the open descriptor, so a path swapped for a FIFO between the check and the open cannot
block either. The size seen by ``fstat`` bounds what the readers allocate.
"""

from __future__ import annotations

import io
import os
import stat

import numpy as np

__all__ = ["RegularFile", "check_path", "open_regular_file"]

#: Bytes read per chunk: the readers never allocate more than the file has shown it holds.
CHUNK = 1 << 20

_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def check_path(path, name: str = "path") -> str:
    """``path`` as a str, or ``TypeError`` for anything but str, bytes or os.PathLike."""
    if isinstance(path, (bool, np.bool_)) or not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"{name} must be a str or os.PathLike naming a file, got {type(path).__name__}")
    return os.fsdecode(path)


def _kind(mode: int) -> str:
    for test, what in _KINDS:
        if test(mode):
            return what
    return "not a regular file"


class RegularFile(io.BufferedReader):
    """A binary file opened by :func:`open_regular_file`; ``size`` is its size when opened."""

    size: int = 0

    def read_at_most(self, n: int) -> bytes:
        """Up to ``n`` bytes, read in chunks so that a size promised by a header is never
        allocated before the file has shown it holds that much."""
        return read_at_most(self, n)


def read_at_most(f, n: int) -> bytes:
    """Up to ``n`` bytes of the binary stream ``f``, in chunks of :data:`CHUNK` bytes."""
    parts = []
    got = 0
    while got < n:
        part = f.read(min(CHUNK, n - got))
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def open_regular_file(path, name: str = "path") -> RegularFile:
    """Open ``path`` for binary reading if it names a regular file (symbolic links followed).

    Raises
    ------
    TypeError
        ``path`` is not a str, bytes or os.PathLike.
    ValueError
        ``path`` names a FIFO, a device, a socket or a directory (the message says which).
    OSError
        The file does not exist or cannot be opened (e.g. ``FileNotFoundError``).
    """
    text = check_path(path, name)
    mode = os.stat(text).st_mode  # FileNotFoundError / PermissionError as they are
    if not stat.S_ISREG(mode):
        raise ValueError(
            f"{name} {text} is {_kind(mode)}, not a regular file (refused before reading: a pipe or a device may block or never end)"
        )
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(text, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped between the stat and the open
            raise ValueError(f"{name} {text} is {_kind(st.st_mode)}, not a regular file (refused)")
    except BaseException:
        os.close(fd)
        raise
    f = RegularFile(io.FileIO(fd, "rb", closefd=True))
    f.size = int(st.st_size)
    return f
