"""The module returns what `pipeplan ... --json` prints, and refuses what the CLI refuses."""
import json
import subprocess

import pytest

import pipeplan

PLAN = dict(model="llama3-8b", hardware="h100-sxm", gpus=16, global_batch=64, seq=4096, top=2)
SIMULATE = dict(schedule="1f1b", pp=4, microbatches=8, tf=1.0, tb=2.0, tcomm=0.1)


def without_run_time(result):
    """The search's own run time is the one field two runs do not share."""
    result.pop("search_time_s", None)
    return result


def run_cli(args):
    done = subprocess.run(args, check=True, capture_output=True, text=True)
    return without_run_time(json.loads(done.stdout))


def cli_json(cli, command, options):
    args = [cli, command, "--json"]
    for key, value in options.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return run_cli(args)


def cli_error(cli, command, args):
    done = subprocess.run([cli, command, *args], capture_output=True, text=True)
    assert done.returncode == 2
    prefix = "pipeplan: error: "
    assert done.stderr.startswith(prefix)
    return done.stderr[len(prefix):].rstrip("\n")


def test_plan_equals_the_cli_json(cli):
    assert without_run_time(pipeplan.plan(**PLAN)) == cli_json(cli, "plan", PLAN)


def test_plan_keeps_the_json_key_order(cli):
    result = pipeplan.plan(**PLAN)
    assert "search_time_s" in result
    assert list(without_run_time(result)) == list(cli_json(cli, "plan", PLAN))
    assert list(result["best"]) == list(cli_json(cli, "plan", PLAN)["best"])


def test_plan_keeps_to_a_framework_and_lists_each_ones_best():
    kept = pipeplan.plan(**PLAN, framework="megatron-lm")
    assert kept["framework"] == "megatron-lm"
    assert "megatron-lm" in kept["best_run_by"]
    assert kept["best"]["pp"] == 1 or kept["best"]["schedule"] in ("1F1B", "Interleaved1F1B")
    open_search = pipeplan.plan(**PLAN)
    by_name = {entry["framework"]: entry for entry in open_search["frameworks"]}
    assert by_name["megatron-lm"]["best"]["tokens_per_s"] == pytest.approx(kept["best"]["tokens_per_s"], rel=1e-9)
    assert by_name["megatron-lm"]["throughput_vs_best"] <= 0


def test_simulate_equals_the_cli_json(cli):
    result = pipeplan.simulate(**SIMULATE)
    assert result == cli_json(cli, "simulate", SIMULATE)
    # 1F1B's bubble, (p - 1) / (m + p - 1) of the step without communication, is in the output.
    assert isinstance(result, dict) and result


def test_types_are_python_types():
    best = pipeplan.plan(**PLAN)["best"]
    assert isinstance(best["tp"], int) and not isinstance(best["tp"], bool)
    assert isinstance(best["iteration_time_s"], float)
    assert isinstance(best["sequence_parallel"], bool)
    assert isinstance(best["peak_memory_bytes"], list)


def test_unknown_keyword_is_a_named_exception_with_a_close_name():
    with pytest.raises(pipeplan.UnknownOptionError) as raised:
        pipeplan.plan(model="llama3-8b", hardware="h100-sxm", gpus=8, global_batch=8, micro_batch=2)
    assert str(raised.value) == ("plan() got an unknown keyword 'micro_batch': did you mean micro_batch_size? "
                                 "pipeplan.options('plan') lists the ones it takes")
    assert isinstance(raised.value, pipeplan.InputError)
    assert isinstance(raised.value, TypeError)


