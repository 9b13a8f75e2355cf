"""Limits on what archives unpack to: release zips (SNOMED CT, LOINC, RxNorm, ICD-10-CM) and
FHIR package tarballs (``.tgz``).

Every member is read as a stream, never whole (the readers keep what they parse, not the
member's bytes; only a package's JSON resources are parsed whole), and these limits hold for
every archive:

- ``member_bytes``: unpacked bytes of one member (default 8 GiB);
- ``resource_bytes``: unpacked bytes of one package member that is parsed whole, a JSON
  resource (default 128 MiB: the parser holds its bytes, a copy and what they parse to);
- ``total_bytes``: unpacked bytes of all the members of one archive (default 32 GiB);
- ``ratio``: unpacked bytes per compressed byte of one member, and of all the members so far
  (default 100, the bound Apache POI puts on zip entries; text compresses 5 to 20 times),
  checked once they unpack past
- ``ratio_bytes`` (default 1 MiB): a smaller member is never taken for a bomb.

A zip's central directory gives each member's sizes, and Python's ``zipfile`` stops a member
at its declared size (and checks its CRC), so a zip is checked as a whole before any member is
read. A package tarball is one gzip stream: each member's size is in its tar header, checked
before the member is read, and its ratio is measured while it is unpacked (the compressed
bytes read meanwhile, plus one read buffer of slack, so that a member is never blamed for
bytes read before it began); the unpacked total is counted as it grows.

Going over a limit raises ArchiveLimitError (413 ``too-long``) naming the archive, the member,
the limit and the value found. Set the limits for the process with ``configure`` (or
``limits_in_force`` for a block), and for the server with ``server.py --unpack-limit
NAME=VALUE``; sizes take a K, M, G or T suffix (powers of 1024).

>>> configured().ratio
100
>>> UnpackLimits.from_options(["member_bytes=64M", "ratio=50"]).member_bytes
67108864
"""

from __future__ import annotations

import gzip
import re
import zipfile
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields, replace
from typing import IO

from workbench.errors import ArchiveLimitError
from workbench.settings import Setting

_SIZE = re.compile(r"([0-9][0-9_]*)\s*([KMGT]?)(?:I?B)?", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


@dataclass(frozen=True)
class UnpackLimits:
    """The limits on what one archive unpacks to (see the module's text)."""

    member_bytes: int = 8 << 30
    resource_bytes: int = 128 << 20
    total_bytes: int = 32 << 30
    ratio: int = 100
    ratio_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"the unpack limit {item.name} must be a positive integer")

    def with_option(self, option: str) -> UnpackLimits:
        """These limits with one changed by ``NAME=VALUE`` (``member_bytes=2G``)."""
        name, _, value = (part.strip() for part in option.partition("="))
        names = [item.name for item in fields(self)]
        if name not in names:
            raise ValueError(
                f"the unpack limit {name!r} is not known: use NAME=VALUE, NAME one of "
                + ", ".join(names)
            )
        found = _SIZE.fullmatch(value)
        if found is None:
            raise ValueError(
                f"the unpack limit {name} wants a whole number (sizes may end in K, M, G or T), "
                f"not {value!r}"
            )
        number = int(found.group(1).replace("_", "")) * _UNITS[found.group(2).upper()]
        return replace(self, **{name: number})

    @classmethod
    def from_options(cls, options: Iterable[str]) -> UnpackLimits:
        """The defaults changed by each ``NAME=VALUE`` option in turn."""
        found = cls()
        for option in options:
            found = found.with_option(option)
        return found


_LIMITS: Setting[UnpackLimits] = Setting(UnpackLimits())


def configured() -> UnpackLimits:
    """The limits in force for this process."""
    return _LIMITS.get()


def configure(limits: UnpackLimits) -> UnpackLimits:
    """Put ``limits`` in force for the whole process; return the ones they replace."""
    return _LIMITS.set(limits)


def limits_in_force(limits: UnpackLimits) -> AbstractContextManager[UnpackLimits]:
    """Run the block (``with limits_in_force(...):``) with ``limits`` in force, then put
    the previous ones back."""
    return _LIMITS.in_force(limits)


# --- the checks -------------------------------------------------------------------------


def check_member(
    archive: str, member: str, size: int, packed: int | None, limits: UnpackLimits
) -> None:
    """ArchiveLimitError when a member's unpacked ``size`` is over ``member_bytes``, or (with
    its compressed size ``packed``) its ratio is over ``ratio``."""
    if size > limits.member_bytes:
        raise ArchiveLimitError(
            archive,
            member,
            "member_bytes",
            size,
            limits.member_bytes,
            f"unpacks to {size:,} bytes",
        )
    if packed is not None:
        check_ratio(archive, member, size, packed, limits)


