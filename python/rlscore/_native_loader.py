"""The native module, imported on first use so that `import rlscore` and the gRPC client work in
a tree built without it (the sanitizer builds)."""

from __future__ import annotations

import threading

from ._errors import Error

_lock = threading.Lock()
_module = None


def native():
    """rlscore._native, with rlscore.Error registered as the class of its errors."""
    global _module
    if _module is None:
        with _lock:
            if _module is None:
                try:
                    from . import _native  # type: ignore[attr-defined]
                except ImportError as e:
                    raise ImportError(
                        "rlscore's native module is missing: install the package with the "
                        "README's command (it builds the engine), or build the repository with "
                        "-DRLSCORE_PYTHON=ON and put build/python on sys.path") from e
                # The executables refuse such a value at start; the package, at first use.
                cpu_isa_error = _native._cpu_isa_environment_error()
                if cpu_isa_error:
                    raise ValueError(cpu_isa_error)
                _native._set_error_class(Error)
                _module = _native
    return _module
