"""distzo's Python tools as one package (tools/README.md).

    formats/     distzo's HDF5 model and checkpoint files (numpy, h5py)
    convert/     Hugging Face and GGUF checkpoints to distzo and back
    references/  the specifications in Python: z, the digest, golden fixtures, MeZO
    datasets/    labelled text to distzo classification datasets
    quality/     the quality table: its runs, references and tables
    demo/        the demo's model, and what first-order training reaches
    bench/       perf/'s yardsticks (PyTorch, llama.cpp) and its random model
    requires     the packages a command needs, checked before any work

A module that is a command runs as `python3 tools/NAME.py` (a wrapper beside
this package) or `python3 -m distzo_tools.GROUP.NAME` from tools/. This file
and every subpackage's __init__ but formats' import nothing from outside the
standard library: a command checks its packages before its first import of one.
"""

import os

#: tools/, where the command wrappers are.
TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The repository that holds tools/.
REPO = os.path.dirname(TOOLS)
