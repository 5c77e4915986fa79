"""Writes an input and the output folded-state.textproto's model computes
from it (y = x + every initializer, broadcast), read from the textproto's
own values: the import must compute the same after tracing the folded
initializers back to their parameters."""
import re
import sys

import numpy as np

text = open(sys.argv[1]).read()
x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10
y = x.copy()
for dims, data in re.findall(r"initializer \{ name: \"\w+\" data_type: 1 ((?:dims: \d+ )+)float_data: \[([^\]]*)\]", text):
    shape = [int(d) for d in re.findall(r"\d+", dims)]
    y = y + np.array([float(v) for v in data.split(",")], dtype=np.float32).reshape(shape)
x.tofile(sys.argv[2])
y.astype(np.float32).tofile(sys.argv[3])
