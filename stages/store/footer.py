"""Dropping the min/max statistics of free-text columns from a Parquet footer.

A footer is stored uncompressed, and a text column's statistics are the
smallest and largest values of every row group (DuckDB keeps 256 bytes of
each): message text readable with ``strings``, outside the compressed pages.
They prune nothing (no query filters on a message's sort order), so every part
is written without them. pyarrow takes a list of columns to keep statistics
for; DuckDB's COPY has no such option, so its parts have their footer rewritten
here, before the part is renamed into place.

The footer is Thrift's compact protocol (parquet.thrift). It is parsed into
a tree whose leaves keep their encoded bytes, the ``statistics`` field (12) of
each matching column's ``ColumnMetaData`` is left out, and the tree is written
back: every offset in the footer points before it, so nothing else moves.
"""

from __future__ import annotations

import os
import struct
from typing import Iterable

_MAGIC = b"PAR1"
# compact-protocol type ids
_TRUE, _FALSE, _I8, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT, _UUID = range(1, 14)
# field ids in parquet.thrift
_FMD_ROW_GROUPS, _RG_COLUMNS, _CC_META, _CMD_PATH, _CMD_STATISTICS = 4, 1, 3, 3, 12


class FooterError(ValueError):
    pass


def strip_statistics(path: str | os.PathLike, columns: Iterable[str]) -> bool:
    """Remove the statistics of top-level ``columns`` from the file's footer in
    place; returns whether anything was removed."""
    names = {c.encode() for c in columns}
    with open(path, "r+b") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        if size < 12:
            raise FooterError(f"{path}: too short for a Parquet file")
        fh.seek(size - 8)
        tail = fh.read(8)
        if tail[4:] != _MAGIC:
            raise FooterError(f"{path}: no Parquet footer")
        length = struct.unpack("<I", tail[:4])[0]
        start = size - 8 - length
        if start < 4:
            raise FooterError(f"{path}: footer length out of range")
        fh.seek(start)
        raw = fh.read(length)
        tree, end = _Reader(raw).struct(0)
        if end != length:
            raise FooterError(f"{path}: footer does not parse to its length")
        if not _drop(tree, names):
            return False
        out = bytearray()
        _write_struct(out, tree)
        fh.seek(start)
        fh.write(bytes(out))
        fh.write(struct.pack("<I", len(out)))
        fh.write(_MAGIC)
        fh.truncate()
    return True


def _drop(fmd: list, names: set[bytes]) -> bool:
    dropped = False
    for fid, typ, val in fmd:
        if fid != _FMD_ROW_GROUPS or typ != _LIST:
            continue
        for rg in val[1]:
            for rfid, rtyp, rval in rg:
                if rfid != _RG_COLUMNS or rtyp != _LIST:
                    continue
                for chunk in rval[1]:
                    for cfid, ctyp, meta in chunk:
                        if cfid == _CC_META and ctyp == _STRUCT and _path_head(meta) in names:
                            before = len(meta)
                            meta[:] = [f for f in meta if f[0] != _CMD_STATISTICS]
                            dropped |= len(meta) != before
    return dropped


def _path_head(meta: list) -> bytes | None:
    for fid, typ, val in meta:
        if fid == _CMD_PATH and typ == _LIST and val[1]:
            raw = val[1][0]  # a BINARY leaf: varint length, then the bytes
            n, pos = _varint(raw, 0)
            return raw[pos:pos + n]
    return None


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = out = 0
    while True:
        if pos >= len(buf):
            raise FooterError("footer ends inside a number")
        b = buf[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        if not b & 0x80:
            return out, pos
        shift += 7


def _put_varint(out: bytearray, n: int) -> None:
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return


class _Reader:
    """Structs become lists of [field id, type, value]; lists (etype, [values]);
    every other value the bytes that encoded it, written back as they were."""

    def __init__(self, buf: bytes):
        self.buf = buf

    def struct(self, pos: int) -> tuple[list, int]:
        fields, last = [], 0
        while True:
            if pos >= len(self.buf):
                raise FooterError("footer ends inside a struct")
            head = self.buf[pos]
            pos += 1
            if head == 0:
                return fields, pos
            typ, delta = head & 0x0F, head >> 4
            if delta:
                fid = last + delta
            else:
                z, pos = _varint(self.buf, pos)
                fid = (z >> 1) ^ -(z & 1)
            last = fid
            if typ in (_TRUE, _FALSE):
                fields.append([fid, typ, b""])
                continue
            val, pos = self.value(typ, pos)
            fields.append([fid, typ, val])

    def value(self, typ: int, pos: int):
        buf = self.buf
        if typ == _STRUCT:
            return self.struct(pos)
        if typ in (_LIST, _SET):
            head = buf[pos]
            pos += 1
            n, etype = head >> 4, head & 0x0F
            if n == 15:
                n, pos = _varint(buf, pos)
            items = []
            for _ in range(n):
                if etype in (_TRUE, _FALSE):  # a bool element is one byte
                    items.append(buf[pos:pos + 1])
                    pos += 1
                else:
                    v, pos = self.value(etype, pos)
                    items.append(v)
            return (etype, items), pos
        start = pos
        if typ in (_I16, _I32, _I64):
            _, pos = _varint(buf, pos)
        elif typ == _I8:
            pos += 1
        elif typ == _DOUBLE:
            pos += 8
        elif typ == _UUID:
            pos += 16
        elif typ == _BINARY:
            n, pos = _varint(buf, pos)
            pos += n
        elif typ == _MAP:
            n, pos = _varint(buf, pos)
            if n:
                kv = buf[pos]
                pos += 1
                for _ in range(n):
                    for t in (kv >> 4, kv & 0x0F):
                        if t in (_TRUE, _FALSE):
                            pos += 1
                        else:
                            _, pos = self.value(t, pos)
        else:
            raise FooterError(f"unknown compact type {typ}")
        if pos > len(buf):
            raise FooterError("footer ends inside a value")
        return buf[start:pos], pos


def _write_struct(out: bytearray, fields: list) -> None:
    last = 0
    for fid, typ, val in fields:
        delta = fid - last
        if 0 < delta <= 15:
            out.append((delta << 4) | typ)
        else:
            out.append(typ)
            _put_varint(out, (fid << 1) ^ (fid >> 63))
        last = fid
        if typ not in (_TRUE, _FALSE):
            _write_value(out, typ, val)
    out.append(0)


def _write_value(out: bytearray, typ: int, val) -> None:
    if typ == _STRUCT:
        _write_struct(out, val)
    elif typ in (_LIST, _SET):
        etype, items = val
        if len(items) < 15:
            out.append((len(items) << 4) | etype)
        else:
            out.append(0xF0 | etype)
            _put_varint(out, len(items))
        for item in items:
            if etype in (_TRUE, _FALSE):
                out += item
            else:
                _write_value(out, etype, item)
    else:
        out += val
