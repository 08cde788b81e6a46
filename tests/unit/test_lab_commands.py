"""The lab's settings as vLLM command lines, read back by the lab's own paste reader; a
published run to paste; and a --save-detailed result replayed request by request."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pysim.sims.lab import (calibrate as lab_calibrate, commands as lab_commands, config as lab_config,
                            view as lab_view)
from pysim.timing import fit
from pysim.traffic import bench_serve, benchsample, benchsummary
from pysim.config import ConfigError, from_mapping

RECORDS = Path(__file__).resolve().parents[2] / "data" / "realbench" / "records.jsonl"


@pytest.mark.parametrize("settings", [
    {},  # the defaults: all at once, no cap
    {"request_rate": 4.0, "max_concurrency": 32, "async_scheduling": False, "seed": 7},
    {"request_rate": 2.5, "burstiness": 0.5, "random_range_ratio": 0.3, "random_prefix_len": 256,
     "max_num_seqs": 128, "max_num_batched_tokens": 2048, "model": "qwen3-8b", "num_prompts": 200},
])
def test_the_command_lines_read_back_into_the_same_settings(settings):
    config = lab_config.LabConfig(**({"traffic": "benchmark", "num_prompts": 60} | settings))
    view = lab_view.run(config, [])
    c = view["commands"]
    assert c["serve"].startswith(f"vllm serve {lab_commands.hf_name(config.model)} ")
    assert f"--max-num-seqs {config.max_num_seqs}" in c["serve"]
    assert f"--max-num-batched-tokens {config.max_num_batched_tokens}" in c["serve"]
    assert ("--no-async-scheduling" in c["serve"]) == (not config.async_scheduling)
    assert "--block-size" not in c["serve"]  # the release's default: no flag
    # Pasted before a summary, the two lines give back the lab's settings.
    pasted = benchsummary.parse("\n".join((c["serve"], c["bench"], view["bench_summary"]["text"])))
    assert len(pasted) == 1
    p = pasted[0]
    assert p.bench == lab_config.benchmark(config, 1.0)
    assert {k: p.server[k] for k in ("max_num_seqs", "max_num_batched_tokens")} == \
        {"max_num_seqs": config.max_num_seqs, "max_num_batched_tokens": config.max_num_batched_tokens}
    assert p.server.get("async_scheduling", True) == config.async_scheduling
    assert lab_commands.model_from_hf(p.server["model"]) == config.model
    assert lab_calibrate.server_notes(config, p) == []  # nothing differs from the lab


def test_a_trace_window_gets_the_closest_benchmark_and_what_it_leaves_out():
    config = lab_config.LabConfig(trace="mooncake_conv", rate_scale=2.0, window_minutes=1)
    view = lab_view.run(config, [])
    c = view["commands"]
    n = view["traffic"]["num_requests"]
    assert "--dataset-name timed_trace" in c["bench"] and f"--num-prompts {n}" in c["bench"]
    assert "--timed-trace-sec-multiplier 0.0005" in c["bench"]  # ms, played twice as fast
    assert "--timed-trace-chunk-hash-size 512" in c["bench"] and "conversation_trace.jsonl" in c["prepare"]
    assert c["cannot"]
    azure = lab_view.run(lab_config.LabConfig(window_minutes=1, arrivals="poisson"), [])["commands"]
    assert azure["prepare"] is None and any("Poisson" in x for x in azure["cannot"])
    # The JSON view carries both lines.
    assert json.loads(json.dumps(view))["commands"]["serve"] == c["serve"]


def test_the_published_sample_is_the_record_and_fits():
    s = benchsample.sample()
    if RECORDS.is_file():  # the page has no data/ folder; the repository does
        record = next(json.loads(line) for line in RECORDS.read_text().splitlines()
                      if json.loads(line)["id"] == benchsample.SAMPLE_ID)
        assert benchsample.SUMMARY == record["summary_text"]
        assert benchsample.CLIENT == record["workload"]["command"]
        assert benchsample.SERVE == record["server_flags"]["command"]
        assert s["url"] == record["source"]["url"]
    p = benchsummary.parse(s["text"])[0]
    assert p.bench.num_prompts == 640 and p.bench.max_concurrency == 64
    assert lab_commands.model_from_hf(p.server["model"]) == "llama-3.1-8b" == s["model"]
    view = lab_view.run(lab_config.LabConfig(window_minutes=1, bench_text=s["text"]), [])
    assert view["sample_bench"] == s and view["calibration"]["runs"][0]["per_request"] is None


def detailed(n_ok: int = 3) -> dict:
    """A small hand-made --save-result --save-detailed result (vLLM 0.34's keys): three
    requests sent 0.5 s apart (start_times are the client's clock, not from 0; listed out
    of order), one failed request (an error, no tokens) that the replay leaves out."""
    return {
        "date": "20260101-000000", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "num_prompts": 4, "request_rate": 2.0, "burstiness": 1.0, "max_concurrency": None,
        "duration": 2.5, "completed": 3, "failed": 1, "total_input_tokens": 1800,
        "total_output_tokens": 96, "request_throughput": 1.2, "output_throughput": 38.4,
        "mean_ttft_ms": 40.0, "median_ttft_ms": 40.0, "p99_ttft_ms": 50.0,
        "mean_tpot_ms": 8.0, "median_tpot_ms": 8.0, "p99_tpot_ms": 9.0,
        "input_lens": [500, 1000, 300, 700], "output_lens": [32, 48, 16, 0],
        "ttfts": [0.05, 0.04, 0.03, 0.0],
        "itls": [[0.008] * 31, [0.0085] * 47, [0.007] * 15, []],
        "latencies": [0.05 + 0.248, 0.04 + 0.3995, 0.03 + 0.105, 0.0],
        "start_times": [1000.5, 1001.0, 1000.0, 1001.2],
        "errors": ["", "", "", "Connection reset"],
    }


def test_a_detailed_result_replays_its_own_requests():
    text = json.dumps(detailed())
    p = benchsummary.parse(text)[0]
    # In the order they were sent: 300 (t=0), 500 (0.5 s), 1000 (1 s); the failed one is gone.
    assert p.bench.recorded == ((300, 16, 0.0), (500, 32, 0.5), (1000, 48, 1.0))
    reqs = bench_serve.requests(p.bench)
    assert reqs.prompt_tokens == [300, 500, 1000] and reqs.output_tokens == [16, 32, 48]
    assert reqs.arrivals == [0.0, 0.5, 1.0]
    assert [m[0] for m in p.requests] == [0.03, 0.05, 0.04]
    assert p.requests[0][1] == pytest.approx(0.105 / 15)
    assert any("failed" in n for n in p.notes) and not any("on average" in n for n in p.notes)
    # The same from ITLs when latencies are missing.
    no_lat = detailed()
    del no_lat["latencies"]
    assert [m[1] for m in benchsummary.parse(json.dumps(no_lat))[0].requests] == \
        pytest.approx([m[1] for m in p.requests])
    # The lab replays exactly these requests and compares them one by one.
    view = lab_view.run(lab_config.LabConfig(window_minutes=1, bench_text=text), [])
    pr = view["calibration"]["runs"][0]["per_request"]
    assert pr["num_requests"] == 3 and pr["ttft_ms"]["count"] == 3 and pr["tpot_ms"]["count"] == 3
    assert sorted(m["ttft_ms"] for m in pr["largest_ttft_misses"]) == pytest.approx([30.0, 40.0, 50.0])
    assert {m["num_prompt_tokens"] for m in pr["largest_ttft_misses"]} == {300, 500, 1000}
    assert pr["ttft_ms"]["measured"]["p50"] == pytest.approx(40.0)
    result, _, _ = fit.replay_run(fit.Run(p.bench, lab_config.server(lab_config.LabConfig()), p.measured),
                                  lab_calibrate.calibrate(lab_config.LabConfig(bench_text=text))[0])
    by_index = {m["index"]: m for m in pr["largest_ttft_misses"]}
    assert by_index[2]["replayed_ttft_ms"] == pytest.approx((result.first_token[0] - result.sent[0]) * 1000)
    assert view["calibration"]["runs"][0]["benchmark"]["recorded"] is True


def test_a_detailed_result_is_bounded_and_checked():
    bad = detailed()
    bad["ttfts"] = [0.05, "x", 0.03, 0.0]
    with pytest.raises(ConfigError) as err:
        benchsummary.parse(json.dumps(bad))
    assert err.value.field == "bench_text" and "ttfts[1]" in err.value.message
    short = detailed()
    short["output_lens"] = [32]
    with pytest.raises(ConfigError) as err:
        benchsummary.parse(json.dumps(short))
    assert "one entry per request" in err.value.message
    with pytest.raises(ConfigError) as err:
        from_mapping(lab_config.LabConfig, {"bench_text": "x" * (lab_config.MAX_BENCH_CHARS + 1)})
    assert err.value.field == "bench_text"
    assert lab_config.MAX_DETAILED_CHARS > lab_config.MAX_BENCH_CHARS
    assert not math.isinf(lab_config.MAX_DETAILED_CHARS)
