"""The benchmark replay, the published records, and the fit of the step-time model.

Hand-worked expectations are in the comments beside them; the records are the ones in
data/realbench/records.jsonl (in Pyodide, where tests/pyodide/run_pytest.mjs copies them).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pysim.timing import fidelity, fit, realbench
from pysim.traffic import bench_serve
from pysim.engine.scheduler import SchedulerConfig
from pysim.engine.replay import replay
from pysim.traffic.slo import percentile
from pysim.timing.steptime import DEFAULTS, Coefficients
from test_lab import HUGE, TOY  # a step lasts 1 s plus 1 ms per token of context read

RECORDS = next(p for p in (realbench.REPO_FILE, Path("/pysim-data/realbench/records.jsonl"))
               if p.is_file())


# ------------------------------------------------------------------ the benchmark's figures


def test_summary_figures_follow_serve_py_on_a_hand_worked_case():
    # A (prompt 100, 3 tokens) and B (prompt 200, 2 tokens), both sent at 0:
    #   step 1 @0:     both prefill: reads 100 + 200 -> 1.3 s; ends 1.3, first tokens of A, B
    #   step 2 @1.3:   decodes A (101) B (201): reads 302 -> 1.302; ends 2.602: B done
    #   step 3 @2.602: decode A (102): 1.102; ends 3.704: A done
    # TTFT 1.3, 1.3; E2EL A 3.704, B 2.602; TPOT A (3.704 - 1.3) / 2 = 1.202, B 1.302;
    # ITL: A's gaps 1.302, 1.102; B's 1.302 -> [1.102, 1.302, 1.302].
    r = replay([0.0, 0.0], [100, 200], [3, 2], HUGE, TOY, 100_001, itl=True)
    m = bench_serve.metrics(r, [100, 200])
    assert m["duration"] == pytest.approx(3.704)
    assert m["request_throughput"] == pytest.approx(2 / 3.704)
    assert m["output_throughput"] == pytest.approx(5 / 3.704)
    assert m["total_token_throughput"] == pytest.approx(305 / 3.704)
    assert m["mean_ttft_ms"] == pytest.approx(1300) and m["median_ttft_ms"] == pytest.approx(1300)
    assert m["mean_tpot_ms"] == pytest.approx((1202 + 1302) / 2)
    # P99 of [1.202, 1.302]: rank 0.99 -> 1.202 + 0.99 x 0.1 = 1.301 s
    assert m["p99_tpot_ms"] == pytest.approx(1301)
    assert m["mean_itl_ms"] == pytest.approx((1102 + 1302 + 1302) / 3)
    assert m["median_itl_ms"] == pytest.approx(1302)
    assert m["p99_itl_ms"] == pytest.approx(1302)
    assert m["mean_e2el_ms"] == pytest.approx((3704 + 2602) / 2)
    text = bench_serve.summary_text(m, bench_serve.Benchmark(num_prompts=2))
    assert text.splitlines()[0] == "{:=^50}".format(" Serving Benchmark Result ")
    assert "Mean TTFT (ms):                          1300.00" in text
    assert "Total input tokens:                      305" not in text  # prompts only: 300
    assert "Total input tokens:                      300" in text


def test_itl_of_a_decode_run_equals_stepping_one_by_one():
    reqs = bench_serve.requests(bench_serve.Benchmark(num_prompts=30, random_input_len=300,
                                                      random_output_len=50, random_range_ratio=0.5,
                                                      request_rate=4.0))
    args = (reqs.arrivals, reqs.prompt_tokens, reqs.output_tokens, HUGE, TOY, 100_001)
    fast, slow = replay(*args, itl=True), replay(*args, itl=True, fast=False)
    a, b = bench_serve.metrics(fast, reqs.prompt_tokens), bench_serve.metrics(slow, reqs.prompt_tokens)
    for key in ("mean_itl_ms", "median_itl_ms", "p99_itl_ms", "mean_tpot_ms", "p99_e2el_ms"):
        assert a[key] == pytest.approx(b[key], rel=1e-9)


def test_weighted_percentile_is_numpys_rule_on_the_repeated_values():
    pairs = [(0.5, 3), (1.0, 1), (2.0, 4), (7.0, 2)]
    flat = [v for v, w in pairs for _ in range(w)]
    for p in (0, 1, 25, 50, 90, 99, 100):
        assert bench_serve.weighted_percentile(pairs, p) == pytest.approx(percentile(flat, p))


def test_the_benchmarks_traffic():
    b = bench_serve.Benchmark(num_prompts=500, random_input_len=1000, random_output_len=100,
                              random_range_ratio=0.25, random_prefix_len=32, request_rate=5.0,
                              burstiness=0.5)
    r = bench_serve.requests(b)
    # Lengths uniform in [750, 1250] (+ the shared 32) and [75, 125], both ends drawn.
    assert min(r.prompt_tokens) >= 782 and max(r.prompt_tokens) <= 1282
    assert min(r.output_tokens) >= 75 and max(r.output_tokens) <= 125
    # Sent at a finite rate: rescaled so the last leaves at N / rate = 100 s.
    assert r.arrivals[-1] == pytest.approx(100.0) and r.arrivals[0] > 0
    assert all(x <= y for x, y in zip(r.arrivals, r.arrivals[1:]))
    # Burstiness 0.5: gamma gaps with a coefficient of variation of 1 / sqrt(0.5) = 1.41.
    gaps = [y - x for x, y in zip(r.arrivals, r.arrivals[1:])]
    mean = sum(gaps) / len(gaps)
    cv = math.sqrt(sum((g - mean) ** 2 for g in gaps) / len(gaps)) / mean
    assert 1.2 < cv < 1.65
    # The prefix is every prompt's first 32 ids, and nothing else is shared.
    assert r.token_ids(0)[:32] == r.token_ids(7)[:32] and r.token_ids(0)[32] != r.token_ids(7)[32]
    assert bench_serve.requests(bench_serve.Benchmark(num_prompts=3)).arrivals == [0.0] * 3
    shared = bench_serve.requests(bench_serve.Benchmark(num_prompts=50, random_output_len=200,
                                                        dataset_name="sharegpt"))
    assert sum(shared.output_tokens) == 50 * 200 and len(set(shared.output_tokens)) > 20


# ------------------------------------------------------------------ the records
def test_every_record_parses_and_the_skipped_say_why():
    records = realbench.load(RECORDS)
    assert len(records) == 43
    skipped = {r.id: r.skipped for r in records if r.run is None}
    assert skipped == {
        "gpustack-quantref-qwen3-8b-bf16-a100-sharegpt-inf": "sharegpt dataset without token totals: its lengths are unknown",
        "gpustack-quantref-qwen3-8b-bf16-h100-sharegpt-inf": "sharegpt dataset without token totals: its lengths are unknown"}
    by_id = {r.id: r.run for r in records}
    # A note beside a value: "not set (v0.11.0 default 0.0 = fixed lengths)" is 0.0.
    r = by_id["gpustack-qwen3-32b-h100-random-4000x200-inf"]
    assert (r.bench.random_input_len, r.bench.random_output_len, r.bench.random_range_ratio) == (4000, 200, 0.0)
    assert (r.server.scheduler.max_num_seqs, r.server.scheduler.max_num_batched_tokens) == (1024, 8192)  # V1's H100 defaults
    a100 = by_id["gpustack-qwen3-32b-a100-random-128x4-inf"]
    assert (a100.server.scheduler.max_num_seqs, a100.server.scheduler.max_num_batched_tokens) == (256, 2048)
    c64 = by_id["vllm-issue24684-llama31-8b-h100-c64"]
    assert c64.bench.max_concurrency == 64 and math.isinf(c64.bench.request_rate)
    assert c64.measured == {"mean_ttft_ms": 579.39, "mean_tpot_ms": 18.41, "output_throughput": 2802.42}


@pytest.mark.parametrize("line, words", [
    ("not json", "line 1: expected one JSON object per line"),
    ("[1]", "line 1: expected a JSON object"),
    ('{"id": "x", "workload": {}}', "line 1: expected a record with 'metrics'"),
])
def test_a_line_that_is_not_a_record_is_named(line, words):
    with pytest.raises(realbench.RecordError) as err:
        realbench.parse('{"id": "a", "workload": {}, "metrics": {}}\n' * 0 + line)
    assert words in str(err.value)


def test_a_record_outside_the_catalog_is_skipped_with_its_reason():
    (rec,) = realbench.parse('{"id": "a", "gpu": "B200", "model": "x", "workload": {}, "metrics": {}}')
    assert rec.run is None and "B200" in rec.skipped
    (rec,) = realbench.parse('{"id": "b", "gpu": "H100", "model": "meta-llama/Llama-3.1-70B-Instruct", '
                             '"tensor_parallel_size": 4, "workload": {}, "metrics": {"mean_tpot_ms": 9}}')
    assert rec.run is None and "4 GPUs" in rec.skipped


# ------------------------------------------------------------------ the fit
def test_the_linear_form_is_exact_at_the_replays_own_coefficients():
    server = fit.ServerSetup("H100", "llama-3.1-8b", SchedulerConfig(256, 2048))
    for bench in (bench_serve.Benchmark(num_prompts=80, random_input_len=3000, random_output_len=40),
                  bench_serve.Benchmark(num_prompts=80, random_input_len=500, random_output_len=90,
                                        max_concurrency=12),
                  bench_serve.Benchmark(num_prompts=120, random_input_len=800, random_output_len=60,
                                        random_range_ratio=0.5, request_rate=9.0, burstiness=0.3)):
        result, reqs, model = fit.replay_run(fit.Run(bench, server, {}), DEFAULTS["H100"])
        m = bench_serve.metrics(result, reqs.prompt_tokens)
        theta = fit._theta(DEFAULTS["H100"])
        got = {k: c + math.fsum(p * t for p, t in zip(v, theta))
               for k, (c, v) in fit.linear_form(result, model).items()}
        assert got["mean_ttft"] == pytest.approx(m["mean_ttft_ms"] / 1e3, rel=1e-9)
        assert got["mean_tpot"] == pytest.approx(m["mean_tpot_ms"] / 1e3, rel=1e-9)
        assert got["duration"] == pytest.approx(m["duration"], rel=1e-9)


def test_one_form_gives_the_figures_at_any_coefficients_when_the_schedule_holds():
    # Sent all at once (or through a concurrency cap), the requests meet the same schedule
    # under any coefficients: the form built from one replay must then give what a replay
    # at other coefficients measures, with the ceilings that bind there (a fit evaluates
    # dozens of trials on one form).
    server = fit.ServerSetup("H100", "llama-3.1-8b", SchedulerConfig(256, 2048))
    others = (Coefficients(4.0, 40.0, 0.3, 0.9, "memory binds more"),
              Coefficients(0.5, 1.0, 0.99, 0.05, "compute binds more"),
              Coefficients(2.0, 10.0, 0.6, 0.4, "between"))
    for bench in (bench_serve.Benchmark(num_prompts=60, random_input_len=2500, random_output_len=50,
                                        random_range_ratio=0.6),
                  bench_serve.Benchmark(num_prompts=80, random_input_len=400, random_output_len=120,
                                        random_range_ratio=0.5, max_concurrency=40)):
        run = fit.Run(bench, server, {})
        result, _reqs, model = fit.replay_run(run, DEFAULTS["H100"])
        form = fit.LinearForm(result, model)
        memory_seconds = set()
        for c in others:
            there, reqs, _ = fit.replay_run(run, c)
            assert there.seg_work == result.seg_work  # the same schedule
            m = bench_serve.metrics(there, reqs.prompt_tokens)
            theta = fit._theta(c)
            got = {k: const + math.fsum(p * t for p, t in zip(phi, theta)) for k, (const, phi) in form.at(c).items()}
            assert got["mean_ttft"] == pytest.approx(m["mean_ttft_ms"] / 1e3, rel=1e-9)
            assert got["mean_tpot"] == pytest.approx(m["mean_tpot_ms"] / 1e3, rel=1e-9)
            assert got["duration"] == pytest.approx(m["duration"], rel=1e-9)
            memory_seconds.add(form.at(c)["duration"][1][2])
        assert len(memory_seconds) > 1  # the trials moved work from one ceiling to the other


def test_the_defaults_are_the_fit_of_the_shipped_records():
    runs = [r.run for r in realbench.usable(realbench.load(RECORDS))]
    fitted = fit.fit_defaults(runs)
    for gpu, c in DEFAULTS.items():
        f = fitted[gpu]
        assert c.source == f.source
        for name in ("step_overhead_ms", "request_overhead_us", "memory_efficiency",
                     "compute_efficiency"):
            assert getattr(c, name) == pytest.approx(getattr(f, name), rel=2e-3, abs=1e-3), (gpu, name)


def test_a_gpu_without_runs_takes_the_median_gpu_each_gpu_once():
    """The typical GPU is each coefficient's median over the GPUs, whatever their number
    of runs: a third GPU with a low value pulls the median down, as one GPU, not by its
    count of runs."""
    from pysim.timing.steptime import Coefficients
    a = Coefficients(1.0, 5.0, 0.9, 0.6, "fitted: 20 runs on A")
    b = Coefficients(3.0, 50.0, 0.7, 0.3, "fitted: 1 run on B")
    c = Coefficients(2.0, 8.0, 0.8, 0.2, "fitted: 1 run on C")
    two = fit.typical_gpu({"A": a, "B": b})
    assert (two.step_overhead_ms, two.memory_efficiency, two.compute_efficiency) == pytest.approx((2.0, 0.8, 0.45))
    three = fit.typical_gpu({"C": c, "A": a, "B": b})
    assert (three.step_overhead_ms, three.request_overhead_us, three.memory_efficiency,
            three.compute_efficiency) == pytest.approx((2.0, 8.0, 0.8, 0.3))
    assert three.source == "median of 3 GPUs' fits (A, B, C)"
    # the shipped defaults: every GPU without records, nor a card on its die, gets the
    # same typical set
    typical = {gpu for gpu, co in DEFAULTS.items() if co.source.startswith("median")}
    assert typical == {"L4", "A10G"}
    assert len({DEFAULTS[g] for g in typical}) == 1


def test_a_gpu_without_runs_takes_the_fit_of_a_card_on_its_die_else_the_typical_gpu():
    """An A100 40GB (GA100) with no runs takes the A100's fit, an L4 (AD104, no card on
    it has runs) the median; two cards on one die with runs give their median; a GPU
    with runs is never asked."""
    from pysim.timing.steptime import Coefficients
    a100 = Coefficients(4.0, 90.0, 0.99, 0.57, "fitted: 15 runs on A100")
    h100 = Coefficients(2.0, 7.0, 0.81, 0.31, "fitted: 21 runs on H100")
    l40s = Coefficients(1.6, 6.0, 0.90, 0.33, "fitted: 4 runs on L40S")
    fitted = {"A100": a100, "H100": h100, "L40S": l40s}
    got = fit.no_runs_default("A100-40GB", fitted)
    assert (got.step_overhead_ms, got.request_overhead_us, got.memory_efficiency,
            got.compute_efficiency) == (4.0, 90.0, 0.99, 0.57)
    assert got.source == "A100's fit, the same GA100 die; no runs on A100-40GB"
    assert fit.no_runs_default("H100-PCIe", fitted).compute_efficiency == 0.31
    l4 = fit.no_runs_default("L4", fitted)
    assert l4 == fit.typical_gpu(fitted) and l4.compute_efficiency == pytest.approx(0.33)
    # H200 and H100 SXM both fitted: the PCIe card takes their median
    two = fit.no_runs_default("H100-PCIe", fitted | {"H200": Coefficients(3.0, 9.0, 0.85, 0.35, "x")})
    assert two.compute_efficiency == pytest.approx(0.33) and two.source.startswith("H100, H200's fit")
    with pytest.raises(AssertionError):
        fit.no_runs_default("A100", fitted)
    # the shipped defaults, by the catalog's dies
    def numbers(gpu):
        c = DEFAULTS[gpu]
        return c.step_overhead_ms, c.request_overhead_us, c.memory_efficiency, c.compute_efficiency
    assert numbers("A100-40GB") == numbers("A100")
    assert numbers("H100-PCIe") == numbers("H200") == numbers("H100")


def test_the_die_rule_is_measured_where_a_gpu_has_runs_from_two_publishers():
    """same_die: source_out and gpu_out on the records of GPUs with two publishers or more,
    and on no other record."""
    def row(gpu, source, err_source, err_gpu):
        errs = {m: {} for m in fidelity.MODES}
        errs["source_out"] = {"mean_ttft_ms": err_source}
        errs["gpu_out"] = {"mean_ttft_ms": err_gpu}
        return {"gpu": gpu, "source": source, "errors": errs}
    rows = [row("A100", "lambda", 0.1, 0.6), row("A100", "gpustack", -0.3, 0.8),
            row("L40S", "blog", 0.05, 0.05), row("L40S", "blog", 0.07, 0.07)]
    got = fidelity.same_die(rows)
    assert got["gpus"] == ["A100"]
    assert got["die"]["mean_ttft"] == {"records": 2, "median": pytest.approx(0.2), "largest": pytest.approx(0.3)}
    assert got["typical"]["mean_ttft"]["median"] == pytest.approx(0.7)
    assert got["die"]["mean_tpot"]["records"] == 0


def test_leave_one_out_never_fits_a_record_on_itself():
    """The out-of-sample modes never see the record: made absurd (every figure x50), its
    own predictions in held_out, calibrated, source_out and gpu_out do not move."""
    import json

    records = realbench.load(RECORDS)
    few = [r for r in records if r.id.startswith("blog-hami-l40s")]
    rows = fidelity.evaluate(few)
    assert [r["peers"] for r in rows] == [3, 3, 3, 3]
    assert [r["lengths"] for r in rows] == ["drawn"] * 4  # random prompts, as the benchmark drew them
    s = fidelity.summary(rows)
    assert s["calibrated"]["mean_tpot"]["records"] == 4
    raw = dict(few[0].raw)
    raw["metrics"] = {k: (v * 50 if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
                      for k, v in raw["metrics"].items()}
    absurd = realbench.parse("\n".join(json.dumps(r) for r in [raw] + [r.raw for r in few[1:]]))
    again = fidelity.evaluate(absurd)
    for mode in ("held_out", "calibrated", "source_out", "gpu_out"):
        assert again[0]["predicted"][mode] == rows[0]["predicted"][mode], mode
    # ... while the others' held-out predictions, fitted with the absurd run, do move
    assert again[1]["predicted"]["held_out"] != rows[1]["predicted"]["held_out"]


@pytest.mark.parametrize("fields, gpu, model", [
    ({"gpu": "NVIDIA H100 80GB HBM3", "model": "meta-llama/Meta-Llama-3.1-8B-Instruct"}, "H100", "llama-3.1-8b"),
    ({"gpu": "A100-SXM4-80GB", "model": "mistralai/Mistral-7B-Instruct-v0.3"}, "A100", "mistral-7b-v0.3"),
    ({"gpu": "NVIDIA H100 PCIe", "model": "Qwen/Qwen3-8B"}, "H100-PCIe", "qwen3-8b"),
    ({"gpu": "NVIDIA GH200 480GB", "model": "Qwen/Qwen3-8B"}, None, "qwen3-8b"),
    ({"gpu": "NVIDIA H100 NVL", "model": "Qwen/Qwen3-8B"}, None, "qwen3-8b"),
    ({"gpu": "NVIDIA A100-SXM4-40GB", "model": "Qwen/Qwen3-8B"}, "A100-40GB", "qwen3-8b"),
    ({"gpu": "A100-PCIE-40GB", "model": "Qwen/Qwen3-8B"}, "A100-40GB", "qwen3-8b"),
    ({"gpu": "NVIDIA L4", "model": "Qwen/Qwen3-8B"}, "L4", "qwen3-8b"),
    ({"gpu": "NVIDIA L40S", "model": "Qwen/Qwen3-8B"}, "L40S", "qwen3-8b"),
    ({"gpu": "NVIDIA L40", "model": "Qwen/Qwen3-8B"}, None, "qwen3-8b"),
    ({"gpu": "NVIDIA A10G", "model": "Qwen/Qwen3-8B"}, "A10G", "qwen3-8b"),
    ({"gpu": "NVIDIA A10", "model": "Qwen/Qwen3-8B"}, None, "qwen3-8b"),
])
def test_gpu_and_model_names_as_reports_write_them(fields, gpu, model):
    assert realbench._gpu(fields) == gpu and realbench._model(fields) == model


def test_quantized_weights_are_skipped_with_their_reason():
    (rec,) = realbench.parse('{"id": "q", "gpu": "H100", "model": "Qwen/Qwen3-8B", "dtype": "fp8", '
                             '"workload": {"dataset_name": "random", "random_input_len": 1000, '
                             '"random_output_len": 100, "num_prompts": 10}, "metrics": {"mean_tpot_ms": 9}}')
    assert rec.run is None and rec.skipped.startswith("fp8 weights")


@pytest.mark.parametrize("gpu, mib, tiers", [
    ("H100-PCIe", 81_559, (1024, 8192)), ("A100-40GB", 40_960, (256, 2048)),
    ("L4", 23_034, (256, 2048)), ("A10G", 23_028, (256, 2048))])
def test_a_new_gpus_pool_comes_from_what_its_driver_reports(gpu, mib, tiers):
    """The pool starts from nvidia-smi's total (x 1.0 at vLLM 0.34 - weights - 2 GB), and
    vLLM's batch tiers read that total (>= 70 GiB and not an A100: 1,024 / 8,192)."""
    from pysim.engine import vllm_defaults
    from pysim.timing import steptime
    from pysim.timing.catalog import GPUS, MODELS
    g, m = GPUS[gpu], MODELS["qwen2.5-3b"]
    assert g.reported_mib == mib and g.reported_bytes == mib * 2**20
    assert steptime.kv_pool_bytes(g, m) == mib * 2**20 - m.weight_bytes(False) - steptime.RUNTIME_BYTES
    d = vllm_defaults.defaults(g)
    assert (d.max_num_seqs, d.max_num_batched_tokens) == tiers
    assert d.block_size == 64


