// No option is accepted and ignored: every option of every subcommand, in
// every way of running it, either changes what the command produces or is
// refused with one line and exit 2. The options come from each command's
// --help, so a new option without a case fails its walk (tests/support/option_walk.h;
// goodput and serve in tests/cli/option_walk_serving_test.cc).
#include "tests/support/option_walk.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/cli_support.h"
#include "tests/support/temp_files.h"

namespace {

using namespace pipeplan::testing;
using namespace pipeplan::testing::option_walk;

// Values that change something, or are refused, in most ways of simulating.
const Args kSimulate{
    {"schedule", "--schedule GPipe"},
    {"schedule-csv", "--schedule-csv " + kData + "/zb1p_2rank_with_comms.csv"},
    {"stages", "--stages 2"},
    {"microbatches", "--microbatches 32"},
    {"virtual", "--virtual 3"},
    {"microbatch-group-size", "--microbatch-group-size 8"},
    {"tf", "--tf 2"},
    {"tb", "--tb 4"},
    {"tw", "--tw 1"},
    {"tcomm", "--tcomm 0.5"},
    {"costs", "--costs " + kConfigs + "/costs/zero_bubble_1p5b.yaml"},
    {"act-bytes", "--act-bytes 1GiB"},
    {"wgrad-bytes", "--wgrad-bytes 1GiB"},
    {"static-bytes", "--static-bytes 1GiB"},
    {"p2p-bytes", "--p2p-bytes 1MiB"},
    {"link-bandwidth", "--link-bandwidth 1GB/s"},
    {"ranks-per-node", "--ranks-per-node 2"},
    {"inter-node-bandwidth", "--inter-node-bandwidth 1GB/s"},
    {"inter-node-latency", "--inter-node-latency 1ms"},
    {"plan", "--plan " + kData + "/no-such-plan.yaml"},
    {"model", "--model llama3-8b"},
    {"hardware", "--hardware h200-sxm"},
    {"layers", "--layers 6,10,10,6"},
    {"profile", "--profile " + kConfigs + "/profiles/llama3-8b-cpu-epyc.yaml"},
    {"layout", "--layout 'Et*6|t*10|t*10|t*6L'"},
    {"micro-batch-size", "--micro-batch-size 2"},
    {"seq", "--seq 1024"},
    {"allow-long-context", "--allow-long-context"},
    {"tp", "--tp 4"},
    {"allow-cross-node-tp", "--allow-cross-node-tp"},
    {"rank-order", "--rank-order tp-pp-dp"},
    {"cp", "--cp 2"},
    {"sequence-parallel", "--sequence-parallel"},
    {"recompute", "--recompute full"},
    {"recompute-modules", "--recompute-modules layernorm"},
    {"no-flash-attention", "--no-flash-attention"},
    {"dp", "--dp 2"},
    {"ep", "--ep 2"},
    {"etp", "--etp 2"},
    {"mtp-layers", "--mtp-layers 1"},
    {"moe-load-imbalance", "--moe-load-imbalance 1.5"},
    {"moe-capacity-factor", "--moe-capacity-factor 0.5"},
    {"moe-dispatcher", "--moe-dispatcher deepep"},
    {"moe-a2a-overlap", "--moe-a2a-overlap"},
    {"zero", "--zero 1"},
    {"overlap-grad-reduce", "--overlap-grad-reduce"},
    {"overlap-param-gather", "--overlap-param-gather"},
    {"grad-reduce-in-bf16", "--grad-reduce-in-bf16"},
    {"optimizer-states-in-bf16", "--optimizer-states-in-bf16"},
    {"master-weights-in-bf16", "--master-weights-in-bf16"},
    {"fp8-param-gather", "--fp8-param-gather"},
    {"tp-comm-overlap", "--tp-comm-overlap"},
    {"precision", "--precision fp8"},
    {"memory-cap", "--memory-cap 1GiB"},
    {"no-overlap", "--no-overlap"},
    {"recv-placement", "--recv-placement pytorch"},
    {"overlap-f-b", "--overlap-f-b sequential"},
    {"json", "--json"},
    {"gantt", "--gantt"},
    {"trace", "--trace {file}"},
    {"svg", "--svg {file}"},
    {"window", "--window 0%:50%"},
    {"explain", "--explain"},
    {"activation-limit", "--activation-limit 1"},
    {"csv-out", "--csv-out {file}"},
    {"offload", "--offload"},
    {"host-bandwidth", "--host-bandwidth 1GB/s"},
    {"recompute-in-bubbles", "--recompute-in-bubbles"},
    {"tr", "--tr 0.5"},
    {"recompute-bytes", "--recompute-bytes 1MiB"},
};

TEST(OptionWalk, SimulateWithGivenTimes) {
  walk({"times", "simulate", "--schedule Interleaved1F1B -p 4 -m 64 --tf 1 --tb 1", {}}, kSimulate);
}

TEST(OptionWalk, SimulateEverySchedule) {
  walk({"all", "simulate", "--schedule all -p 4 -m 8 --tf 1 --tb 3 --tw 1 --tcomm 0.7", {}}, kSimulate);
}

TEST(OptionWalk, SimulateASearchedSchedule) {
  walk({"searched", "simulate",
        "--schedule ZBAuto -p 4 -m 24 --tf 1 --tb 1 --tw 0.5 --act-bytes 1GiB --wgrad-bytes 0.5GiB",
        {{"virtual", "--virtual 2"}, {"activation-limit", "--activation-limit 1"}}},
       kSimulate);
}

TEST(OptionWalk, SimulateAPyTorchCsv) {
  const std::string csv = temp_path("walk-dualpipev.csv");
  ASSERT_EQ(run("schedule --schedule DualPipeV -p 2 -m 64 --csv-out " + csv).code, 0);
  // A CSV fixes the ranks and micro-batches (a value that differs is
  // refused) and runs overlapped pairs one half after the other by default.
  walk({"csv", "simulate", "--schedule-csv " + csv + " --tf 1 --tb 3 --tw 1 --tcomm 0.7",
        {{"stages", "--stages 3"}, {"microbatches", "--microbatches 3"}, {"overlap-f-b", "--overlap-f-b together"}}},
       kSimulate);
}

TEST(OptionWalk, SimulateAModel) {
  walk({"model", "simulate", "--model llama3-8b --hardware h100-sxm -p 4 -m 8 --seq 2048", {}}, kSimulate);
}

TEST(OptionWalk, SimulateAMixtureOfExperts) {
  // Eight experts over ep 8 with etp 2: the EP group spans 16 GPUs, two nodes.
  walk({"moe",
        "simulate",
        "--model mixtral-8x7b --hardware h100-sxm -p 4 -m 8 --seq 2048 --tp 2 --dp 8 --sequence-parallel --ep 8 "
        "--etp 2",
        {{"sequence-parallel", "--no-sequence-parallel"}, {"ep", "--ep 4"}, {"etp", "--etp 1"}}},
       kSimulate);
}

TEST(OptionWalk, SimulateAPlanWithOverrides) {
  const std::string plan = temp_path("walk-plan.yaml");
  ASSERT_EQ(run("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 2048 --tp 2 --pp 4 "
                "--micro-batch-size 1 --schedule 1F1B --recompute none --out " + plan)
                .code,
            0);
  walk({"plan", "simulate", "--plan " + plan, {{"sequence-parallel", "--no-sequence-parallel"}}}, kSimulate);
}

const Args kSchedule{
    {"schedule", "--schedule GPipe"},
    {"schedule-csv", "--schedule-csv " + kData + "/zb1p_2rank_with_comms.csv"},
    {"stages", "--stages 2"},
    {"microbatches", "--microbatches 16"},
    {"virtual", "--virtual 3"},
    {"microbatch-group-size", "--microbatch-group-size 8"},
    {"list", "--list"},
    {"lowered", "--lowered"},
    {"max-steps", "--max-steps 4"},
    {"recv-placement", "--recv-placement before-use"},
    {"csv-out", "--csv-out {file}"},
};

TEST(OptionWalk, Schedule) {
  walk({"generated", "schedule", "--schedule Interleaved1F1B -p 4 -m 8", {}}, kSchedule);
  walk({"csv", "schedule", "--schedule-csv " + kData + "/zb1p_2rank_with_comms.csv",
        {{"stages", "--stages 3"}, {"microbatches", "--microbatches 3"}}},
       kSchedule);
  walk({"list", "schedule", "--list", {{"list", ""}}}, kSchedule);
}

TEST(OptionWalk, Plan) {
  walk({"plan",
        "plan",
        "--model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 2048",
        {{"model", "--model gpt3-175b"},
         {"hardware", "--hardware h200-sxm"},
         {"gpus", "--gpus 16"},
         {"global-batch", "--global-batch 32"},
         {"seq", "--seq 1024"},
         {"allow-long-context", "--allow-long-context"},
         {"memory-cap", "--memory-cap 30GiB"},
         {"tp", "--tp 2"},
         {"allow-cross-node-tp", "--allow-cross-node-tp"},
         {"rank-order", "--rank-order tp-pp-dp"},
         {"cp", "--cp 2"},
         {"pp", "--pp 2"},
         {"dp", "--dp 2"},
         {"ep", "--ep 2"},
         {"etp", "--etp 2"},
         {"mtp-layers", "--mtp-layers 1"},
         {"moe-load-imbalance", "--moe-load-imbalance 1.5"},
         {"moe-capacity-factor", "--moe-capacity-factor 1"},
         {"moe-dispatcher", "--moe-dispatcher deepep"},
         {"moe-a2a-overlap", "--moe-a2a-overlap"},
         {"sequence-parallel", "--no-sequence-parallel"},
         {"zero", "--zero 0"},
         {"recompute-in-bubbles", "--recompute-in-bubbles"},
         {"overlap-grad-reduce", "--overlap-grad-reduce"},
         {"overlap-param-gather", "--overlap-param-gather"},
         {"grad-reduce-in-bf16", "--grad-reduce-in-bf16"},
         {"optimizer-states-in-bf16", "--optimizer-states-in-bf16"},
         {"master-weights-in-bf16", "--master-weights-in-bf16"},
         {"fp8-param-gather", "--fp8-param-gather"},
         {"tp-comm-overlap", "--tp-comm-overlap"},
         {"precision", "--precision fp8"},
         {"micro-batch-size", "--micro-batch-size 2"},
         {"schedule", "--schedule GPipe"},
         {"virtual", "--virtual 3"},
         {"recompute", "--recompute full"},
         {"recompute-modules", "--recompute-modules layernorm"},
         {"layers", "--layers 7,9,9,7"},
         {"layout", "--layout 'Et*7|t*9|t*9|t*7L'"},
         {"profile", "--profile " + kConfigs + "/profiles/llama3-8b-cpu-epyc.yaml"},
         {"partition", "--partition uniform"},
         {"balance-slack", "--balance-slack 20%"},
         {"objective", "--objective memory"},
         {"top", "--top 2"},
         {"framework", "--framework megatron-lm"},
         {"pareto", "--pareto 1"},
         {"verbose", "--verbose"},
         {"threads", "--threads 1"},
         {"json", "--json"},
         {"out", "--out {file}"},
         {"torchtitan-out", "--torchtitan-out {file}"},
         {"megatron-bridge-out", "--megatron-bridge-out {file}"},
         {"deepspeed-out", "--deepspeed-out {file}"}},
        [](const CommandResult& r) {
          // The search's own time varies from run to run.
          const std::string text =
              std::regex_replace(r.out, std::regex(R"((candidates in|in full in) [0-9.]+ [a-z]+)"), "");
          return std::regex_replace(text, std::regex(R"("search_time_s": [0-9.e+-]+)"), "");
        },
        {"threads"}},
       {});
}

TEST(OptionWalk, Calibrate) {
  walk({"calibrate", "calibrate", kConfigs + "/calibration/dgx-h100-nemo.yaml --fit gpu.efficiency.matmul.max",
        {{"fit", "--fit gpu.efficiency.memory.max"},
         {"holdout", "--holdout 1"},
         {"out", "--out {file}"},
         {"name", "--name fitted"},
         {"report", "--report"},
         {"json", "--json"}}},
       {});
}

TEST(OptionWalk, ModelAndHardware) {
  walk({"model show",
        "model show",
        "llama3-8b --seq 2048",
        {{"micro-batch-size", "--micro-batch-size 2"},
         {"seq", "--seq 1024"},
         {"allow-long-context", "--allow-long-context"},
         {"tp", "--tp 2"},
         {"allow-cross-node-tp", "--allow-cross-node-tp"},
         {"cp", "--cp 2"},
         {"sequence-parallel", "--sequence-parallel"},
         {"recompute", "--recompute full"},
         {"recompute-modules", "--recompute-modules layernorm"},
         {"no-flash-attention", "--no-flash-attention"},
         {"hardware", "--hardware h100-sxm"},
         {"json", "--json"}}},
       {});
  walk({"hardware show", "hardware show", "h100-sxm", {{"json", "--json"}}}, {});
  walk({"hardware place",
        "hardware place",
        "mixed-h100-a100 --tp 8 --pp 4 --dp 2",
        {{"tp", "--tp 4"},
         {"cp", "--cp 2"},
         {"pp", "--pp 2"},
         {"dp", "--dp 1"},
         {"ep", "--ep 2"},
         {"etp", "--etp 1"},
         {"order", "--order pp-tp-cp-dp --allow-cross-node-tp"},
         {"allow-cross-node-tp", "--allow-cross-node-tp --tp 16 --pp 2"},
         {"json", "--json"}}},
       {});
}

// Times are measured; what must change is what the profile says it measured.
std::string profile_shape(const std::string& path) {
  std::istringstream lines(slurp(path));
  std::string kept;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("_s:") == std::string::npos && line.find("date:") == std::string::npos &&
        line.find("achieved") == std::string::npos) {
      kept += std::regex_replace(line, std::regex(R"(median_s: [^,]+, min_s: [^,]+, max_s: [^,]+, )"), "") + "\n";
    }
  }
  return kept;
}

