# lit configuration for cleave: FileCheck tests of passes and ops,
# -verify-diagnostics tests of every error, and runs of the tools.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "cleave"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "models", "unit", "lit.cfg.py",
                   "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.cleave_obj_root, "test")

config.substitutions.append(("%models", os.path.join(config.test_source_root, "models")))
# Checks written in Python (the repository's scripts/), run by the Python
# that runs lit.
import sys
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%scripts", os.path.join(
    os.path.dirname(config.test_source_root), "scripts")))
config.substitutions.append(("%bench", os.path.join(
    os.path.dirname(config.test_source_root), "bench")))
config.substitutions.append(("%repo", os.path.dirname(config.test_source_root)))
config.substitutions.append(("%cleave_obj_root", config.cleave_obj_root))
# A Python with the test-only PyPI packages (scripts/setup.sh test makes it
# in the build directory): "safetensors" where Hugging Face's reader is
# there to read back what `cleave checkpoint export` writes.
test_python = os.path.join(config.cleave_obj_root, "pyenv", "bin", "python")
if os.path.exists(test_python):
    import subprocess as _sp
    if _sp.run([test_python, "-c", "import safetensors.numpy"],
               capture_output=True).returncode == 0:
        config.available_features.add("safetensors")
        config.substitutions.append(("%test_python", test_python))
    # "numpy": the corpus's regenerated weights (scripts/
    # regenerate_weights.py) can be written.
    if _sp.run([test_python, "-c", "import numpy"],
               capture_output=True).returncode == 0:
        config.available_features.add("numpy")
        config.substitutions.append(("%test_python", test_python))
# The cleave binary's path, for scripts that take it as an argument.
config.substitutions.append(("%cleave_bin", os.path.join(
    config.cleave_tools_dir, "cleave", "cleave")))

# "cuda-backend": built with the CUDA toolkit; "gpu": a GPU this process
# can use (nvidia-smi lists one). Tests of the no-GPU errors need the first
# and not the second.
if config.cleave_cuda_enabled in ("ON", "TRUE", "1"):
    config.available_features.add("cuda-backend")
import shutil
import subprocess
# "chromium": Debian's browser (scripts/setup.sh test installs it) loads
# the HTML report headless.
if shutil.which("chromium"):
    config.available_features.add("chromium")
# oneDNN's GEMMs (runtime/kernels GemmLibrary.h) where Debian's libdnnl2 is
# installed (scripts/setup.sh installs it).
import ctypes as _ctypes
try:
    _ctypes.CDLL("libdnnl.so.2")
    config.available_features.add("onednn")
except OSError:
    pass
if shutil.which("nvidia-smi"):
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                                text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        listed = ""
    if "GPU" in listed:
        config.available_features.add("gpu")

llvm_config.use_default_substitutions()
tool_dirs = [os.path.join(config.cleave_tools_dir, "cleave"),
             os.path.join(config.cleave_tools_dir, "cleave-opt"),
             os.path.join(config.cleave_tools_dir, "cleave-worker"),
             os.path.join(config.cleave_tools_dir, "cleave-profile-mpi"),
             config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["cleave-opt", "cleave", "cleave-worker",
                                    "cleave-profile-mpi",
                                    "FileCheck", "not",
                                    "count", "split-file"], tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# The OpenBLAS kernels the ranks run follow a choice cached per user
# (runtime/kernels BlasKernels.h): tests see none unless they make their own.
config.environment["CLEAVE_CACHE_DIR"] = os.path.join(config.test_exec_root,
                                                      "no-blas-choice")
