#!/usr/bin/env python3
"""The layering check, checked: the project's own tree passes, and on a small
fixture (high on top of low) an upward include and an include loop between
folders each fail, naming the file and line.

Usage: layering_check_test.py SOURCE_DIR BUILD_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

SOURCE, BUILD = sys.argv[1], sys.argv[2]
CHECK = [sys.executable, os.path.join(SOURCE, 'scripts', 'check_layering.py')]
failures = []
checks = []


def expect(condition, what, output=''):
    checks.append(what)
    print(('ok   ' if condition else 'FAIL ') + what)
    if not condition:
        failures.append(what)
        print(output)


def check(build_dir, *extra):
    run = subprocess.run(CHECK + ['--build-dir', build_dir, *extra], capture_output=True, text=True)
    return run.returncode, run.stdout + run.stderr


def configure(source_dir, build_dir, *options):
    os.makedirs(os.path.join(build_dir, '.cmake', 'api', 'v1', 'query'), exist_ok=True)
    open(os.path.join(build_dir, '.cmake', 'api', 'v1', 'query', 'codemodel-v2'), 'w').close()
    subprocess.run(['cmake', '-S', source_dir, '-B', build_dir, *options], check=True, capture_output=True)


# The project itself: scripts/build.sh asks CMake for its file-API reply
# before the first configure; a build configured by hand is configured once
# more here, with the question.
if not os.path.isdir(os.path.join(BUILD, '.cmake', 'api', 'v1', 'reply')):
    configure(SOURCE, BUILD)
status, output = check(BUILD, '--stats', 'planner')
print(output)
expect(status == 0, 'the project breaks no layering rule', output)

with tempfile.TemporaryDirectory() as tmp:
    fixture = os.path.join(tmp, 'src')
    shutil.copytree(os.path.join(SOURCE, 'tests', 'layering', 'fixture'), fixture)

    configure(fixture, os.path.join(tmp, 'clean'))
    status, output = check(os.path.join(tmp, 'clean'))
    expect(status == 0 and output == '', 'the clean fixture passes', output)

    with open(os.path.join(fixture, 'low', 'upward.cc'), 'w') as f:
        f.write('#include "low/low.h"\n#include "high/high.h"\nint upward_value() { return high_value(); }\n')
    configure(fixture, os.path.join(tmp, 'upward'), '-DUPWARD_INCLUDE=ON')
    status, output = check(os.path.join(tmp, 'upward'))
    expect(status == 1 and 'low/upward.cc:2: includes "high/high.h" (high), which low does not depend on' in output,
           'an upward include fails, naming its file and line', output)
    os.remove(os.path.join(fixture, 'low', 'upward.cc'))

    os.makedirs(os.path.join(fixture, 'high', 'room'))
    with open(os.path.join(fixture, 'high', 'room', 'a.h'), 'w') as f:
        f.write('#pragma once\n#include "high/high.h"\n')
    with open(os.path.join(fixture, 'high', 'b.h'), 'w') as f:
        f.write('#pragma once\n#include "high/room/a.h"\n')
    configure(fixture, os.path.join(tmp, 'loop'))
    status, output = check(os.path.join(tmp, 'loop'))
    expect(status == 1 and 'include loop between folders: high/ <-> high/room/' in output,
           'an include loop between folders fails, naming them', output)

print(f'{len(checks) - len(failures)} passed, {len(failures)} failed')
sys.exit(1 if failures else 0)
