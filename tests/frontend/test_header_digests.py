"""A header folder's content digest, kept with the listing it was taken from: taken again while every file's path,
size, modification time and inode stand, read again when one of them moves; the digest is the files' content's."""

import os
import shutil

import pytest

from helpers import walked_digest
from kernel_ports.frontend import headers


@pytest.fixture()
def folder(tmp_path):
    """A copy of the bundled MLX stubs, and no digest kept or cached in this process meanwhile."""
    shutil.copytree(headers.STUBS_DIR, tmp_path / "include")
    saved = dict(headers.KEPT_DIGESTS)
    headers.KEPT_DIGESTS.clear()
    headers._dir_digest.cache_clear()
    yield str(tmp_path / "include")
    headers.KEPT_DIGESTS.clear()
    headers.KEPT_DIGESTS.update(saved)
    headers._dir_digest.cache_clear()


def _again(d: str, top: str = "mlx") -> str:
    """The digest a new process that inherited this one's kept digests takes (the per-process memo emptied)."""
    headers._dir_digest.cache_clear()
    return headers._dir_digest(d, top)


def _planted(d: str, top: str = "mlx") -> str:
    """Replace the kept digest of ``d/top`` with a marker under the same listing: a digest equal to it was taken
    from memory, not from the files."""
    signature, _ = headers.KEPT_DIGESTS[(d, top)]
    headers.KEPT_DIGESTS[(d, top)] = (signature, "planted")
    return "planted"


def test_the_digest_is_the_content_digest_and_is_kept_with_its_listing(folder):
    assert headers._dir_digest(folder, "mlx") == walked_digest(folder, "mlx")
    assert (folder, "mlx") in headers.KEPT_DIGESTS
    assert [[folder, "mlx", headers.KEPT_DIGESTS[(folder, "mlx")][0], walked_digest(folder, "mlx")]] \
        == headers.kept_digests()


def test_an_unchanged_listing_takes_the_kept_digest(folder):
    headers._dir_digest(folder, "mlx")
    planted = _planted(folder)
    assert _again(folder) == planted


@pytest.mark.parametrize("change", ["size", "modification time", "file added", "file removed", "file replaced"])
def test_a_listing_that_moved_reads_the_files_again(folder, change):
    headers._dir_digest(folder, "mlx")
    _planted(folder)
    header = os.path.join(folder, "mlx", "array.h")
    st = os.stat(header)
    if change == "size":
        with open(header, "ab") as f:
            f.write(b"\n")
        os.utime(header, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif change == "modification time":
        os.utime(header, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    elif change == "file added":
        with open(os.path.join(folder, "mlx", "extra.h"), "w") as f:
            f.write("#pragma once\n")
    elif change == "file removed":
        os.unlink(os.path.join(folder, "mlx", "random.h"))
    else:  # the same bytes, size and time in a new file put in its place: another inode (as an installer does)
        with open(header + ".new", "wb") as f:
            f.write(open(header, "rb").read())
        os.utime(header + ".new", ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(header + ".new", header)
    assert _again(folder) == walked_digest(folder, "mlx") != "planted"


def test_only_well_formed_reports_are_kept_and_no_more_than_the_bound(folder, monkeypatch):
    headers.keep_digests([["/a", "mlx", "sig", "digest"], ["/b", "mlx", 3, "digest"], ["/c", "mlx"], "x"])
    headers.keep_digests({"not": "a list"})
    assert headers.KEPT_DIGESTS == {("/a", "mlx"): ("sig", "digest")}
    monkeypatch.setattr(headers, "MAX_KEPT_DIGESTS", 2)
    headers.keep_digests([["/b", "", "s", "d"], ["/c", "", "s", "d"], ["/a", "mlx", "sig2", "digest2"]])
    assert headers.KEPT_DIGESTS == {("/a", "mlx"): ("sig2", "digest2"), ("/b", ""): ("s", "d")}
