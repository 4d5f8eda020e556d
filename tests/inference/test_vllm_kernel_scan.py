"""vLLM's start-up reads ``vars()`` of every module-level value; llvmlite's library wrapper must answer it
with a dict once :func:`saltbench.inference.vllm.engine._prepare_kernel_scan` ran (docs/reliability.md §5)."""

import sys

import saltbench.evaluation._kernels  # noqa: F401 — imports numba, hence llvmlite.binding
from saltbench.inference.vllm.engine import _prepare_kernel_scan


def test_every_module_value_answers_vars_with_a_mapping_after_the_preparation():
    _prepare_kernel_scan()
    wrong = []
    for module in list(sys.modules.values()):
        for name, value in list(getattr(module, "__dict__", {}).items()):
            if hasattr(value, "__dict__") and not hasattr(vars(value), "get"):
                wrong.append(f"{module.__name__}.{name}")
    assert not wrong


def test_the_library_still_answers_its_functions():
    from llvmlite.binding import ffi

    _prepare_kernel_scan()
    assert callable(ffi.lib.LLVMPY_GetVersionInfo)
