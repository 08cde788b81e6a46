"""Reading `vllm bench serve` output (settings and results), and calibrating the lab to it.

SAMPLE below was written by us, line for line in the format `vllm/benchmarks/serve.py`
(function `benchmark`) prints: the header centred in 50 '=', each figure as
"{:<40} {:<10}" (rates and ms with .2f), the section rules, the closing rule. Its
numbers are made up but self-consistent (1,000 requests of 1,024 + 128 tokens at 4 req/s,
as `--dataset-name random` sends by default); it is not the output of a real run.
"""

from __future__ import annotations

import json
import math

import pytest

from pysim.sims.lab import config as lab_config, text as lab_text, view as lab_view
from pysim.timing import fit
from pysim.traffic import bench_serve, benchsummary
from pysim.config import ConfigError, from_mapping
from pysim.engine.scheduler import SchedulerConfig
from pysim.timing.steptime import DEFAULTS, Coefficients


def line(label, value, fmt=""):
    return "{:<40} {:<10}".format(label, format(value, fmt))


def summary(completed=1000, rate=4.0, duration=251.37, total_in=1_024_000, total_out=128_000,
            ttft=41.27, tpot=12.85, concurrency=None):
    out = ["tip: install termplotlib and gnuplot to plot the metrics",
           "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
           line("Successful requests:", completed), line("Failed requests:", 0)]
    if concurrency is not None:
        out.append(line("Maximum request concurrency:", concurrency))
    if rate is not None:
        out.append(line("Request rate configured (RPS):", rate, ".2f"))
    out += [line("Benchmark duration (s):", duration, ".2f"),
            line("Total input tokens:", total_in), line("Total generated tokens:", total_out),
            line("Request throughput (req/s):", completed / duration, ".2f"),
            line("Output token throughput (tok/s):", total_out / duration, ".2f"),
            line("Peak output token throughput (tok/s):", 742.0, ".2f"),
            line("Peak concurrent requests:", 14.0, ".2f"),
            line("Total token throughput (tok/s):", (total_in + total_out) / duration, ".2f"),
            "{s:{c}^{n}}".format(s="Time to First Token", n=50, c="-"),
            line("Mean TTFT (ms):", ttft, ".2f"), line("Median TTFT (ms):", ttft * 0.9, ".2f"),
            line("P99 TTFT (ms):", ttft * 2.5, ".2f"),
            "{s:{c}^{n}}".format(s="Time per Output Token (excl. 1st token)", n=50, c="-"),
            line("Mean TPOT (ms):", tpot, ".2f"), line("Median TPOT (ms):", tpot, ".2f"),
            line("P99 TPOT (ms):", tpot * 1.3, ".2f"),
            "{s:{c}^{n}}".format(s="Inter-token Latency", n=50, c="-"),
            line("Mean ITL (ms):", tpot, ".2f"), line("Median ITL (ms):", tpot * 0.97, ".2f"),
            line("P99 ITL (ms):", tpot * 3, ".2f"),
            "=" * 50]
    return "\n".join(out) + "\n"


SAMPLE = summary()


def test_sample_summary_parses():
    (run,) = benchsummary.parse(SAMPLE)
    b = run.bench
    assert b.num_prompts == 1000 and b.request_rate == 4.0 and b.max_concurrency is None
    assert run.measured["mean_ttft_ms"] == 41.27 and run.measured["mean_tpot_ms"] == 12.85
    # Output throughput as printed: 128,000 / 251.37 s, rounded to .2f by the summary.
    assert run.measured["output_throughput"] == pytest.approx(128_000 / 251.37, abs=0.005)
    # Mean lengths from the totals: 1,024,000 / 1,000 and 128,000 / 1,000, said in the notes.
    assert (b.random_input_len, b.random_output_len) == (1024, 128)
    assert any("from the summary's total" in n for n in run.notes)
    assert "Serving Benchmark Result" in SAMPLE.splitlines()[1]
    assert len(SAMPLE.splitlines()[2]) == 51  # "{:<40} {:<10}": 40 + 1 + 10


def test_several_runs_and_inf_rate_with_concurrency():
    text = SAMPLE + "\nsome log line\n" + summary(rate=None, concurrency=16, ttft=80.0)
    runs = benchsummary.parse(text)
    assert len(runs) == 2
    assert math.isinf(runs[1].bench.request_rate) and runs[1].bench.max_concurrency == 16
    assert runs[1].measured["mean_ttft_ms"] == 80.0
    assert any("inf" in n for n in runs[1].notes)


COMMAND = ("vllm bench serve --model meta-llama/Llama-3.1-8B-Instruct --dataset-name random "
           "--random-input-len 2000 --random-output-len 100 --random-range-ratio 0.1 "
           "--random-prefix-len 64 --num-prompts 50 --request-rate 3 --burstiness 0.5 "
           "--max-concurrency 8 --ignore-eos")