def check_ratio(
    archive: str, member: str, unpacked: int, packed: int, limits: UnpackLimits
) -> None:
    """ArchiveLimitError when ``unpacked`` bytes (past ``ratio_bytes``) came from fewer than
    one ``ratio``-th as many ``packed`` bytes: a compression bomb."""
    if unpacked > limits.ratio_bytes and unpacked > limits.ratio * packed:
        found = -(-unpacked // max(packed, 1))  # rounded up: over the limit shows over it
        raise ArchiveLimitError(
            archive,
            member,
            "ratio",
            found,
            limits.ratio,
            f"unpacks to {unpacked:,} bytes from {packed:,} compressed bytes, {found:,} to 1 "
            "(a compression bomb)",
        )


def check_archive_ratio(
    archive: str, member: str, unpacked: int, packed: int, limits: UnpackLimits
) -> None:
    """ArchiveLimitError when the archive's members up to ``member`` unpack (past
    ``ratio_bytes``) to more than ``ratio`` times their compressed bytes: a bomb spread over
    many members, each too small to count alone."""
    if unpacked > limits.ratio_bytes and unpacked > limits.ratio * packed:
        found = -(-unpacked // max(packed, 1))  # rounded up: over the limit shows over it
        raise ArchiveLimitError(
            archive,
            member,
            "ratio",
            found,
            limits.ratio,
            f"brings the archive's members to {unpacked:,} unpacked bytes from {packed:,} "
            f"compressed bytes, {found:,} to 1 (a compression bomb spread over its members)",
        )


def check_total(
    archive: str, member: str, total: int, limits: UnpackLimits, *, declared: bool
) -> None:
    """ArchiveLimitError when the archive's members, up to ``member``, unpack to more than
    ``total_bytes`` (``declared``: by the sizes the archive gives, before reading them)."""
    if total > limits.total_bytes:
        how = "are declared to unpack" if declared else "unpack"
        raise ArchiveLimitError(
            archive,
            member,
            "total_bytes",
            total,
            limits.total_bytes,
            f"brings the archive's members to more bytes than allowed in all: the members up "
            f"to it {how} to {total:,} bytes",
        )


def check_zip(archive: str, infos: Iterable[zipfile.ZipInfo]) -> None:
    """Check every member of a zip by the sizes its central directory gives, before any is
    read (``zipfile`` reads no further than a member's declared size); ArchiveLimitError
    names the first member over a limit."""
    limits = configured()
    total = packed = 0
    for info in infos:
        if info.is_dir():
            continue
        check_member(archive, info.filename, info.file_size, info.compress_size, limits)
        total += info.file_size
        packed += info.compress_size
        check_total(archive, info.filename, total, limits, declared=True)
        check_archive_ratio(archive, info.filename, total, packed, limits)


class _Counted:
    """A compressed file read through: counts the bytes read and the largest single read
    (what the decompressor may hold unconsumed)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.count = 0
        self.largest = 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.count += len(data)
        self.largest = max(self.largest, len(data))
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.raw.seek(offset, whence)


#: What tar adds around the members' bytes: a header and padding per member (more for long
#: names), the end blocks and the record's padding. The unpacked stream may exceed the limit
#: total_bytes by that much (the members' declared sizes are held to it exactly).
_TAR_MEMBER_OVERHEAD = 4 << 10
_TAR_OVERHEAD = 1 << 20


class GzipMeter:
    """A gzip stream (a package tarball) unpacked through the limits: ``read`` gives unpacked
    bytes, counted against ``total_bytes`` and, for the member ``begin`` named last, against
    ``ratio``. Hand it to ``tarfile.open(fileobj=..., mode="r|")``."""

    def __init__(self, raw: IO[bytes], archive: str) -> None:
        self.archive = archive
        self.limits = configured()
        self._counted = _Counted(raw)
        self._unzipped = gzip.GzipFile(fileobj=self._counted, mode="rb")
        self.member = "(before the first member)"
        self._out = 0
        self._declared = 0
        self._start_out = 0
        self._start_in = 0
        self._overhead = _TAR_OVERHEAD  # what tar adds to the members: grows with each

    def begin(self, name: str, size: int, *, whole: bool = False) -> None:
        """A member's header is read: check its declared size (against ``resource_bytes``
        too when it is to be parsed ``whole``) and the declared total, and measure its ratio
        from here."""
        check_member(self.archive, name, size, None, self.limits)
        if whole and size > self.limits.resource_bytes:
            raise ArchiveLimitError(
                self.archive,
                name,
                "resource_bytes",
                size,
                self.limits.resource_bytes,
                f"is a resource of {size:,} bytes, to be parsed whole",
            )
        self._declared += size
        check_total(self.archive, name, self._declared, self.limits, declared=True)
        self.member = name
        self._start_out, self._start_in = self._out, self._counted.count
        self._overhead += _TAR_MEMBER_OVERHEAD

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` unpacked bytes (ArchiveLimitError past a limit)."""
        data = self._unzipped.read(size)
        self._out += len(data)
        if self._out > self.limits.total_bytes + self._overhead:  # bytes outside the members
            check_total(self.archive, self.member, self._out, self.limits, declared=False)
        unpacked = self._out - self._start_out
        if unpacked > self.limits.ratio_bytes:
            packed = self._counted.count - self._start_in + self._counted.largest
            check_ratio(self.archive, self.member, unpacked, packed, self.limits)
        if self._out > self.limits.ratio_bytes:
            packed = self._counted.count + self._counted.largest
            check_archive_ratio(self.archive, self.member, self._out, packed, self.limits)
        return data

    def drain(self, chunk: int = 1 << 20) -> None:
        """Read what follows the tar archive to the end (the gzip checksum is checked there),
        through the same limits."""
        self.begin(f"(after {self.member})", 0)
        while self.read(chunk):
            pass

    def close(self) -> None:
        """Close the gzip stream (not the file under it)."""
        self._unzipped.close()

    def __enter__(self) -> GzipMeter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
