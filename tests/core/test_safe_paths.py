"""The safe-path layer, attacked as a program that writes the tree would: links at the end
and on the way, a FIFO, a huge file, `..` and absolute paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swarmflow.core.safe_paths import (
    NotRegular,
    UnsafePath,
    make_folder,
    read_bytes,
    remove,
    resolve,
    write_bytes,
)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret").write_text("host secret")
    return root, outside


def test_a_file_reads_and_writes_inside_its_root(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    assert write_bytes(root, "a/b/c.txt", b"hello")
    assert read_bytes(root, "a/b/c.txt") == b"hello"
    assert not write_bytes(root, "a/b/c.txt", b"again", exclusive=True)
    assert read_bytes(root, "a/b/c.txt") == b"hello"
    make_folder(root, "d/e")
    assert (root / "d" / "e").is_dir()


def test_a_link_as_the_file_is_neither_read_nor_written(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    (root / "answer").symlink_to(outside / "secret")
    with pytest.raises(UnsafePath, match="symbolic link"):
        read_bytes(root, "answer")
    with pytest.raises(UnsafePath, match="symbolic link"):
        write_bytes(root, "answer", b"overwritten")
    assert not write_bytes(root, "answer", b"overwritten", exclusive=True)
    assert (outside / "secret").read_text() == "host secret"


def test_a_link_on_the_way_is_never_followed(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    (root / "dir").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePath, match="symbolic link"):
        read_bytes(root, "dir/secret")
    with pytest.raises(UnsafePath):
        write_bytes(root, "dir/new", b"x")
    with pytest.raises(UnsafePath):
        make_folder(root, "dir/sub")
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]


def test_a_fifo_is_refused_at_once_and_a_huge_file_at_its_cap(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    os.mkfifo(root / "pipe")
    with pytest.raises(UnsafePath, match="not a regular file"):
        read_bytes(root, "pipe")  # never waits for a writer
    (root / "big").write_bytes(b"x" * 2_000)
    with pytest.raises(UnsafePath, match="larger than 1,000 bytes"):
        read_bytes(root, "big", cap=1_000)


@pytest.mark.parametrize("path", ["../outside/secret", "/etc/passwd", "a/../../x"])
def test_paths_that_leave_the_root_are_refused(tree: tuple[Path, Path], path: str) -> None:
    root, _ = tree
    with pytest.raises(UnsafePath, match="not a plain relative path"):
        read_bytes(root, path)


@pytest.mark.parametrize("path", ["", ".", "./", "./."])
def test_the_root_itself_is_a_folder_not_a_file(tree: tuple[Path, Path], path: str) -> None:
    root, _ = tree
    with pytest.raises(NotRegular, match="a directory, not a regular file"):
        read_bytes(root, path)


def test_a_missing_file_is_file_not_found(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    with pytest.raises(FileNotFoundError):
        read_bytes(root, "nothing/here")


def test_remove_takes_the_link_itself_and_never_goes_through_one(
    tree: tuple[Path, Path],
) -> None:
    root, outside = tree
    (root / "answer").symlink_to(outside / "secret")
    remove(root, "answer")
    assert not (root / "answer").is_symlink()
    (root / "dir").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePath, match="symbolic link"):
        remove(root, "dir/secret")
    remove(root, "nothing/here")  # not there: nothing to do
    assert (outside / "secret").read_text() == "host secret"


def test_resolve_replaces_links_that_stay_inside_and_refuses_those_that_leave(
    tree: tuple[Path, Path],
) -> None:
    root, outside = tree
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("a")
    (root / "alias").symlink_to("docs")
    (root / "absolute").symlink_to(root.resolve() / "docs" / "a.md")
    (root / "docs" / "up").symlink_to("../alias/a.md")
    assert str(resolve(root, "alias/a.md")) == "docs/a.md"
    assert str(resolve(root, "absolute")) == "docs/a.md"
    assert str(resolve(root, "docs/up")) == "docs/a.md"
    assert str(resolve(root, "alias/new/file")) == "docs/new/file"  # not there yet
    assert str(resolve(root, "")) == "."
    (root / "out").symlink_to(outside)
    (root / "dotdot").symlink_to("../outside/secret")
    (root / "loop").symlink_to("loop")
    for path in ["out/secret", "dotdot", "docs/../../outside"]:
        with pytest.raises(UnsafePath):
            resolve(root, path)
    with pytest.raises(UnsafePath, match="more than 40 links"):
        resolve(root, "loop")
