#!/usr/bin/python3
"""png_close.py WORK FIRST NAME...: each PNG NAME (relative to WORK, e.g. ./figures/fig9.png)
equals FIRST/<its file name> but for anti-aliasing noise: at most 16 pixels, by at most 3/255.
Prints a warning per PNG that differs so; exits 1 naming the first that differs beyond it."""
import os
import sys

import matplotlib.image as mimg
import numpy as np

MAX_PIXELS, MAX_SHADE = 16, 3 / 255 + 1e-6

work, first, names = sys.argv[1], sys.argv[2], sys.argv[3:]
for n in names:
    a = mimg.imread(os.path.join(work, n))
    b = mimg.imread(os.path.join(first, os.path.basename(n)))
    if a.shape != b.shape:
        sys.exit(f"{n}: another size than the first run's")
    d = np.abs(a - b).max(axis=2)
    if (d > 0).sum() > MAX_PIXELS or d.max() > MAX_SHADE:
        sys.exit(f"{n}: {(d > 0).sum()} pixels differ, by up to {round(float(d.max()) * 255)}/255")
    print(f"figures_test: WARNING: {n} differs from the first run in {(d > 0).sum()} pixel(s) by "
          f"at most {round(float(d.max()) * 255)}/255 (known defect, README)")