TEST(OptionWalk, Profile) {
  const std::string out = temp_path("walk-profile.yaml");
  walk({"profile", "profile", "--backend cpu --model tiny --micro-batch-size 1 --seq 16 --warmup 0 --repeats 1 --out " + out,
        {{"backend", "--backend cuda"},
         {"model", "--model gpt2-small"},
         {"micro-batch-size", "--micro-batch-size 1,2"},
         {"seq", "--seq 32"},
         {"tp", "--tp 2"},
         {"warmup", "--warmup 1"},
         {"repeats", "--repeats 2"},
         {"out", "--out {file}"}},
        [out](const CommandResult&) { return profile_shape(out); }},
       {});
}

// A GEMM sweep's shapes, settings and table, its times and date left out.
std::string gemm_sweep_shape(const CommandResult& result, const std::string& path) {
  const std::regex timed(R"([0-9]+\.[0-9]+(e-?[0-9]+)?|date: .*)");
  return std::regex_replace(result.out, timed, "#") + std::regex_replace(slurp(path), timed, "#");
}

TEST(OptionWalk, ProfileGemm) {
  const std::string out = temp_path("walk-gemm.yaml");
  walk({"profile gemm",
        "profile gemm",
        "--shapes 16x16x16 --warmup 0 --repeats 1 --out " + out,
        {{"backend", "--backend cuda"},
         {"shapes", "--shapes 16x32x8"},
         {"hardware", "--hardware h100-sxm"},
         {"warmup", "--warmup 1"},
         {"repeats", "--repeats 2"},
         {"out", "--out {file}"}},
        [out](const CommandResult& r) { return gemm_sweep_shape(r, out); }},
       {});
}

