"""The traffic a server is sent, and the figures `vllm bench serve` measures it by.

What arrives:
- traces.py: real production traffic, the Azure LLM inference trace 2023 and the
  Mooncake FAST'25 traces (data/traces/);
- tenants.py: that traffic split into tenants and tiers, for the scheduling-policy lab;
- bench_serve.py: `vllm bench serve --dataset-name random`, the traffic it sends and the
  summary it prints (vLLM 0.34.0, `vllm/benchmarks/serve.py`).

How it is measured, as `vllm bench serve` does:
- slo.py: TTFT, TPOT, goodput and their percentiles (`--goodput`);
- benchsummary.py: what a reader pastes from `vllm bench serve` (printed summary or
  `--save-result` JSON), read back into settings and results;
- benchsample.py: one published run, to paste into the lab's calibration box.
"""
