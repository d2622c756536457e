#!/usr/bin/python3
"""check_figures.py OUT: checks what scripts/make_figures.sh wrote into OUT.

1. Every figure (fig1..fig11) exists as PNG and PDF, is non-trivial in size, and the PNG is a real
   image of reasonable dimensions (read from its IHDR chunk), and REPORT.md embeds it.
2. Every row of REPORT.md's headline table: the numbers in the "this run" cell, in order, equal the
   values at the JSON pointers its source cell cites (files metronome wrote under OUT/data/),
   to the precision printed; strings (which cap binds) appear in the cell; null reads "none".
   Parsing is independent of scripts/paper_figures/, which wrote them: only the report text and
   the JSON files are read.
"""
import json
import os
import re
import struct
import sys

FIGURES = ["fig1_cliff_vs_ramp", "fig2_pool_fill", "fig3_silent_failure", "fig4_metastability",
           "fig5_admission", "fig6_prediction", "fig7_capacity", "fig8_quality",
           "fig9_exhaustion", "fig10_fleet_admission", "fig11_fleet_size"]
if os.environ.get("METRONOME_FIGURES_NO_QUALITY"):
    FIGURES.remove("fig8_quality")  # sanitized builds skip the real model
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
SOURCE = re.compile(r"`([^`#]+)#([^`]*)`(?:\s*x([0-9.]+))?")

errors = []


def fail(msg):
    errors.append(msg)
    print("FAIL: " + msg)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def check_figures(out, report):
    for name in FIGURES:
        png = os.path.join(out, "figures", name + ".png")
        pdf = os.path.join(out, "figures", name + ".pdf")
        for p, min_bytes in ((png, 20_000), (pdf, 10_000)):
            if not os.path.isfile(p):
                fail(f"{p} missing")
            elif os.path.getsize(p) < min_bytes:
                fail(f"{p} is only {os.path.getsize(p)} bytes")
        if os.path.isfile(png):
            wh = png_size(png)
            if wh is None:
                fail(f"{png} is not a PNG")
            elif wh[0] < 800 or wh[1] < 500:
                fail(f"{png} is {wh[0]}x{wh[1]} pixels, expected at least 800x500")
        if os.path.isfile(pdf):
            with open(pdf, "rb") as f:
                if f.read(5) != b"%PDF-":
                    fail(f"{pdf} is not a PDF")
        if f"](figures/{name}.png)" not in report:
            fail(f"REPORT.md does not embed figures/{name}.png")


def resolve(doc, ptr):
    for part in ptr.strip("/").split("/"):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def check_table(out, report):
    rows = [l for l in report.splitlines() if l.startswith("| ") and "`" in l]
    if len(rows) < 10:
        fail(f"REPORT.md has {len(rows)} sourced table rows, expected the headline table")
    checked = 0
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) != 4:
            fail(f"table row with {len(cells)} cells: {row}")
            continue
        value, source = cells[2], cells[3]
        refs = SOURCE.findall(source)
        if not refs:
            fail(f"row without a source: {row}")
            continue
        numeric, strings = [], []
        for rel, ptr, scale in refs:
            path = os.path.join(out, "data", rel)
            if not os.path.isfile(path):
                fail(f"source {rel} does not exist")
                continue
            with open(path) as f:
                v = resolve(json.load(f), ptr)
            if v is None:
                if "none" not in value:
                    fail(f"{rel}#{ptr} is null but the cell reads '{value}'")
            elif isinstance(v, str):
                if v not in value:
                    fail(f"{rel}#{ptr} is '{v}' but the cell reads '{value}'")
                strings.append(v)
            elif isinstance(v, bool):
                fail(f"{rel}#{ptr} is a boolean; the report should not print it as a number")
            else:
                numeric.append((rel, ptr, v * float(scale) if scale else v))
        # A cited string's digits (a GPU named h200) are not numbers of the cell.
        rest = value
        for v in strings:
            rest = rest.replace(v, " ", 1)
        tokens = [m.group(0) for m in NUMBER.finditer(rest)]
        if len(tokens) != len(numeric):
            fail(f"cell '{value}' has {len(tokens)} numbers but cites {len(numeric)}: {row}")
            continue
        for tok, (rel, ptr, v) in zip(tokens, numeric):
            decimals = len(tok.split(".")[1]) if "." in tok and "e" not in tok.lower() else 0
            tol = 0.5 * 10 ** -decimals + 1e-9 * max(1.0, abs(v))
            if abs(float(tok) - v) > tol:
                fail(f"'{tok}' in '{value}' but {rel}#{ptr} = {v!r}")
            checked += 1
    print(f"check_figures: {len(rows)} table rows, {checked} numbers equal their sources")


def main():
    out = sys.argv[1]
    with open(os.path.join(out, "REPORT.md")) as f:
        report = f.read()
    check_figures(out, report)
    check_table(out, report)
    if not os.environ.get("METRONOME_FIGURES_NO_QUALITY") and "`fig8/quality.json#" not in report:
        fail("REPORT.md has no quality-ablation rows read from fig8/quality.json")
    if errors:
        print(f"check_figures: {len(errors)} problem(s)")
        sys.exit(1)
    print("check_figures: all figures present, every reported number matches its source")


if __name__ == "__main__":
    main()
