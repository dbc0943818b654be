// The option walks of the commands that plan the run and the serving:
// `goodput` and `serve` (tests/support/option_walk.h).
#include <gtest/gtest.h>

#include <string>

#include "tests/support/cli_support.h"
#include "tests/support/option_walk.h"
#include "tests/support/temp_files.h"

namespace {

using namespace pipeplan::testing;
using namespace pipeplan::testing::option_walk;

TEST(OptionWalk, Goodput) {
  walk({"goodput", "goodput", "--plan " + kData + "/llama3-8b-64-h100.plan.yaml --runs 50 --threads 1",
        {{"plan", ""},
         {"hardware", "--hardware h200-sxm"},
         {"tokens", "--tokens 1T"},
         {"interval-steps", "--interval-steps 100"},
         {"async", "--async"},
         {"runs", "--runs 20"},
         {"run-length", "--run-length 10d"},
         {"seed", "--seed 9"},
         {"weibull-shape", "--weibull-shape 0.7"},
         {"reliability", "--reliability " + write_temp("walk-reliability.yaml", "gpu_mtbf: 1000h\n")},
         {"svg", "--svg {file}"},
         {"spares", "--spares 1 --repair 3d"},
         {"swap", "--swap 10min"},
         {"repair", "--repair 3d"},
         {"replan", "--replan"},
         {"threads", "--threads 2"},
         {"json", "--json"}},
        standard_output,
        {"threads"}},
       {});
}

TEST(OptionWalk, Serve) {
  walk({"serve", "serve",
        "--model llama3-70b --hardware h100-sxm --gpus 8 --concurrency 4 --requests 40 --prompt-tokens 256:1024 "
        "--output-tokens 16:64 --threads 1",
        {{"model", ""},
         {"hardware", ""},
         {"gpus", ""},
         {"concurrency", ""},
         {"requests", ""},
         {"rate", "--rate 1"},
         {"request-trace", "--request-trace " + write_temp("walk-requests.csv", "arrival_s,prompt_tokens,output_tokens\n0,8,8\n")},
         {"prompt-tokens", "--prompt-tokens 512"},
         {"output-tokens", "--output-tokens 32"},
         {"seed", "--seed 9"},
         {"ttft-p99", "--ttft-p99 10s"},
         {"tpot-p99", "--tpot-p99 1s"},
         {"tp", "--tp 8"},
         {"pp", "--pp 2"},
         {"replicas", "--replicas 1"},
         {"weights", "--weights fp8"},
         {"kv-cache", "--kv-cache fp8"},
         {"gpu-memory-utilization", "--gpu-memory-utilization 0.8"},
         {"max-batch-tokens", "--max-batch-tokens 512"},
         {"max-seqs", "--max-seqs 2"},
         {"block-size", "--block-size 32"},
         {"trace", "--trace {file}"},
         {"svg", "--svg {file}"},
         {"threads", "--threads 2"},
         {"json", "--json"}},
        standard_output,
        {"threads"}},
       {});
}

}  // namespace