def test_bad_value_raises_input_error_with_the_cli_text(cli):
    options = ["--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "-8", "--global-batch", "8"]
    with pytest.raises(pipeplan.InputError) as raised:
        pipeplan.plan(model="llama3-8b", hardware="h100-sxm", gpus=-8, global_batch=8)
    assert str(raised.value) == cli_error(cli, "plan", options)
    assert isinstance(raised.value, ValueError)


def test_unconvertible_value_raises_input_error_with_the_cli_text(cli):
    options = ["--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "eight", "--global-batch", "8"]
    with pytest.raises(pipeplan.InputError) as raised:
        pipeplan.plan(model="llama3-8b", hardware="h100-sxm", gpus="eight", global_batch=8)
    assert str(raised.value) == cli_error(cli, "plan", options)


def test_missing_required_option_is_named():
    with pytest.raises(pipeplan.InputError, match="--gpus"):
        pipeplan.plan(model="llama3-8b", hardware="h100-sxm", global_batch=8)


def test_unknown_model_is_named():
    with pytest.raises(pipeplan.InputError, match="no-such-model"):
        pipeplan.plan(model="no-such-model", hardware="h100-sxm", gpus=8, global_batch=8)


def test_flags_take_booleans_only():
    with pytest.raises(pipeplan.InputError, match="allow_cross_node_tp is a flag"):
        pipeplan.plan(**PLAN, allow_cross_node_tp="yes")


def test_a_false_flag_gives_its_no_form(cli):
    options = dict(PLAN, sequence_parallel=False)
    args = [cli, "plan", "--json", "--no-sequence-parallel"]
    for key, value in PLAN.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    assert without_run_time(pipeplan.plan(**options)) == run_cli(args)


def test_a_list_is_a_comma_list(cli):
    options = dict(schedule="1f1b", pp=4, microbatches=8, tf=[1.0, 1.5, 1.0, 2.0], tb=2.0)
    args = [cli, "simulate", "--json", "--schedule", "1f1b", "--pp", "4", "--microbatches", "8",
            "--tf", "1.0,1.5,1.0,2.0", "--tb", "2.0"]
    assert pipeplan.simulate(**options) == run_cli(args)


def test_options_lists_keywords():
    names = pipeplan.options("plan")
    assert "micro_batch_size" in names and "global_batch" in names
    assert "json" not in names and "help" not in names
    assert names == sorted(names)


def test_every_command_is_there():
    for command in ("plan", "simulate", "goodput", "serve"):
        assert pipeplan.options(command)
    assert pipeplan.__version__.count(".") == 2


def test_a_python_word_takes_a_trailing_underscore(cli):
    plan_file = "plan.yaml"
    assert "async_" in pipeplan.options("goodput") and "async" not in pipeplan.options("goodput")
    with pytest.raises(pipeplan.UnknownOptionError, match="did you mean async_"):
        pipeplan.goodput(asynch=True)
    # async_=True reaches the command as --async: refused there for the missing plan, like the CLI.
    with pytest.raises(pipeplan.InputError) as raised:
        pipeplan.goodput(plan=plan_file, async_=True)
    assert str(raised.value) == cli_error(cli, "goodput", ["--plan", plan_file, "--async"])


def test_none_leaves_any_option_out(cli):
    assert without_run_time(pipeplan.plan(**PLAN, sequence_parallel=None, memory_cap=None)) == cli_json(cli, "plan", PLAN)


def test_values_that_cannot_be_options_are_named():
    with pytest.raises(pipeplan.InputError, match="tf takes a value or a flat list"):
        pipeplan.simulate(schedule="1f1b", pp=2, microbatches=4, tf=[[1, 2], [3, 4]], tb=1.0)
    with pytest.raises(pipeplan.InputError, match="tf holds text that is not valid Unicode"):
        pipeplan.simulate(schedule="1f1b", pp=2, microbatches=4, tf="\ud800", tb=1.0)
    with pytest.raises(pipeplan.InputError, match="command is one of plan, simulate, goodput, serve"):
        pipeplan.options(3)


def test_help_lists_every_keyword_with_its_text():
    for command in ("plan", "simulate", "goodput", "serve"):
        doc = getattr(pipeplan, command).__doc__
        for keyword in pipeplan.options(command):
            assert f"    {keyword}: " in doc, (command, keyword)
    assert "micro_batch_size: Sequences per micro-batch b [default: searched]" in pipeplan.plan.__doc__
