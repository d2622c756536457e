#!/usr/bin/env python3
"""Plain text of one Jane Austen novel from the R package janeaustenr (Debian r-cran-janeaustenr).

The package keeps its data as an R lazy-load database: data/Rdata.rdx (a gzip-compressed serialized
index: variable name -> [offset, length] in Rdata.rdb) and data/Rdata.rdb (one blob per variable:
4-byte big-endian uncompressed length, then a zlib stream of an R serialization, XDR format). Each
novel is a character vector of the Project Gutenberg lines, "" for a blank line. This reads only
what those files hold (strings, ints, doubles, lists, pairlists, symbols); anything else is an error.

Output: the lines joined with "\n" (the hard-wrapped Gutenberg text), UTF-8, ending in "\n".
  scripts/austen_text.py PACKAGE_DIR prideprejudice OUT.txt
"""
import gzip
import os
import struct
import sys
import zlib

from atomic_file import replacing


def die(msg):
    """Bad input (a missing, truncated or foreign file; a bad argument): exit 2."""
    print(f"austen_text: {msg}", file=sys.stderr)
    sys.exit(2)


class RReader:
    """R unserialize for format 2/3 XDR ('X\\n'): big-endian ints, doubles and strings."""

    def __init__(self, data, where):
        self.d, self.o, self.where, self.refs = data, 0, where, []

    def fail(self, what):
        die(f"{self.where}: byte {self.o}: {what}")

    def int(self):
        (v,) = struct.unpack_from(">i", self.d, self.o)
        self.o += 4
        return v

    def length(self):
        n = self.int()
        if n == -1:  # long vector: two 32-bit halves
            hi, lo = self.int(), self.int()
            n = (hi << 32) + lo
        return n

    def read(self):
        if self.d[:2] != b"X\n":
            self.fail("expected R serialization format 'X\\n' (XDR)")
        self.o = 2
        # A truncated or corrupt stream runs off the end of the data or refers to a missing symbol.
        try:
            version = self.int()
            self.int(), self.int()  # writer R version, minimal reader version
            if version == 3:
                n = self.int()  # native encoding name
                self.o += n
            elif version != 2:
                self.fail(f"serialization version {version}, expected 2 or 3")
            return self.item()
        except (struct.error, IndexError, RecursionError) as e:
            self.fail(f"truncated or corrupt R serialization ({e})")

    def item(self):
        flags = self.int()
        kind, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
        if kind == 254 or kind in (242, 241, 247, 251, 252, 253):  # NULL and special environments
            return None
        if kind == 255:  # reference to an earlier symbol or environment
            i = flags >> 8
            return self.refs[(i if i else self.int()) - 1]
        if kind == 1:  # symbol: its name follows as a CHARSXP
            name = self.item()
            self.refs.append(name)
            return name
        if kind in (2, 17):  # pairlist (attributes, argument lists)
            out = {}
            while kind in (2, 17):
                attr = self.item() if has_attr else None
                tag = self.item() if has_tag else None
                out[tag] = self.item()
                del attr
                flags = self.int()
                kind, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
            if kind != 254:
                self.fail(f"pairlist ends in type {kind}, expected NULL (254)")
            return out
        if kind == 9:  # CHARSXP: -1 is NA
            n = self.int()
            if n == -1:
                return None
            if n < 0 or self.o + n > len(self.d):
                self.fail(f"string of {n} bytes runs past the end ({len(self.d)} bytes)")
            s = self.d[self.o:self.o + n]
            self.o += n
            # gp bits 2/3: Latin-1 / UTF-8; ASCII and UTF-8 decode alike.
            return s.decode("latin-1" if flags & (1 << 14) else "utf-8")
        if kind == 16:  # character vector
            value = [self.item() for _ in range(self.length())]
        elif kind in (10, 13):  # logical, integer
            n = self.length()
            value = list(struct.unpack_from(f">{n}i", self.d, self.o))
            self.o += 4 * n
        elif kind == 14:  # double
            n = self.length()
            value = list(struct.unpack_from(f">{n}d", self.d, self.o))
            self.o += 8 * n
        elif kind == 19:  # list
            value = [self.item() for _ in range(self.length())]
        else:
            self.fail(f"unsupported R type {kind}")
        if has_attr:
            attrs = self.item()
            names = attrs.get("names") if isinstance(attrs, dict) else None
            if kind == 19 and names:
                value = dict(zip(names, value))
        return value


def main():
    if len(sys.argv) != 4:
        print("usage: austen_text.py PACKAGE_DIR NOVEL OUT.txt", file=sys.stderr)
        sys.exit(2)
    pkg, novel, out = sys.argv[1:]
    rdx = f"{pkg}/data/Rdata.rdx"
    try:
        with gzip.open(rdx, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as e:  # missing, not gzip (BadGzipFile), or cut short (EOFError)
        die(f"{rdx}: cannot read a gzip-compressed R index ({e}); PACKAGE_DIR must be the "
            f"janeaustenr package folder")
    index = RReader(raw, rdx).read()
    variables = index.get("variables") if isinstance(index, dict) else None
    if not variables or novel not in variables:
        names = sorted(variables) if isinstance(variables, dict) else []
        die(f"{rdx}: no variable '{novel}'; it has {names}")
    where = variables[novel]
    if not (isinstance(where, list) and len(where) == 2 and all(x is not None for x in where)):
        die(f"{rdx}: '{novel}': expected [offset, length], got {where!r}")
    offset, length = (int(x) for x in where)
    rdb = f"{pkg}/data/Rdata.rdb"
    try:
        with open(rdb, "rb") as f:
            f.seek(offset)
            blob = f.read(length)
    except OSError as e:
        die(f"{rdb}: cannot read ({e})")
    if len(blob) != length or length < 4:
        die(f"{rdb}: '{novel}' needs {length} bytes at {offset}, the file has {len(blob)} there")
    (size,) = struct.unpack_from(">I", blob, 0)
    try:
        data = zlib.decompress(blob[4:])
    except zlib.error as e:
        die(f"{rdb}: '{novel}' is not a zlib stream ({e})")
    if len(data) != size:
        die(f"{rdb}: '{novel}' inflates to {len(data)} bytes, header says {size}")
    lines = RReader(data, f"{rdb}:{novel}").read()
    if not isinstance(lines, list) or not all(isinstance(s, str) for s in lines):
        die(f"{rdb}: '{novel}' is not a character vector")
    try:
        with replacing(out) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write("\n".join(lines).strip("\n") + "\n")
    except OSError as e:
        die(f"OUT {out}: cannot write ({e})")
    print(f"austen_text: {novel}: {len(lines)} lines -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
