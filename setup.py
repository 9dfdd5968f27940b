"""Builds the rlscore wheel: the pure-Python packages (python/rlscore, clients/python/rlscore_client)
plus what the project's CMake build makes for them: the native module rlscore._native (the
engine, linked statically) and the generated rlscore.v1 / rlscore.config.v1 messages.

    pip install --no-build-isolation .                       # builds in build/wheel (Release)
    RLSCORE_CMAKE_BUILD_DIR=build pip install --no-build-isolation .   # reuses a configured tree

The build runs scripts/build.sh, which installs missing Debian packages (scripts/setup.sh) and the
pinned tree-sitter grammars and simdjson (scripts/fetch_sources.sh) first, as every build here does.
"""

import glob
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class NativeModule(Extension):
    """rlscore._native, built by CMake rather than by setuptools."""

    def __init__(self):
        super().__init__("rlscore._native", sources=[])


class BuildWithCMake(build_ext):
    """Builds the CMake target rlscore_python and copies its output into the wheel."""

    def build_extension(self, ext):
        build_dir = os.environ.get("RLSCORE_CMAKE_BUILD_DIR") or os.path.join(ROOT, "build", "wheel")
        build_dir = os.path.abspath(build_dir)
        cache = os.path.join(build_dir, "CMakeCache.txt")
        if os.path.exists(cache) and "RLSCORE_PYTHON:BOOL=ON" in open(cache).read():
            subprocess.check_call(["cmake", "--build", build_dir, "-j",
                                   os.environ.get("RLSCORE_JOBS", "2"), "--target",
                                   "rlscore_python"])
        else:
            subprocess.check_call(
                ["bash", os.path.join(ROOT, "scripts", "build.sh"), "--target", "rlscore_python",
                 build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DRLSCORE_PYTHON=ON",
                 "-DRLSCORE_BUILD_TESTS=OFF", "-DRLSCORE_BUILD_BENCH=OFF",
                 "-DRLSCORE_WITH_CUDA=OFF"], cwd=ROOT)
        package = os.path.join(build_dir, "python", "rlscore")
        native = glob.glob(os.path.join(package, "_native*.so"))
        if len(native) != 1:
            raise RuntimeError("the CMake build made %d native modules in %s" % (len(native),
                                                                                 package))
        destination = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        shutil.copyfile(native[0], destination)
        # The generated messages: rlscore/v1/*_pb2*.py and rlscore/config/v1/*_pb2.py.
        package_out = os.path.dirname(destination)
        for generated in glob.glob(os.path.join(package, "**", "*_pb2*.py"), recursive=True):
            relative = os.path.relpath(generated, package)
            target = os.path.join(package_out, relative)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(generated, target)


os.makedirs(os.path.join(ROOT, "build", "setuptools"), exist_ok=True)

setup(
    packages=["rlscore", "rlscore.rewards", "rlscore_client"],
    package_dir={"rlscore": "python/rlscore", "rlscore_client": "clients/python/rlscore_client"},
    package_data={"rlscore": ["py.typed"]},
    ext_modules=[NativeModule()],
    cmdclass={"build_ext": BuildWithCMake},
    # setuptools' own build directories, beside CMake's trees rather than in them.
    options={"build": {"build_base": os.path.join("build", "setuptools")},
             "egg_info": {"egg_base": os.path.join("build", "setuptools")}},
)
