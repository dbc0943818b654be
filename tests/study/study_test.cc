// Studies: the shipped examples run (small enough for CI), their CSV agrees
// with direct runs of the same points, every SVG is well formed with the
// expected series, results do not depend on the job count, and bad study
// files are refused before any point runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "commands/in_process.h"
#include "common/error.h"
#include "study/metric_path.h"
#include "study/plot_data.h"
#include "study/point_command.h"
#include "study/runner.h"
#include "study/study_file.h"
#include "study/study_report.h"
#include "tests/support/temp_files.h"
#include "tests/support/xml_check.h"

namespace pipeplan::study {
namespace {

const std::string kStudies = std::string(PIPEPLAN_CONFIG_DIR) + "/studies/";

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Ran {
  StudyFile study;
  std::vector<PointOutcome> outcomes;
  std::string dir;
};

Ran run(const std::string& name, int jobs = 2) {
  Ran ran{read_study(kStudies + name + ".yaml"), {}, testing::temp_path("study_" + name + std::to_string(jobs))};
  std::filesystem::create_directories(ran.dir);
  ran.outcomes = run_study(ran.study, {ran.dir, jobs, false, {}, {}});
  write_study_outputs(ran.study, ran.outcomes, ran.dir);
  return ran;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t found = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++found;
  return found;
}

// A point rerun through the command directly gives the study's numbers.
void expect_same_as_direct_run(const Ran& ran, std::size_t point) {
  const PointOutcome& outcome = ran.outcomes.at(point);
  ASSERT_TRUE(outcome.error.empty()) << outcome.error;
  const auto direct = commands::run_in_process(mode_command(ran.study.mode), outcome.arguments);
  for (const std::string& metric : ran.study.metrics) {
    EXPECT_EQ(extract_metric(direct, metric), outcome.metrics.at(metric)) << metric;
  }
}

void expect_outputs(const Ran& ran, const std::vector<std::string>& series) {
  const std::string csv = slurp(ran.dir + "/results.csv");
  EXPECT_EQ(count(csv, "\n"), ran.outcomes.size() + 1);  // header + a row per point
  for (const PlotSpec& plot : ran.study.plots) {
    const std::string svg = slurp(ran.dir + "/" + plot.name + ".svg");
    EXPECT_EQ(testing::xml_problem(svg), "") << plot.name;
    if (plot.kind == PlotKind::kGantt || plot.kind == PlotKind::kStackedBar || plot.series.empty()) continue;
    for (const std::string& name : series) {
      EXPECT_NE(svg.find("data-series=\"" + name + "\""), std::string::npos) << plot.name << " " << name;
    }
  }
  const std::string html = slurp(ran.dir + "/report.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  // Self-contained: nothing to fetch (the SVG namespace URI is a name, not a fetch).
  for (const char* fetch : {"src=", "<link", "<script", "url(", "href=\"http"}) {
    EXPECT_EQ(html.find(fetch), std::string::npos) << fetch;
  }
  EXPECT_NE(slurp(ran.dir + "/report.md").find(ran.study.title), std::string::npos);
}

TEST(Study, BubbleStudyMatchesDirectRunsAndClosedForms) {
  const Ran ran = run("bubble_vs_microbatches");
  ASSERT_EQ(ran.outcomes.size(), 5u * 3u * 4u);
  for (std::size_t point : {0u, 17u, 59u}) expect_same_as_direct_run(ran, point);
  for (const PointOutcome& outcome : ran.outcomes) {
    ASSERT_TRUE(outcome.error.empty()) << outcome.error;
    const double p = std::stod(outcome.point.value_of("stages"));
    const double m = std::stod(outcome.point.value_of("microbatches"));
    const std::string schedule = outcome.point.value_of("schedule");
    const double rate = outcome.metrics.at("bubble_rate").get<double>();
    // Narayanan et al. 2021 (GPipe, 1F1B; interleaved with v = 2), Qi et al. 2024 (ZB-H2 at F = B = W).
    double expected = -1;
    if (schedule == "GPipe" || schedule == "1F1B") expected = (p - 1) / (m + p - 1);
    if (schedule == "Interleaved1F1B") expected = (p - 1) / (2 * m + p - 1);
    if (schedule == "ZBH2" && m >= 2 * p) expected = 0;  // zero once the 2p - 1 warm-up forwards fit
    if (expected >= 0) {
      EXPECT_NEAR(rate, expected, 1e-9) << schedule << " p=" << p << " m=" << m;
    }
  }
  // Legends name the swept key ("schedule = 1F1B"); closed forms keep their labels.
  expect_outputs(ran, {"schedule = GPipe", "schedule = 1F1B", "schedule = Interleaved1F1B", "schedule = ZBH1",
                       "schedule = ZBH2", "(p-1)/(m+p-1)"});
}

TEST(Study, MemoryStudyHasEveryScheduleAndRank) {
  const Ran ran = run("memory_by_schedule");
  ASSERT_EQ(ran.outcomes.size(), 7u);
  expect_same_as_direct_run(ran, 1);
  EXPECT_EQ(ran.outcomes[1].metrics.at("ranks_detail.*.peak_memory_bytes").size(), 4u);
  expect_outputs(ran, {"schedule = GPipe", "schedule = 1F1B", "schedule = ZBH2", "schedule = DualPipeV"});
  EXPECT_NE(slurp(ran.dir + "/gantt_zbh1.svg").find("ZBH1"), std::string::npos);
}

TEST(Study, SplitStudyShowsThePlannedSplitLowerThanTheEvenOne) {
  const Ran ran = run("even_vs_planned_split");
  ASSERT_EQ(ran.outcomes.size(), 2u);
  expect_same_as_direct_run(ran, 1);
  const auto peak = [&](std::size_t point) {
    const auto& peaks = ran.outcomes[point].metrics.at("best.peak_memory_bytes");
    return *std::max_element(peaks.begin(), peaks.end());
  };
  EXPECT_EQ(ran.outcomes[0].metrics.at("best.stage_layers"), (std::vector<int>{20, 20, 20, 20}));
  EXPECT_LT(peak(1).get<double>(), peak(0).get<double>());
  expect_outputs(ran, {"partition = uniform", "partition = memory"});
  EXPECT_FALSE(std::filesystem::exists(ran.dir + "/configs"));  // no point derives a file
}

TEST(Study, NetworkStudySweepsAHardwareField) {
  const Ran ran = run("llama405b_network");
  ASSERT_EQ(ran.outcomes.size(), 3u);
  expect_same_as_direct_run(ran, 0);
  const double slow = ran.outcomes[0].metrics.at("best.tokens_per_s").get<double>();
  const double fast = ran.outcomes[2].metrics.at("best.tokens_per_s").get<double>();
  EXPECT_LE(slow, fast);  // a faster network never hurts the best plan
  EXPECT_NE(slurp(ran.dir + "/configs/point-0-hardware.yaml").find("25GB/s"), std::string::npos);
  expect_outputs(ran, {});
}

TEST(Study, ClusterStudySweepsTheSpinesOversubscription) {
  // Every data-parallel ring crosses the spine: its bandwidth term scales
  // with the oversubscription and its latency does not, so sync(k) = L + k B
  // and sync(4) - sync(2) = 2 (sync(2) - sync(1)).
  const Ran ran = run("spine_oversubscription");
  ASSERT_EQ(ran.outcomes.size(), 3u);
  expect_same_as_direct_run(ran, 1);
  std::vector<double> sync;
  for (const PointOutcome& outcome : ran.outcomes) {
    ASSERT_TRUE(outcome.error.empty()) << outcome.error;
    sync.push_back(outcome.metrics.at("gradient_sync_s").get<double>());
  }
  EXPECT_GT(sync[0], 0);
  EXPECT_NEAR(sync[2] - sync[1], 2 * (sync[1] - sync[0]), 1e-9 * sync[2]);
  const std::string derived = slurp(ran.dir + "/configs/point-2-hardware.yaml");
  EXPECT_NE(derived.find("oversubscription: 4"), std::string::npos) << derived;
  expect_outputs(ran, {});
}

TEST(Study, PointsThatFailBesidePointsThatRunAreReportedNotFatal) {
  // 4 GPUs per node leave 64 GPUs, fewer than the 128 the layout takes.
  const std::string file = testing::temp_path("study_partial.yaml");
  std::string text = slurp(kStudies + "spine_oversubscription.yaml");
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"[1, 2, 4]", "[8, 4]"},
                                 {"network.spine.oversubscription", "node_groups.l40s.gpus_per_node"}}) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  std::ofstream(file) << text;
  const StudyFile study = read_study(file);
  const std::string dir = testing::temp_path("study_partial");
  std::filesystem::create_directories(dir);
  const std::vector<PointOutcome> outcomes = run_study(study, {dir, 1, false, {}, {}});
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_TRUE(outcomes[0].error.empty()) << outcomes[0].error;
  EXPECT_NE(outcomes[1].error.find("exceeds"), std::string::npos) << outcomes[1].error;
  write_study_outputs(study, outcomes, dir);
  EXPECT_NE(slurp(dir + "/results.csv").find("exceeds"), std::string::npos);
}

