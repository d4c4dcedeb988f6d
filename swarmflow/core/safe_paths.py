"""The one safe-path layer: every host-side read or write in a tree that an agent or a
program can write (a workspace, an offload folder, a harness's private folder and its answer
file, a grading checkout) goes through here.

A path is opened relative to a descriptor of its trusted root, one component at a time, each
with `O_NOFOLLOW`: a symbolic link anywhere below the root (the file itself, or any folder on
the way) is refused, never followed, so a link an agent planted cannot point swarmflow's own
reads and writes outside the tree, whatever happens between a check and the open. What is
read or written must be a regular file (a FIFO is refused at once, never waited on; a device
never read), and a read holds at most `cap` bytes.

Refusals are `UnsafePath` (an `OSError`: callers that already treat a failed read or write as
"not there" keep doing so), with one line naming the path and why.

What it does not do: the root itself is trusted as given (the caller chose it); a hard link
to a file outside the tree is a regular file inside it (a hard link cannot cross filesystems,
and an agent can only link files it can already read); and it does not stop the agent from
changing the file after swarmflow read it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

MAX_READ = 16 << 20
"""The most bytes a read takes unless the caller gives its own cap: 16 MiB."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePath(OSError):
    """A path below a root that is a link, not a regular file, or too large."""

    def __str__(self) -> str:
        return str(self.strerror)


def _parts(relative: str | PurePosixPath) -> tuple[str, ...]:
    """The components of a relative path; `UnsafePath` for an absolute one or `..`."""
    path = PurePosixPath(relative)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise UnsafePath(errno.EINVAL, f"{str(relative)!r} is not a plain relative path")
    return tuple(part for part in path.parts if part != ".")


def _refused(exc: OSError, root: Path, relative: str | PurePosixPath) -> UnsafePath:
    """The one-line refusal for an open that `O_NOFOLLOW` or `O_DIRECTORY` turned down."""
    where = root / relative
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        why = "a symbolic link or a non-folder on the way"
        return UnsafePath(exc.errno, f"{where}: refused: {why}")
    return UnsafePath(exc.errno or errno.EIO, f"{where}: {exc.strerror or exc}")


@contextlib.contextmanager
def _folder(root: Path, parts: tuple[str, ...], *, make: bool) -> Iterator[int]:
    """A descriptor of the folder `root/parts...`, reached without following any link
    (each missing folder made on the way with `make`)."""
    fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)
    try:
        for part in parts:
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def read_bytes(root: Path, relative: str | PurePosixPath, cap: int = MAX_READ) -> bytes:
    """The bytes of the regular file `root/relative`, at most `cap` of them.

    Raises:
        FileNotFoundError: it is not there.
        UnsafePath: a link on the way or at the end, not a regular file, larger than `cap`.
    """
    parts = _parts(relative)
    try:
        with _folder(root, parts[:-1], make=False) as folder:
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            fd = os.open(parts[-1], flags, dir_fd=folder)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _refused(exc, root, relative) from None
    with os.fdopen(fd, "rb") as fh:
        _check_regular(fh.fileno(), root, relative)
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise UnsafePath(errno.EFBIG, f"{root / relative}: larger than {cap:,} bytes")
    return data


def write_bytes(
    root: Path, relative: str | PurePosixPath, data: bytes, *, exclusive: bool = False
) -> bool:
    """Write `data` to `root/relative` (its folders made as needed), never through a link.

    With `exclusive`, a file already there is left as it is (False is returned); else it is
    replaced. True when written.

    Raises:
        UnsafePath: a link on the way or at the end, or something not a regular file there.
    """
    parts = _parts(relative)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    flags |= os.O_EXCL if exclusive else os.O_TRUNC
    try:
        with _folder(root, parts[:-1], make=True) as folder:
            fd = os.open(parts[-1], flags, 0o644, dir_fd=folder)
    except FileExistsError:
        if exclusive:
            return False
        raise
    except OSError as exc:
        raise _refused(exc, root, relative) from None
    with os.fdopen(fd, "wb") as fh:
        _check_regular(fh.fileno(), root, relative)
        fh.write(data)
    return True


def make_folder(root: Path, relative: str | PurePosixPath) -> None:
    """Make the folder `root/relative` and those on the way, never through a link."""
    try:
        with _folder(root, _parts(relative), make=True):
            return
    except OSError as exc:
        raise _refused(exc, root, relative) from None


def _check_regular(fd: int, root: Path, relative: str | PurePosixPath) -> None:
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        raise UnsafePath(errno.EINVAL, f"{root / relative}: refused: not a regular file")
