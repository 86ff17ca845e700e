"""Zip archives as an attacker writes them (no tests here): one deflated payload stored under
many member names, so an archive of a few hundred kilobytes inflates to hundreds of megabytes
without the test compressing them. The layout is the zip format's own (APPNOTE 4.3: local
file headers and data, then the central directory and its end record), readable by `zipfile`.
"""

from __future__ import annotations

import struct
import zlib


def repeated_member_zip(payload: bytes, count: int, *, extra: dict[str, bytes] | None = None,
                        ) -> bytes:
    """`count` members (`m0000`, `m0001`, ...) each inflating to `payload`, then `extra`'s
    members; every member deflated once and its compressed bytes reused."""
    entries: list[tuple[bytes, bytes, int, int]] = []  # name, deflated, crc, size

    def deflated(data: bytes) -> bytes:
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        return compressor.compress(data) + compressor.flush()

    shared = deflated(payload)
    crc = zlib.crc32(payload)
    entries += [(f"m{i:04d}".encode(), shared, crc, len(payload)) for i in range(count)]
    entries += [(name.encode(), deflated(data), zlib.crc32(data), len(data))
                for name, data in (extra or {}).items()]
    out, central = bytearray(), bytearray()
    for name, data, member_crc, size in entries:
        offset = len(out)
        out += struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 8, 0, 0x21, member_crc,
                           len(data), size, len(name), 0) + name + data
        central += struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, 8, 0, 0x21,
                               member_crc, len(data), size, len(name), 0, 0, 0, 0, 0,
                               offset) + name
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, len(entries), len(entries),
                      len(central), len(out), 0)
    return bytes(out + central + end)
