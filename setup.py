"""Builds libcolio.so with Go while building the Python package.

`pip install .` runs build_py below, which runs ./build.sh (go build
-buildmode=c-shared) into a temporary folder and copies the library into
the package as colio/libcolio.so, and the CUDA build as
colio/libcolio_cuda.so when build.sh made one (it does where it finds the
CUDA headers: README, "GPU"). Set COLIO_SKIP_GO_BUILD=1 to skip it
(editable development installs load build/lib/libcolio.so instead), or
COLIO_PREBUILT_LIBRARY=/path/libcolio.so to package a library built
elsewhere (and COLIO_PREBUILT_CUDA_LIBRARY=/path/libcolio_cuda.so with it).
"""

import os
import shutil
import subprocess
import tempfile

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py as _build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class build_py(_build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False) or os.environ.get("COLIO_SKIP_GO_BUILD") == "1":
            return
        dest = os.path.join(self.build_lib, "colio", "libcolio.so")
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        prebuilt = os.environ.get("COLIO_PREBUILT_LIBRARY")
        cuda_dest = os.path.join(os.path.dirname(dest), "libcolio_cuda.so")
        if prebuilt:
            shutil.copyfile(os.path.realpath(prebuilt), dest)
            cuda = os.environ.get("COLIO_PREBUILT_CUDA_LIBRARY")
            if cuda:
                shutil.copyfile(os.path.realpath(cuda), cuda_dest)
            return
        if shutil.which(os.environ.get("GO", "go")) is None:
            raise SystemExit("colio: building the package needs Go (https://go.dev) on PATH "
                             "to build libcolio.so, or COLIO_PREBUILT_LIBRARY")
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, COLIO_BUILD_DIR=tmp)
            subprocess.check_call([os.path.join(HERE, "build.sh")], cwd=HERE, env=env)
            shutil.copyfile(os.path.realpath(os.path.join(tmp, "lib", "libcolio.so")), dest)
            cuda = os.path.join(tmp, "lib", "libcolio_cuda.so")
            if os.path.exists(cuda):  # the Python package loads it only after a probe
                shutil.copyfile(os.path.realpath(cuda), cuda_dest)


class BinaryDistribution(Distribution):
    """The wheel holds a native library: make it platform-specific."""

    def has_ext_modules(self):
        return True


cmdclass = {"build_py": build_py}
try:
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel

    class bdist_wheel(_bdist_wheel):
        # libcolio.so does not use the Python C API: any CPython 3 will do.
        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = bdist_wheel
except ImportError:  # pragma: no cover
    pass

setup(cmdclass=cmdclass, distclass=BinaryDistribution)