def test_settings_come_from_the_command_line_above_the_summary():
    (run,) = benchsummary.parse("$ " + COMMAND + "\n" + summary(completed=50, rate=3.0))
    b = run.bench
    assert (b.random_input_len, b.random_output_len, b.random_range_ratio, b.random_prefix_len) == \
        (2000, 100, 0.1, 64)
    assert (b.num_prompts, b.request_rate, b.burstiness, b.max_concurrency) == (50, 3.0, 0.5, 8)
    assert not any("total" in n for n in run.notes)  # nothing had to be derived


def test_settings_come_from_a_namespace_and_log_lines():
    namespace = ("Namespace(subparser='bench', backend='vllm', dataset_name='random', "
                 "random_input_len=512, random_output_len=64, random_range_ratio=0.0, "
                 "num_prompts=20, request_rate=inf, burstiness=1.0, max_concurrency=None, seed=0)")
    text = namespace + "\nTraffic request rate: 2.5\nBurstiness factor: 2.0 (Gamma distribution)\n"
    (run,) = benchsummary.parse(text + summary(completed=20, rate=None))
    b = run.bench
    assert (b.random_input_len, b.random_output_len, b.num_prompts) == (512, 64, 20)
    assert (b.request_rate, b.burstiness, b.max_concurrency) == (2.5, 2.0, None)


def test_result_json_one_object_and_appended_lines():
    obj = {"date": "20250101-000000", "backend": "vllm", "num_prompts": 200,
           "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 8, "duration": 60.5,
           "completed": 200, "failed": 0, "total_input_tokens": 102_400,
           "total_output_tokens": 25_600, "request_throughput": 3.3, "mean_ttft_ms": 55.0,
           "median_ttft_ms": 50.0, "mean_tpot_ms": 9.5, "median_tpot_ms": 9.4}
    (run,) = benchsummary.parse(json.dumps(obj, indent=2))
    assert math.isinf(run.bench.request_rate) and run.bench.max_concurrency == 8
    assert (run.bench.random_input_len, run.bench.random_output_len) == (512, 128)
    assert run.measured["output_throughput"] == pytest.approx(25_600 / 60.5)
    two = json.dumps(obj) + "\n" + json.dumps(obj | {"request_rate": 2.0, "max_concurrency": None})
    runs = benchsummary.parse(two)
    assert runs[1].bench.request_rate == 2.0 and runs[1].bench.max_concurrency is None


@pytest.mark.parametrize("text, words", [
    ("hello\nworld", "line 1: expected a '=="),
    (SAMPLE.replace("Mean TTFT (ms):                          41.27",
                    "Mean TTFT (ms):                          fast"),
     # line 1 the tip, 2 the header, 3-13 the 11 figures above the TTFT rule (14)
     "line 15: expected 'Label: number'"),
    (SAMPLE.replace(line("Mean TPOT (ms):", 12.85, ".2f") + "\n", ""), "missing 'Mean TPOT (ms):'"),
    (SAMPLE.replace(line("Total generated tokens:", 128000) + "\n", ""),
     "answer length is unknown: paste the command line with --random-output-len"),
    (SAMPLE.replace(line("Successful requests:", 1000), line("Successful requests:", 0)),
     "at least 1 successful request"),
    ("--random-range-ratio 1.5\n" + SAMPLE, "--random-range-ratio is '1.5'; expected a number from 0 to 0.99"),
    ("--num-prompts many\n" + SAMPLE, "--num-prompts is 'many'"),
    ('{"completed": 10,\n "duration": }', "line 2: expected a --save-result JSON object"),
    ('{"completed": "ten"}', "'completed' should be a number"),
    ('{"completed": 10}', "missing 'duration'"),
    ("[1, 2]", "line 1: expected a '=="),
    (SAMPLE * 5, "at most 4"),
])
def test_broken_text_names_the_line_and_what_was_expected(text, words):
    with pytest.raises(ConfigError) as err:
        benchsummary.parse(text)
    assert err.value.field == "bench_text"
    assert words in err.value.message, err.value.message


def test_broken_text_through_the_lab_changes_nothing_else():
    with pytest.raises(ConfigError) as err:
        lab_view.run(from_mapping(lab_config.LabConfig, {"bench_text": "Mean TTFT: soon"}), [])
    assert err.value.field == "bench_text" and "line 1" in err.value.message


def test_a_paste_too_large_to_replay_is_refused_naming_the_bound():
    with pytest.raises(ConfigError) as err:
        lab_view.run(from_mapping(lab_config.LabConfig, {"bench_text": "--num-prompts 9000\n" + SAMPLE}), [])
    assert err.value.field == "bench_text" and "at most 5,000" in err.value.message


# ------------------------------------------------------------------ calibration
KNOWN = Coefficients(3.0, 40.0, 0.62, 0.45)


