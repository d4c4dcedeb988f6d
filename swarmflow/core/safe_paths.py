"""The one safe-path layer: every host-side read or write in a tree that an agent or a
program can write (a workspace, an offload folder, a harness's private folder and its answer
file, a grading checkout) goes through here.

A path is opened relative to a descriptor of its trusted root, one component at a time, each
with `O_NOFOLLOW`: a symbolic link anywhere below the root (the file itself, or any folder on
the way) is refused, never followed, so a link an agent planted cannot point swarmflow's own
reads and writes outside the tree, whatever happens between a check and the open. What is
read or written must be a regular file (a FIFO is refused at once, never waited on; a device
never read), and a read holds at most `cap` bytes.

Two ways through links. `read_bytes`, `write_bytes`, `replace_bytes`, `open_file` and
`folder` refuse every link. `resolve` gives the real path below the root of a path that goes
through links which all stay inside it (the file tools' links inside a workspace), walking it
the same way, one component at a time, each link read (`readlink`) and replaced by what it
names, never followed by the kernel: a link leading out (an absolute target elsewhere, `..`
past the root) is refused. The real path it gives holds no link, so opening it with the
functions above fails, never escapes, if a link was swapped in since.

Refusals are `UnsafePath` (an `OSError`: callers that already treat a failed read or write as
"not there" keep doing so), with one line naming the path and why; `NotRegular` (one of them)
says what stood where a regular file should be.

What it does not do: the root itself is trusted as given (the caller chose it); a hard link
to a file outside the tree is a regular file inside it (a hard link cannot cross filesystems,
and an agent can only link files it can already read); and it does not stop the agent from
changing the file after swarmflow read it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from swarmflow.core.file_kinds import special_kind

MAX_READ = 16 << 20
"""The most bytes a read takes unless the caller gives its own cap: 16 MiB."""
MAX_LINKS = 40
"""The most links `resolve` replaces in one path (the kernel's own limit)."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafePath(OSError):
    """A path below a root that is a link, not a regular file, or too large."""

    def __str__(self) -> str:
        return str(self.strerror)


class NotRegular(UnsafePath):
    """Something other than a regular file (a folder, a FIFO, a device) where one should be."""

    def __init__(self, where: Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"{where}: refused: {kind}, not a regular file")
        self.kind = kind
        """What is there, in words (`core.file_kinds`): 'a FIFO (named pipe)'."""


def _parts(relative: str | PurePosixPath) -> tuple[str, ...]:
    """The components of a relative path; `UnsafePath` for an absolute one or `..`."""
    path = PurePosixPath(relative)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise UnsafePath(errno.EINVAL, f"{str(relative)!r} is not a plain relative path")
    return tuple(part for part in path.parts if part != ".")


def _steps(relative: str | PurePosixPath) -> tuple[str, ...]:
    """The components of a relative path, none for the root itself (`""`, `"."`, `"./"`)."""
    if not PurePosixPath(relative).parts:  # PurePosixPath drops every "." and trailing "/"
        return ()
    return _parts(relative)


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
    fd = _open_folder(root, parts, make=make)
    try:
        yield fd
    finally:
        os.close(fd)


def _open_folder(root: Path, parts: tuple[str, ...], *, make: bool) -> int:
    """See `_folder`: the descriptor is the caller's to close."""
    fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)
    try:
        for part in parts:
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(root: Path, relative: str | PurePosixPath, cap: int = MAX_READ) -> bytes:
    """The bytes of the regular file `root/relative`, at most `cap` of them.

    Raises:
        FileNotFoundError: it is not there.
        UnsafePath: a link on the way or at the end, not a regular file, larger than `cap`.
    """
    with open_file(root, relative) as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise UnsafePath(errno.EFBIG, f"{root / relative}: larger than {cap:,} bytes")
    return data


@contextlib.contextmanager
def open_file(root: Path, relative: str | PurePosixPath) -> Iterator[BinaryIO]:
    """The regular file `root/relative` open for reading (without blocking: a FIFO is
    refused before anything waits on it).

    Raises:
        FileNotFoundError: it is not there.
        UnsafePath: a link on the way or at the end; `NotRegular`: not a regular file.
    """
    parts = _steps(relative)
    if not parts:  # the root itself: a folder, whatever its path says
        raise NotRegular(root, "a directory")
    try:
        with _folder(root, parts[:-1], make=False) as where:
            fd = os.open(parts[-1], _READ_FLAGS, dir_fd=where)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _refused(exc, root, relative) from None
    with os.fdopen(fd, "rb") as fh:
        _check_regular(fh.fileno(), root, relative)
        yield fh


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


def replace_bytes(root: Path, relative: str | PurePosixPath, data: bytes) -> None:
    """Replace the regular file `root/relative` by `data` at once (a reader sees the old or
    the new content, never half of it), keeping its permissions; folders are made as needed.
    The new content is written to a temporary file beside it, renamed into place: a link
    swapped in at the end is replaced, never written through.

    Raises:
        UnsafePath: a link on the way or at the end; `NotRegular`: a folder, a FIFO, a
            device there.
    """
    parts = _parts(relative)
    try:
        with _folder(root, parts[:-1], make=True) as where:
            mode = _existing_mode(where, parts[-1], root, relative)
            temporary = f".swarmflow-{secrets.token_hex(8)}"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(temporary, flags, 0o600, dir_fd=where)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    os.fchmod(fh.fileno(), mode)
                os.replace(temporary, parts[-1], src_dir_fd=where, dst_dir_fd=where)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=where)
                raise
    except UnsafePath:
        raise
    except OSError as exc:
        raise _refused(exc, root, relative) from None