def test_flops_count_the_lm_head_once_a_request_and_no_embedding():
    """Llama 3.1 8B: 2 x (8.03e9 - 2 x 128256 x 4096) FLOPs a token, plus the LM head
    (2 x 128256 x 4096) once for each request in the step: a 1,000-token prompt chunk of
    one request costs about 13% less than 2 x all parameters a token."""
    from pysim.timing.catalog import GPUS, MODELS
    from pysim.timing.steptime import IDEAL, step_time_model
    m = step_time_model(GPUS["H100"], MODELS["llama-3.1-8b"], IDEAL)
    vh = 128_256 * 4_096
    _, flops = m.work(1000, 0, 0, 1)
    assert flops == 2 * (8_030_000_000 - 2 * vh) * 1000 + 2 * vh
    assert 0.12 < 1 - flops / (2 * 8_030_000_000 * 1000) < 0.14
    _, decode = m.work(1, 0, 0, 1)  # a decode samples its one token
    assert decode == 2 * (8_030_000_000 - vh)


def test_the_error_band_contains_the_answer_and_widens_with_the_error():
    """A capacity's band brackets it, and a GPU with larger held-out errors (one with no
    runs) gets a wider band than the L40S, whose four runs are replayed closely."""
    from pysim.sims.lab import config as lab_config, sweep as lab_sweep
    from pysim.timing import errorband

    for gpu in errorband.FACTORS:
        b = errorband.FACTORS[gpu]
        assert b.fast <= 1 <= b.slow
    assert (errorband.FACTORS["L4"].slow / errorband.FACTORS["L4"].fast
            > errorband.FACTORS["L40S"].slow / errorband.FACTORS["L40S"].fast)
    points = [{"rate_scale": r, "slo_attainment": a, "slo_attainment_fast": af,
               "slo_attainment_slow": asl, "request_goodput": 1.0, "request_throughput": 1.0}
              for r, a, af, asl in ((0.25, 1.0, 1.0, 1.0), (0.5, 1.0, 1.0, 0.95),
                                    (1.0, 0.95, 1.0, 0.6), (2.0, 0.5, 0.8, 0.1))]
    for gpu in ("L40S", "L4"):
        cap = lab_sweep.capacity(lab_config.LabConfig(gpu=gpu, model="qwen2.5-3b"), points)
        band = cap["band"]
        assert band["slow"]["rate_scale"] <= cap["rate_scale"] <= band["fast"]["rate_scale"]
        assert "never checked" in cap["sentence"]
    # the factor's exact rule: a point's times x s are the real server's at rate / s
    assert errorband.crossing([0.5, 1.0], [1.0, 0.8], 0.9) == (0.75, None)
    assert errorband.attainment([1.0, 3.0], [0.01, None], 2000, 50, 1.5) == 0.5


