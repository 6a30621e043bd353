"""Gradio imported without writing type stubs: half of its import's CPU, before a server can answer.

Each component class Gradio defines (gradio.component_meta.ComponentMeta, 80 of its own, the app's widgets too)
calls `create_or_modify_pyi` as it is made: it reads the class's source file, parses it whole with `ast`,
renders a Jinja template and rewrites a `.pyi` stub beside the file (toyviz/app/widgets.pyi, ignored by git),
for editors' completion of the events. No page needs them, and on 2 cores they were 2.4 of `import gradio`'s
4.9 CPU seconds (2.5 s without them), the largest part of `toyviz serve`'s time before its page answers
(`python -m benchmarks.cold_start`: page_cpu_s). `skip_stubs()` replaces that one function as Gradio's module
defining it is imported; everything else Gradio does at import is unchanged.

This module imports nothing of Gradio's: it must run before Gradio's first import (toyviz.app's __init__ calls it).
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

STUBS_MODULE, STUBS_FUNCTION = "gradio.component_meta", "create_or_modify_pyi"


def _no_stub(*args, **kwargs) -> None:
    """In place of Gradio's stub writer: no stub written."""


class _SkipStubs(importlib.abc.MetaPathFinder):
    """Finds nothing itself; as STUBS_MODULE is imported, has it loaded as usual, then its stub writer replaced
    (before any component class is made: ComponentMeta looks the function up each time). Leaves sys.meta_path
    then, its work done."""

    def find_spec(self, name, path, target=None):
        if name != STUBS_MODULE:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec                  # loaded some other way: Gradio's stubs are written, as without this
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            if hasattr(module, STUBS_FUNCTION):    # a Gradio that no longer writes stubs is left as it is
                setattr(module, STUBS_FUNCTION, _no_stub)
        spec.loader.exec_module = exec_module
        return spec


def skip_stubs() -> bool:
    """Gradio, imported from now on, writes no `.pyi` stubs → whether that could still be arranged (False when
    Gradio was already imported: its component classes are made). Idempotent."""
    if STUBS_MODULE in sys.modules:
        return getattr(sys.modules[STUBS_MODULE], STUBS_FUNCTION, None) is _no_stub
    if not any(isinstance(finder, _SkipStubs) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SkipStubs())
    return True