def _existing_mode(where: int, name: str, root: Path, relative: str | PurePosixPath) -> int:
    """The permissions of the regular file `name` in the folder `where` (0o644 when there
    is none); `UnsafePath` for a link, `NotRegular` for anything else there."""
    try:
        info = os.stat(name, dir_fd=where, follow_symlinks=False)
    except FileNotFoundError:
        return 0o644
    if stat.S_ISLNK(info.st_mode):
        raise _refused(OSError(errno.ELOOP, "a link"), root, relative)
    kind = special_kind(info.st_mode)
    if kind is not None:
        raise NotRegular(root / relative, kind)
    return stat.S_IMODE(info.st_mode)


@contextlib.contextmanager
def folder(root: Path, relative: str | PurePosixPath = "") -> Iterator[int]:
    """A descriptor of the folder `root/relative` (`""`: the root), reached without
    following any link (`UnsafePath` for a link or a non-folder on the way)."""
    try:
        fd = _open_folder(root, _steps(relative), make=False)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _refused(exc, root, relative) from None
    try:
        yield fd
    finally:
        os.close(fd)


def lstat(root: Path, relative: str | PurePosixPath) -> os.stat_result:
    """What `root/relative` is (a link at the end is told as one, not followed), reached
    without following any link on the way."""
    parts = _steps(relative)
    if not parts:
        return os.stat(root)
    try:
        with _folder(root, parts[:-1], make=False) as where:
            return os.stat(parts[-1], dir_fd=where, follow_symlinks=False)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _refused(exc, root, relative) from None


def resolve(root: Path, relative: str | PurePosixPath) -> PurePosixPath:
    """The real path, below `root`, of `root/relative`: every link on the way and at the
    end replaced by what it names, as long as that stays below `root` (`""` for the root);
    the components past the last one there are kept as they are.

    Raises:
        UnsafePath: a link that leads out of `root` (an absolute target elsewhere, `..` past
            the root), more than `MAX_LINKS` links, a non-folder on the way.
    """
    walk = _Walk(root, relative)
    try:
        return walk.run()
    except UnsafePath:
        raise
    except OSError as exc:
        raise _refused(exc, root, relative) from None
    finally:
        walk.close()


class _Walk:
    """One `resolve`: the real folders reached so far, each held open, so that what comes
    next is looked up inside them and never through a link."""

    def __init__(self, root: Path, relative: str | PurePosixPath) -> None:
        self.root, self.relative = root, relative
        self.real_root = PurePosixPath(os.path.realpath(root))
        self.todo = list(_steps(relative))
        self.done: list[str] = []
        self.hops = 0
        self.fds = [os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)]

    def run(self) -> PurePosixPath:
        while self.todo:
            part = self.todo.pop(0)
            if part == "..":  # only from a link's target: `done` holds no link
                self._up()
                continue
            try:
                info = os.stat(part, dir_fd=self.fds[-1], follow_symlinks=False)
            except FileNotFoundError:
                if ".." in self.todo:
                    raise self._escape() from None
                return PurePosixPath(*self.done, part, *self.todo)
            if stat.S_ISLNK(info.st_mode):
                self._replace_link(part)
            else:
                self._enter(part)
        return PurePosixPath(*self.done)

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)

    def _up(self) -> None:
        if not self.done:
            raise self._escape()
        self.done.pop()
        os.close(self.fds.pop())

    def _enter(self, part: str) -> None:
        """Go into `part`, held open when more follows (`O_NOFOLLOW`: a link swapped in
        since the look is refused)."""
        if self.todo:
            self.fds.append(os.open(part, _DIR_FLAGS, dir_fd=self.fds[-1]))
        self.done.append(part)

    def _replace_link(self, part: str) -> None:
        """Put what the link `part` names in its place (from the root when absolute)."""
        self.hops += 1
        if self.hops > MAX_LINKS:
            where = self.root / self.relative
            raise UnsafePath(errno.ELOOP, f"{where}: more than {MAX_LINKS} links")
        target = PurePosixPath(os.readlink(part, dir_fd=self.fds[-1]))
        if target.is_absolute():
            if not target.is_relative_to(self.real_root) or ".." in target.parts:
                raise self._escape()
            target = target.relative_to(self.real_root)
            while len(self.fds) > 1:
                os.close(self.fds.pop())
            self.done.clear()
        self.todo[:0] = [p for p in target.parts if p != "."]

    def _escape(self) -> UnsafePath:
        where, root = self.root / self.relative, self.root
        return UnsafePath(errno.EXDEV, f"{where}: refused: a symbolic link leads out of {root}")


def remove(root: Path, relative: str | PurePosixPath) -> None:
    """Remove the file (or link, itself) `root/relative`, reached without following any link
    on the way; nothing there is not an error.

    Raises:
        UnsafePath: a link or a non-folder on the way.
    """
    parts = _parts(relative)
    try:
        with _folder(root, parts[:-1], make=False) as where:
            os.unlink(parts[-1], dir_fd=where)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _refused(exc, root, relative) from None


def make_folder(root: Path, relative: str | PurePosixPath) -> None:
    """Make the folder `root/relative` and those on the way, never through a link."""
    try:
        with _folder(root, _parts(relative), make=True):
            return
    except OSError as exc:
        raise _refused(exc, root, relative) from None


def _check_regular(fd: int, root: Path, relative: str | PurePosixPath) -> None:
    kind = special_kind(os.fstat(fd).st_mode)
    if kind is not None:
        raise NotRegular(root / relative, kind)