def test_the_tails_are_shown_apart_by_whether_the_replay_knows_the_lengths():
    """split_by_lengths puts each record in the group of its `lengths` and nowhere else;
    evaluate marks a random-dataset run "drawn" and a ShareGPT run "guessed"."""
    records = {r.id: r for r in realbench.load(RECORDS)}
    assert records["blog-hami-l40s-qwen25-3b-random512x128-c16-mns4"].run.bench.dataset_name == "random"
    sharegpt = records["gpustack-qwen3-8b-h100-sharegpt-c1"]
    assert sharegpt.run.bench.dataset_name == "sharegpt"
    assert [r["lengths"] for r in fidelity.evaluate([sharegpt])] == ["guessed"]  # the means

    def row(lengths, error):
        errors = {"p99_tpot_ms": error}
        return {"lengths": lengths, "errors": {m: errors for m in fidelity.MODES}}

    rows = [row("drawn", 0.1), row("drawn", -0.3), row("guessed", 0.5)]
    split = fidelity.split_by_lengths(rows)
    assert set(split) == {"lengths_drawn", "lengths_guessed"}
    assert split["lengths_drawn"]["held_out"]["p99_tpot"] == {"records": 2, "median": 0.2, "largest": 0.3}
    assert split["lengths_guessed"]["gpu_out"]["p99_tpot"] == {"records": 1, "median": 0.5, "largest": 0.5}
    assert split["lengths_guessed"]["held_out"]["mean_ttft"]["records"] == 0