TEST(Study, ASweptClusterFieldNamesATierOrGroupThatExists) {
  StudyFile study = read_study(kStudies + "spine_oversubscription.yaml");
  StudyPoint point;
  point.values = {{"hardware.network.core.oversubscription", "2"}};
  try {
    point_arguments(study, point, testing::temp_path("study_bad_tier"));
    FAIL() << "an unknown tier was swept";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("no entry named 'core' in network (it has: leaf, spine)"),
              std::string::npos)
        << error.what();
  }
}

TEST(Study, ResultsDoNotDependOnJobs) {
  const Ran one = run("memory_by_schedule", 1);
  const Ran three = run("memory_by_schedule", 3);
  EXPECT_EQ(slurp(one.dir + "/results.csv"), slurp(three.dir + "/results.csv"));
}

TEST(Study, PlotUnitsFollowTheMetricNames) {
  EXPECT_DOUBLE_EQ(in_unit(3.0 * (1 << 30), "ranks_detail.*.peak_memory_bytes", "GiB"), 3.0);
  EXPECT_DOUBLE_EQ(in_unit(2e9, "ranks_detail.*.memory_breakdown.weights", "GB"), 2.0);
  EXPECT_DOUBLE_EQ(in_unit(1.5, "best.iteration_time_s", "ms"), 1500.0);
  EXPECT_DOUBLE_EQ(in_unit(1500.0, "cost_ms", "s"), 1.5);
  EXPECT_DOUBLE_EQ(in_unit(0.25, "bubble_rate", "%"), 25.0);
  EXPECT_DOUBLE_EQ(in_unit(7.0, "best.tokens_per_s", "ms"), 7.0);  // a rate is not a duration
}