// What a validation reports besides its measured times.
std::string validation_shape(const std::string& dir) {
  nlohmann::json json = nlohmann::json::parse(slurp(dir + "/comparison.json"));
  nlohmann::json kept = {{"settings", json["settings"]},
                         {"cost_source", json["cost_source"]},
                         {"notes", json["notes"]},
                         {"iterations", json["measured_iterations_s"].size()},
                         {"gradients", json.contains("gradient_check")}};
  return kept.dump();
}

TEST(OptionWalk, Validate) {
  const std::string plan = temp_path("walk-validate-plan.yaml"), dir = temp_path("walk-validation");
  const std::string profile = temp_path("walk-validate-profile.yaml");
  ASSERT_EQ(run("plan --model tiny --hardware cpu --gpus 1 --pp 1 --global-batch 2 --seq 16 --out " + plan).code, 0);
  ASSERT_EQ(run("profile --backend cpu --model tiny --micro-batch-size 1 --seq 16 --warmup 0 --repeats 1 --out " +
                profile)
                .code,
            0);
  walk({"validate", "validate", "--plan " + plan + " --iterations 1 --warmup 0 --out " + dir,
        {{"plan", "--plan " + kData + "/no-such-plan.yaml"},
         {"backend", "--backend cuda"},
         {"iterations", "--iterations 2"},
         {"warmup", "--warmup 1"},
         {"profile", "--profile " + profile},
         {"out", "--out {file}"},
         {"timeout", "--timeout 30"},
         {"check-gradients", "--check-gradients"},
         {"seed", "--seed 7"},
         {"inject-stall", "--inject-stall 0"}},
        [dir](const CommandResult&) { return validation_shape(dir); }},
       {});
}

TEST(OptionWalk, Study) {
  const std::string dir = temp_path("walk-study");
  walk({"study", "study", kConfigs + "/studies/bubble_vs_microbatches.yaml --out " + dir,
        {{"out", "--out {file}"}, {"jobs", "--jobs 1"}, {"yes", "--yes"}},
        [dir](const CommandResult&) { return slurp(dir + "/results.csv"); },
        {"jobs"}},
       {});
}

}  // namespace
