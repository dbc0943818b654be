"""pipeplan from Python: plan, simulate, goodput and serve return what `--json` prints.

    import pipeplan
    result = pipeplan.plan(model="llama3-70b", hardware="h100-sxm", gpus=64,
                           global_batch=256, seq=8192)
    result["best"]["tp"]

Each keyword is the command's long option with dashes as underscores
(micro_batch_size=2 is --micro-batch-size 2); a flag takes True (or False for
its --no- form where there is one); a list gives an option several values
(tf=[1.0, 1.5] is --tf 1.0,1.5 where the option takes a comma list).
"""

import difflib

from . import _pipeplan

__version__ = _pipeplan.__version__
__all__ = ["plan", "simulate", "goodput", "serve", "options", "InputError", "UnknownOptionError"]

InputError = _pipeplan.InputError
InputError.__doc__ = "Input pipeplan refuses: the message names the field and the fix."
InputError.__module__ = __name__


class UnknownOptionError(InputError, TypeError):
    """A keyword the command does not take."""


def plan(**options):
    """`pipeplan plan`: the best layout, schedule and split (see `pipeplan plan --help`)."""
    return _run("plan", options)


def simulate(**options):
    """`pipeplan simulate`: one schedule replayed (see `pipeplan simulate --help`)."""
    return _run("simulate", options)


def goodput(**options):
    """`pipeplan goodput`: training time with failures and checkpoints (see `pipeplan goodput --help`)."""
    return _run("goodput", options)


def serve(**options):
    """`pipeplan serve`: serving layouts and latencies (see `pipeplan serve --help`)."""
    return _run("serve", options)


def options(command):
    """The keywords `command` takes, sorted."""
    return [name.replace("-", "_") for name in _pipeplan.option_names(command)]


def _run(command, options):
    known = set(_pipeplan.option_names(command))
    args = []
    for keyword, value in options.items():
        name = keyword.replace("_", "-")
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0].replace('-', '_')}? " if close else ""
            raise UnknownOptionError(
                f"{command}() got an unknown keyword '{keyword}': {hint}"
                f"pipeplan.options('{command}') lists the ones it takes")
        args.extend(_arguments(command, keyword, name, value, known))
    return _pipeplan.run(command, args)


def _arguments(command, keyword, name, value, known):
    if _pipeplan.is_flag(command, name):
        if not isinstance(value, bool):
            raise InputError(f"{command}(): {keyword} is a flag: give True or False, not {value!r}")
        if value:
            return [f"--{name}"]
        if f"no-{name}" in known:
            return [f"--no-{name}"]
        return []
    if value is None:
        return []
    values = value if isinstance(value, (list, tuple)) else [value]
    if not values:
        raise InputError(f"{command}(): {keyword} is empty: give at least one value or leave it out")
    texts = [_text(item) for item in values]
    if _pipeplan.takes_several(command, name):
        return [f"--{name}", *texts]
    return [f"--{name}", ",".join(texts)]


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)
