"""Reading `vllm bench serve` output, and fitting the step-time model to it.

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

from pysim import benchsummary, calibrate, lab
from pysim.config import ConfigError, from_mapping
from pysim.replay import engine_config


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
    assert run.completed == 1000 and run.request_rate == 4.0 and run.max_concurrency is None
    assert run.duration == 251.37 and run.mean_ttft_ms == 41.27 and run.mean_tpot_ms == 12.85
    # Mean lengths from the totals: 1,024,000 / 1,000 and 128,000 / 1,000.
    assert (run.mean_prompt_tokens, run.mean_output_tokens) == (1024, 128)
    assert "Serving Benchmark Result" in SAMPLE.splitlines()[1]
    assert len(SAMPLE.splitlines()[2]) == 51  # "{:<40} {:<10}": 40 + 1 + 10


def test_several_runs_and_inf_rate_with_concurrency():
    text = SAMPLE + "\nsome log line\n" + summary(rate=None, concurrency=16, ttft=80.0)
    runs = benchsummary.parse(text)
    assert len(runs) == 2
    assert math.isinf(runs[1].request_rate) and runs[1].max_concurrency == 16
    assert runs[1].mean_ttft_ms == 80.0


def test_result_json_one_object_and_appended_lines():
    obj = {"date": "20250101-000000", "backend": "vllm", "num_prompts": 200,
           "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 8, "duration": 60.5,
           "completed": 200, "failed": 0, "total_input_tokens": 102_400,
           "total_output_tokens": 25_600, "request_throughput": 3.3, "mean_ttft_ms": 55.0,
           "median_ttft_ms": 50.0, "mean_tpot_ms": 9.5, "median_tpot_ms": 9.4}
    (run,) = benchsummary.parse(json.dumps(obj, indent=2))
    assert math.isinf(run.request_rate) and run.max_concurrency == 8
    assert (run.mean_prompt_tokens, run.mean_output_tokens) == (512, 128)
    two = json.dumps(obj) + "\n" + json.dumps(obj | {"request_rate": 2.0, "max_concurrency": None})
    runs = benchsummary.parse(two)
    assert runs[1].request_rate == 2.0 and runs[1].max_concurrency is None


@pytest.mark.parametrize("text, words", [
    ("hello\nworld", "line 1: expected a '=="),
    (SAMPLE.replace("Mean TTFT (ms):                          41.27",
                    "Mean TTFT (ms):                          fast"),
     # line 1 the tip, 2 the header, 3-13 the 11 figures above the TTFT rule (14)
     "line 15: expected 'Label: number'"),
    (SAMPLE.replace(line("Mean TPOT (ms):", 12.85, ".2f") + "\n", ""), "missing 'Mean TPOT (ms):'"),
    (SAMPLE.replace(line("Total generated tokens:", 128000) + "\n", ""), "'Total generated tokens:'"),
    (SAMPLE.replace(line("Successful requests:", 1000), line("Successful requests:", 0)),
     "at least 1 successful request"),
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
        lab.run(from_mapping(lab.LabConfig, {"bench_text": "Mean TTFT: soon"}), [])
    assert err.value.field == "bench_text" and "line 1" in err.value.message


def _made_up_runs(efficiency):
    """Two runs 'measured' on the model itself at a known efficiency, printed in
    vLLM's format: the fit must find that efficiency again."""
    c = from_mapping(lab.LabConfig, {"gpu": "H100", "model": "llama-3.1-8b"})
    _g, _m, stm, blocks = lab.hardware(c, efficiency)
    ec = engine_config(blocks, lab.BLOCK_SIZE, c.max_num_seqs, c.max_num_batched_tokens)
    texts = []
    for rate, conc in ((4.0, None), (None, 16)):
        run = benchsummary.BenchRun(calibrate.MAX_SIM_REQUESTS, 1.0, 512 * 200, 64 * 200,
                                    math.inf if rate is None else rate, conc, 1.0, 1.0, "")
        sim = calibrate.simulate(run, ec, stm, blocks)
        texts.append(summary(completed=calibrate.MAX_SIM_REQUESTS, rate=rate, concurrency=conc,
                             duration=64 * 200 / sim["output_throughput"],
                             total_in=512 * 200, total_out=64 * 200,
                             ttft=sim["mean_ttft_ms"], tpot=sim["mean_tpot_ms"]))
    return c, "".join(texts)


def test_calibration_recovers_a_known_efficiency_and_reruns_with_it():
    c, text = _made_up_runs(0.42)
    runs = benchsummary.parse(text)
    _g, _m, stm, blocks = lab.hardware(c)  # starts from the default, 0.6
    ec = engine_config(blocks, lab.BLOCK_SIZE, c.max_num_seqs, c.max_num_batched_tokens)
    fit = calibrate.fit(runs, ec, stm, blocks)
    # The printed summary rounds to 0.01 ms, so the fit lands within a fraction of 1%.
    assert fit["efficiency_before"] == 0.6
    assert fit["efficiency"] == pytest.approx(0.42, rel=0.01)
    assert fit["mean_abs_error_pct"]["mean_tpot_ms"] < 1
    assert len(fit["runs"]) == 2 and fit["runs"][1]["settings"]["max_concurrency"] == 16
    view = lab.run(from_mapping(lab.LabConfig, {"bench_text": text, "window_minutes": 1}), [])
    assert view["hardware"]["efficiency"] == pytest.approx(fit["efficiency"])
    assert view["calibration"]["efficiency"] == pytest.approx(fit["efficiency"])
