"""The Streamlit layer shared by app.py and pages/: sidebar, model cache, step controls. The only
package besides app.py and pages/ that imports Streamlit."""
import os

# Why: PyTorch's OpenMP threads spin for a while after every parallel region by default, waiting for the next one.
# Alone that saves ~10 ms of a 125 ms cycle; on a server shared by a class (8 sessions and, in the load test,
# their browsers on the same 2 cores) the spinning threads take CPU the others needed: the median Step under
# 8 sessions was about twice as long (README, "A classroom on one server"). Read once, when libgomp loads, so it
# must be set before the first `import torch` in the server process: app.py imports this package first. A value
# the user exported wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
