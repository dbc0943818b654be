"""The Python examples of docs/python.md run as written (matplotlib drawing to a file)."""
import os
import re
import subprocess
import sys


def python_blocks(page):
    return re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), flags=re.S | re.M)


def test_every_python_example_runs(source, tmp_path):
    blocks = python_blocks(source / "docs" / "python.md")
    assert blocks, "docs/python.md has a Python example"
    env = dict(os.environ, MPLBACKEND="Agg")
    for number, block in enumerate(blocks):
        script = tmp_path / f"example{number}.py"
        script.write_text(block, encoding="utf-8")
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    # The plotting example leaves its figure, a PNG.
    assert (tmp_path / "memory_per_rank.png").read_bytes().startswith(b"\x89PNG")