std::string error_of(const std::string& yaml) {
  const std::string path = testing::write_temp("bad_study.yaml", yaml);
  try {
    const StudyFile study = read_study(path);
    run_study(study, {testing::temp_path("bad_study_out"), 1, false, {}, {}});
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(Study, BadStudiesAreRefusedBeforeAnyWork) {
  EXPECT_NE(error_of("mode: simulate\nsweep:\n  grid:\n    microbatch: [1, 2]\nmetrics: [cost_ms]\n").find("microbatches"),
            std::string::npos);
  EXPECT_NE(error_of("sweep:\n  grid:\n    stages: []\nmetrics: [cost_ms]\n").find("empty"), std::string::npos);
  EXPECT_NE(error_of("sweep:\n  grid:\n    stages: [2]\nmetrics: [cost_ms]\nplots:\n  - {x: stages, y: mfu}\n")
                .find("not among the metrics"),
            std::string::npos);
  // 2 x 10^6 points: refused before any runs, unless confirmed.
  EXPECT_NE(error_of("sweep:\n  grid:\n    stages: [1,2,3,4,5,6,7,8,9,10]\n    microbatches: [1,2,3,4,5,6,7,8,9,10]\n"
                     "    tf: [1,2,3,4,5,6,7,8,9,10]\n    tb: [1,2,3,4,5,6,7,8,9,10]\n"
                     "    tw: [1,2,3,4,5,6,7,8,9,10]\n    tcomm: [1,2,3,4,5,6,7,8,9,10]\n"
                     "    p2p-bytes: [1,2]\nmetrics: [cost_ms]\n")
                .find("--yes"),
            std::string::npos);
  // Past the hard bound, with --yes too: 2^64 points once ended in
  // "vector::reserve", 10^7 in minutes of expansion and no memory left.
  std::string huge = "sweep:\n  grid:\n";
  std::string values = "[1";
  for (int i = 2; i <= 256; ++i) values.append(",").append(std::to_string(i));
  values += "]";
  for (const char* key : {"tf", "tb", "tw", "tcomm", "p2p-bytes", "act-bytes", "stages", "microbatches"}) {
    huge.append("    ").append(key).append(": ").append(values).append("\n");
  }
  huge += "metrics: [cost_ms]\n";
  const std::string path = testing::write_temp("huge_study.yaml", huge);
  try {
    run_study(read_study(path), {testing::temp_path("huge_study_out"), 1, true, {}, {}});
    ADD_FAILURE() << "a study of 2^64 points ran";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("more than 10^19 points, over the 2000000"), std::string::npos)
        << error.what();
  }
  EXPECT_NE(error_of("sweep:\n  zip:\n    stages: [2, 4]\n    microbatches: [8]\nmetrics: [cost_ms]\n").find("one length"),
            std::string::npos);
  EXPECT_NE(error_of("metrics: [cost_ms]\nplot: []\n").find("unknown key"), std::string::npos);
  EXPECT_NE(error_of("mode: train\nmetrics: [cost_ms]\n").find("simulate, plan, goodput or serve"), std::string::npos);
  // What a plot draws from its points, before any runs: '#' is a list's
  // index, drawn as bars; a stack over it needs exactly one point.
  const std::string ranks = "sweep:\n  grid:\n    stages: [2, 4]\n    microbatches: [8, 16]\n"
                            "metrics: [ranks_detail.*.busy_ms]\nplots:\n";
  EXPECT_NE(error_of(ranks + "  - {x: '#', y: ranks_detail.*.busy_ms}\n").find("x '#' is the index into a list metric"),
            std::string::npos);
  EXPECT_NE(error_of(ranks + "  - {kind: stacked bar, x: '#', y: ranks_detail.*.busy_ms, where: {stages: 4}}\n")
                .find("its 'where' keeps 2 points"),
            std::string::npos);
  EXPECT_EQ(error_of(ranks + "  - {kind: stacked bar, x: '#', y: ranks_detail.*.busy_ms, where: {stages: 4, "
                             "microbatches: 8}}\n"),
            "");
}

TEST(Study, OutputOptionsAndFlagValuesAreCheckedBeforeAnyWork) {
  // An option that writes a file, in base or swept, would have every point
  // write the same file (beside the working folder, concurrently with --jobs).
  for (const std::string key : {"svg", "trace", "csv-out"}) {
    EXPECT_NE(error_of("base:\n  " + key + ": out.file\nmetrics: [cost_ms]\n").find("'" + key + "' writes a file"),
              std::string::npos)
        << key;
  }
  EXPECT_NE(error_of("mode: plan\nbase: {model: llama3-8b, hardware: h100-sxm, gpus: 8, global-batch: 8}\n"
                     "sweep:\n  grid:\n    out: [a.yaml, b.yaml]\nmetrics: [best.tokens_per_s]\n")
                .find("'out' writes a file"),
            std::string::npos);
  for (const std::string key : {"torchtitan-out", "megatron-bridge-out", "deepspeed-out"}) {
    EXPECT_TRUE(commands::writes_file("plan", key)) << key;
  }
  EXPECT_TRUE(commands::writes_file("goodput", "svg"));
  EXPECT_TRUE(commands::writes_file("serve", "trace"));
  EXPECT_FALSE(commands::writes_file("goodput", "async"));
  EXPECT_FALSE(commands::writes_file("simulate", "schedule-csv"));  // read, not written
  // A flag is true or false: YAML 1.1's yes, 1 or on read as off before.
  for (const std::string value : {"yes", "1", "on", "maybe"}) {
    EXPECT_NE(error_of("mode: plan\nbase: {model: llama3-8b, hardware: h100-sxm, gpus: 8, global-batch: 8, "
                       "overlap-grad-reduce: " + value + "}\nmetrics: [best.tokens_per_s]\n")
                  .find("'overlap-grad-reduce' is a flag: give true or false"),
              std::string::npos)
        << value;
  }
  EXPECT_NE(error_of("sweep:\n  grid:\n    no-flash-attention: [true, yes]\nmetrics: [cost_ms]\n")
                .find("is a flag"),
            std::string::npos);
}

TEST(Study, ReportsSpeakInWordsAndUnits) {
  // Tables name metrics in words with their units, fold a long list into
  // its largest entry, legends and best points name the swept key, and a
  // plot's title says which points its `where` keeps.
  const std::string path = testing::write_temp(
      "words_study.yaml",
      "mode: simulate\nbase: {tf: 1ms, tb: 1ms, tw: 1ms}\nsweep:\n  grid:\n    stages: [2, 8]\n"
      "    microbatches: [8, 16]\nmetrics: [bubble_rate, ranks_detail.*.busy_ms]\nplots:\n"
      "  - {name: bubble, x: microbatches, y: bubble_rate, series: stages}\n"
      "  - {name: busy, kind: stacked bar, x: '#', y: ranks_detail.*.busy_ms, where: {stages: 8, microbatches: 16}}\n");
  const StudyFile study = read_study(path);
  const std::string dir = testing::temp_path("words_study");
  std::filesystem::create_directories(dir);
  write_study_outputs(study, run_study(study, {dir, 1, false, {}, {}}), dir);
  const std::string report = slurp(dir + "/report.md");
  EXPECT_NE(report.find("| bubble rate | busy, largest (at) |"), std::string::npos) << report;
  EXPECT_EQ(report.find("ranks_detail"), std::string::npos) << report;
  EXPECT_NE(report.find("- stages = 2: bubble rate "), std::string::npos) << report;
  EXPECT_NE(report.find(" %"), std::string::npos) << report;
  EXPECT_NE(slurp(dir + "/bubble.svg").find("data-series=\"stages = 8\""), std::string::npos);
  EXPECT_NE(plot_title(study.plots[1]).find("(stages = 8, microbatches = 16)"), std::string::npos)
      << plot_title(study.plots[1]);
}

}  // namespace
}  // namespace pipeplan::study
