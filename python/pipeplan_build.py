"""A PEP 517 build backend for pipeplan's Python module.

CMake builds the extension (target pipeplan_python) for the interpreter that
runs pip; the wheel is then written with zipfile. Setuptools is not used: on
Debian 12 it needs the `wheel` package to write wheels, which a virtual
environment lacks and pip cannot download offline.

Config settings (pip install --config-settings KEY=VALUE .):
  build-dir  a CMake build folder to build in (default build-python/<python
             tag> in the source tree, kept between installs); an existing,
             configured folder, such as the project's build/, is reused as it is
  jobs       parallel compile jobs (default: every core)
"""

import base64
import hashlib
import io
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "pipeplan"


def _version():
    with open(os.path.join(SOURCE, "CMakeLists.txt"), encoding="utf-8") as cmake:
        match = re.search(r"project\(pipeplan VERSION ([0-9.]+)", cmake.read())
    if not match:
        raise RuntimeError("CMakeLists.txt: no `project(pipeplan VERSION x.y.z)` line")
    return match.group(1)


def _tag():
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{python}-{python}-{platform}"


def _setting(config_settings, key, default):
    value = (config_settings or {}).get(key)
    return value if value else default


def _build_extension(config_settings):
    build_dir = os.path.abspath(_setting(config_settings, "build-dir",
                                         os.path.join(SOURCE, "build-python", sys.implementation.cache_tag)))
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        subprocess.run(["cmake", "-S", SOURCE, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                        "-DPIPEPLAN_BUILD_TESTS=OFF", "-DPIPEPLAN_BUILD_BENCH=OFF", "-DPIPEPLAN_PYTHON=ON",
                        f"-DPython_EXECUTABLE={sys.executable}"], check=True, stdout=sys.stderr)
    jobs = str(_setting(config_settings, "jobs", os.cpu_count() or 1))
    subprocess.run(["cmake", "--build", build_dir, "--target", "pipeplan_python", "-j", jobs],
                   check=True, stdout=sys.stderr)
    package = os.path.join(build_dir, "python", NAME)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not os.path.exists(os.path.join(package, "_pipeplan" + suffix)):
        raise RuntimeError(f"{build_dir} holds no _pipeplan{suffix}: it was configured for another "
                           f"Python than {sys.executable}; give another build-dir")
    return package


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\n"
            "Summary: Pipeline-parallel training and serving plans, simulated before the GPU hours\n"
            "Requires-Python: >=3.8\n")


def _wheel_info():
    return f"Wheel-Version: 1.0\nGenerator: pipeplan_build\nRoot-Is-Purelib: false\nTag: {_tag()}\n"


def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    folder = os.path.join(metadata_directory, _dist_info())
    os.makedirs(folder, exist_ok=True)
    for name, text in (("METADATA", _metadata()), ("WHEEL", _wheel_info())):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as file:
            file.write(text)
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    package = _build_extension(config_settings)
    files = []
    for name in sorted(os.listdir(package)):
        if name.endswith((".py", sysconfig.get_config_var("EXT_SUFFIX"))):
            with open(os.path.join(package, name), "rb") as file:
                files.append((f"{NAME}/{name}", file.read()))
    files.append((f"{_dist_info()}/METADATA", _metadata().encode()))
    files.append((f"{_dist_info()}/WHEEL", _wheel_info().encode()))
    record = [_record_line(path, data) for path, data in files] + [f"{_dist_info()}/RECORD,,"]
    files.append((f"{_dist_info()}/RECORD", ("\n".join(record) + "\n").encode()))
    wheel_name = f"{NAME}-{_version()}-{_tag()}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files:
            wheel.writestr(path, data)
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    """The tracked source tree (git ls-files), without build folders."""
    listed = subprocess.run(["git", "-C", SOURCE, "ls-files", "-z"], check=True, capture_output=True)
    base = f"{NAME}-{_version()}"
    sdist_name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, sdist_name), "w:gz") as sdist:
        for path in sorted(listed.stdout.decode().split("\0")):
            if path and os.path.isfile(os.path.join(SOURCE, path)):
                sdist.add(os.path.join(SOURCE, path), arcname=f"{base}/{path}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        sdist.addfile(info, fileobj=io.BytesIO(data))
    return sdist_name
