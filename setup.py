"""The one build step pyproject.toml cannot declare: the `deja` executable.

`deja search`, the hooks and the other hot commands are answered by a warm
server (`deja serve`); the executable only hands them over. Python's own start
(~8 ms) was a fifth of a served search, so `deja` is compiled from
hooks/client.c (with -DDEJA_MAIN): it asks the server, and runs the Python
`deja`, installed beside it as `deja-py`, for everything else and whenever it
cannot be served. Without a working C compiler the Python script is `deja`
itself, as before (and `deja-py` beside it), so every install still works.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from setuptools import Distribution, setup

# the command setuptools runs for script-files (its own copy of distutils')
_build_scripts = Distribution().get_command_class("build_scripts")

HERE = Path(__file__).resolve().parent


def _client_build():
    """hooks/client_build.py, which `deja install` compiles the hook client
    with, loaded on its own (the package is not installed yet)."""
    spec = importlib.util.spec_from_file_location("_deja_client_build", HERE / "hooks" / "client_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class build_scripts(_build_scripts):
    def run(self) -> None:
        super().run()  # bin/deja, the Python script, with its #!python line
        out = Path(self.build_dir)
        script, python = out / "deja", out / "deja-py"
        if script.read_bytes()[:2] == b"#!":  # (a build dir from before holds the executable already)
            shutil.copy2(script, python)
        if self.dry_run or os.environ.get("DEJA_NATIVE_CLIENT", "").lower() in ("off", "0", "no", "false"):
            shutil.copy2(python, script)
            return
        failed = _client_build().compile_client(script, main=True)
        if failed is not None:
            shutil.copy2(python, script)
            print(f"deja: `deja` is the Python script (served commands start ~8 ms slower): "
                  f"{failed or 'no C compiler found'}")


setup(cmdclass={"build_scripts": build_scripts})
