"""pipeplan from Python: plan, simulate, goodput and serve return what `--json` prints.

    import pipeplan
    result = pipeplan.plan(model="llama3-70b", hardware="h100-sxm", gpus=64,
                           global_batch=256, seq=8192)
    result["best"]["tp"]

Each keyword is the command's long option with dashes as underscores
(micro_batch_size=2 is --micro-batch-size 2), with a trailing underscore where
the name is a Python word (async_=True is --async); a flag takes True (or
False for its --no- form where there is one); None leaves an option out; a
list gives an option several values (tf=[1.0, 1.5] is --tf 1.0,1.5 where the
option takes a comma list). help(pipeplan.plan) lists the keywords.
"""

import difflib
import functools
from keyword import iskeyword

from . import _pipeplan

__version__ = _pipeplan.__version__
__all__ = ["plan", "simulate", "goodput", "serve", "options", "InputError", "UnknownOptionError"]

COMMANDS = ("plan", "simulate", "goodput", "serve")

InputError = _pipeplan.InputError
InputError.__doc__ = "Input pipeplan refuses: the message names the field and the fix."
InputError.__module__ = __name__


class UnknownOptionError(InputError, TypeError):
    """A keyword the command does not take."""


def plan(**options):
    """`pipeplan plan`: the best layout, schedule and split."""
    return _run("plan", options)


def simulate(**options):
    """`pipeplan simulate`: one schedule replayed."""
    return _run("simulate", options)


def goodput(**options):
    """`pipeplan goodput`: training time with failures and checkpoints."""
    return _run("goodput", options)


def serve(**options):
    """`pipeplan serve`: serving layouts and latencies."""
    return _run("serve", options)


def options(command):
    """The keywords `command` takes, sorted."""
    return [_keyword(name) for name in _option_table(_command(command))]


def _command(command):
    if command not in COMMANDS:
        raise InputError(f"options(): command is one of {', '.join(COMMANDS)}, not {command!r}")
    return command


@functools.lru_cache(maxsize=None)
def _option_table(command):
    """name -> (help text, is a flag, takes several values), in name order."""
    return {name: (text, flag, several) for name, text, flag, several in _pipeplan.option_table(command)}


def _keyword(name):
    keyword = name.replace("-", "_")
    return keyword + "_" if iskeyword(keyword) else keyword


def _document(function, command):
    lines = [f"    {_keyword(name)}: {text}" for name, (text, _, _) in _option_table(command).items()]
    function.__doc__ += "\n\nKeywords (the command's options; returns its --json output as dicts and lists):\n"
    function.__doc__ += "\n".join(lines)


for _function in (plan, simulate, goodput, serve):
    _document(_function, _function.__name__)


def _run(command, options):
    known = _option_table(command)
    args = []
    for keyword, value in options.items():
        name = keyword.replace("_", "-")
        if name not in known and name.endswith("-") and name[:-1] in known:
            name = name[:-1]  # async_ for --async
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {_keyword(close[0])}? " if close else ""
            raise UnknownOptionError(
                f"{command}() got an unknown keyword '{keyword}': {hint}"
                f"pipeplan.options('{command}') lists the ones it takes")
        args.extend(_arguments(command, keyword, name, value, known))
    return _pipeplan.run(command, args)


def _arguments(command, keyword, name, value, known):
    if value is None:
        return []
    _, flag, several = known[name]
    if flag:
        if not isinstance(value, bool):
            raise InputError(f"{command}(): {keyword} is a flag: give True or False, not {value!r}")
        if value:
            return [f"--{name}"]
        if f"no-{name}" in known:
            return [f"--no-{name}"]
        return []
    values = value if isinstance(value, (list, tuple)) else [value]
    if not values:
        raise InputError(f"{command}(): {keyword} is empty: give at least one value or leave it out")
    texts = [_text(command, keyword, item) for item in values]
    if several:
        return [f"--{name}", *texts]
    return [f"--{name}", ",".join(texts)]


def _text(command, keyword, value):
    if isinstance(value, (list, tuple, dict, set)):
        raise InputError(f"{command}(): {keyword} takes a value or a flat list of values, not {type(value).__name__}s "
                         "inside a list")
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value) if isinstance(value, float) else str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{command}(): {keyword} holds text that is not valid Unicode") from None
    return text