def _printed_runs(benches, coefficients=KNOWN):
    """Benchmarks 'measured' on the model itself with known coefficients, printed as
    vllm bench serve prints them (so rounded to 0.01 ms), each after its command line."""
    server = fit.ServerSetup("H100", "llama-3.1-8b", SchedulerConfig(1024, 8192))
    texts = []
    for b in benches:
        m = fit.predict(fit.Run(b, server, {}), coefficients)
        texts.append("$ " + b.command() + "\n" + bench_serve.summary_text(m, b) + "\n")
    return server, texts


BENCHES = [bench_serve.Benchmark(num_prompts=40, random_input_len=4000, random_output_len=16,
                                 max_concurrency=1),  # prefill-bound: compute efficiency
           bench_serve.Benchmark(num_prompts=60, random_input_len=64, random_output_len=200,
                                 max_concurrency=1),  # lone decodes: step overhead, memory
           bench_serve.Benchmark(num_prompts=300, random_input_len=2000, random_output_len=128,
                                 max_concurrency=128),  # big batches, more KV than weights
           bench_serve.Benchmark(num_prompts=200, random_input_len=1024, random_output_len=64,
                                 request_rate=6.0),
           bench_serve.Benchmark(num_prompts=256, random_input_len=6000, random_output_len=64,
                                 max_concurrency=256)]  # KV read 4x the weights: memory side


def test_the_fit_recovers_known_coefficients_from_runs_of_the_model():
    server, texts = _printed_runs(BENCHES)
    runs = [fit.Run(p.bench, server, p.measured) for t in texts for p in benchsummary.parse(t)]
    # Started far off (the H100's defaults) and barely pulled back towards them. The
    # replays then match every run to within 1%. Runs printed to 0.01 ms pin the compute
    # side tightly; a fixed cost per step and a slower memory trade against each other on
    # decodes (both lengthen every step), and only the run reading 4x the weights in KV
    # tells them apart; the run at a finite rate is fitted on its last replay's schedule.
    # So those three land within 10 and 25%, on a plateau where every run is within 1%.
    got = fit.fit(runs, DEFAULTS["H100"], weight=1e-9)
    for run in runs:
        assert all(abs(e) < 0.01 for e in fit.errors(run, fit.predict(run, got)).values())
    assert got.compute_efficiency == pytest.approx(KNOWN.compute_efficiency, rel=0.02)
    assert got.memory_efficiency == pytest.approx(KNOWN.memory_efficiency, rel=0.10)
    assert got.step_overhead_ms == pytest.approx(KNOWN.step_overhead_ms, rel=0.25)
    assert got.request_overhead_us == pytest.approx(KNOWN.request_overhead_us, rel=0.25)


def test_calibration_in_the_lab_shows_each_run_and_reruns_with_the_fit():
    _server, texts = _printed_runs(BENCHES[:4])  # the page takes 4 runs at most
    text = "".join(texts)
    view = lab_view.run(from_mapping(lab_config.LabConfig, {"bench_text": text, "window_minutes": 1}), [])
    cal = view["calibration"]
    assert cal["coefficients_before"] == DEFAULTS["H100"].record()
    assert view["hardware"]["coefficients"] == cal["coefficients"]
    assert cal["coefficients"]["source"] == "fitted to 4 pasted runs"
    assert len(cal["runs"]) == 4 and cal["runs"][2]["benchmark"]["max_concurrency"] == 128
    # Measured and replayed side by side. The lab's fit is pulled towards the GPU's
    # defaults (fit.PRIOR_WEIGHT: a reader's few runs should not swing four numbers
    # freely), so it matches these made-up runs to within 10%, not 1%.
    for run in cal["runs"]:
        assert set(run["measured"]) == set(run["replayed"]) >= {"mean_ttft_ms", "mean_tpot_ms",
                                                                "output_throughput"}
        # the fit matches the means it minimises; the tails it never sees follow within 25%
        assert all(abs(e) < (0.10 if k in fit.FIGURES else 0.25) for k, e in run["error"].items()), run["error"]
    assert cal["coefficients"]["compute_efficiency"] == pytest.approx(0.45, rel=0.1)
    # The page and the command line print one sentence, pysim's.
    c = cal["coefficients"]
    assert cal["sentence"].startswith("Fitted to your 4 runs: step overhead ")
    assert f"memory efficiency {c['memory_efficiency']:.2f}" in cal["sentence"]
    assert f"TTFT {cal['mean_abs_error']['mean_ttft_ms']:.1%}" in cal["sentence"]
    assert "  " + cal["sentence"] in lab_text.text(view)


def test_a_summary_pasted_on_one_line_and_cut_short_still_reads():
    # As a rendered issue shows it: line breaks lost, the end cut off ("P99 TPOT (ms)...").
    text = SAMPLE.replace("\n", " ")
    cut = text[:text.index("P99 TPOT (ms):") + len("P99 TPOT (ms)")] + "..."
    for pasted in (text, cut):
        (run,) = benchsummary.parse(pasted)
        assert run.measured["mean_ttft_ms"] == 41.27 and run.measured["mean_tpot_ms"] == 12.85
        assert run.bench.num_prompts == 1000 and run.bench.request_rate == 4.0
