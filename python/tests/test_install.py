"""pip installs the module through python/pipeplan_build.py: the wheel it writes, and a virtual
environment that imports it with nothing on PYTHONPATH. The project's build folder is reused
(build-dir), so nothing is compiled twice."""
import base64
import hashlib
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile


def backend(source):
    spec = importlib.util.spec_from_file_location("pipeplan_build", source / "python" / "pipeplan_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_wheel_holds_the_package_and_a_true_record(source, build, tmp_path):
    name = backend(source).build_wheel(str(tmp_path), {"build-dir": str(build)})
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert name.startswith("pipeplan-") and f"-{tag}-{tag}-" in name and name.endswith(".whl")
    with zipfile.ZipFile(tmp_path / name) as wheel:
        names = set(wheel.namelist())
        assert "pipeplan/__init__.py" in names
        assert "pipeplan/_pipeplan" + sysconfig.get_config_var("EXT_SUFFIX") in names
        record = [line for line in wheel.read(next(n for n in names if n.endswith("RECORD"))).decode().splitlines()]
        for line in record:
            path, digest, size = line.rsplit(",", 2)
            if path.endswith("RECORD"):
                continue
            data = wheel.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == f"sha256={expected}" and int(size) == len(data), path
        assert len(record) == len(names)


def test_the_sdist_holds_the_tracked_sources(source, tmp_path):
    name = backend(source).build_sdist(str(tmp_path))
    with tarfile.open(tmp_path / name) as sdist:
        names = sdist.getnames()
    base = name[: -len(".tar.gz")]
    for path in ("CMakeLists.txt", "pyproject.toml", "python/pipeplan_build.py", "python/module.cc", "PKG-INFO"):
        assert f"{base}/{path}" in names


def test_pip_installs_into_a_virtual_environment(source, build, tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    venv = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--config-settings",
         f"build-dir={build}", str(source)], env=env, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    check = ("import pipeplan; "
             "r = pipeplan.plan(model='llama3-8b', hardware='h100-sxm', gpus=8, global_batch=16, seq=4096); "
             "print(pipeplan.__file__); print(r['best']['tp'] * r['best']['pp'] * r['best']['dp'] * r['best']['cp'])")
    done = subprocess.run([str(venv / "bin" / "python"), "-c", check], env=env, cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    where, gpus = done.stdout.split()
    assert where.startswith(str(venv))
    assert gpus == "8"
