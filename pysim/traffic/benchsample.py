"""A real `vllm bench serve` run the lab's calibration box can be filled with, so a reader
without a server of their own can see a fit work.

It is one record of data/realbench/records.jsonl (`SAMPLE_ID`), copied here because the
page's Python has no data/ folder (tests/unit/test_lab.py checks the copy against the
record): the two command lines and the summary as the reporter printed them, in
vllm-project/vllm issue #24684 (September 2025, the vllm/vllm-openai image of the day,
about 0.10.1 to 0.10.2): Llama 3.1 8B Instruct on one H100, 640 prompts with at most 64
in flight. The issue's point was that the client ignored --dataset-path and sent its
default random prompts; the token totals agree (654,052 / 640 = 1,022 prompt tokens,
81,920 = 640 x 128 answer tokens). The summary reached us with its line breaks lost and
cut after "P99 TPOT (ms)"; the paste reader puts the lines back and keeps what is there.
"""

SAMPLE_ID = "vllm-issue24684-llama31-8b-h100-c64"
SERVE = "vllm serve meta-llama/Llama-3.1-8B-Instruct --no-enable-prefix-caching"
CLIENT = ("vllm bench serve --model meta-llama/Llama-3.1-8B-Instruct --percentile-metrics "
          "ttft,tpot,itl,e2el --dataset-path /models/ShareGPT_Vicuna_unfiltered/"
          "ShareGPT_V3_unfiltered_cleaned_split.json --max-concurrency 64 --num-prompts 640 "
          "--ignore-eos --sharegpt-output-len 512")
SUMMARY = (
    "============ Serving Benchmark Result ============ Successful requests: 640 Maximum request "
    "concurrency: 64 Benchmark duration (s): 29.23 Total input tokens: 654052 Total generated tokens: "
    "81920 Request throughput (req/s): 21.89 Output token throughput (tok/s): 2802.42 Total Token "
    "throughput (tok/s): 25177.00 ---------------Time to First Token---------------- Mean TTFT (ms): "
    "579.39 Median TTFT (ms): 582.78 P99 TTFT (ms): 1584.13 -----Time per Output Token (excl. 1st "
    "token)------ Mean TPOT (ms): 18.41 Median TPOT (ms): 18.33 P99 TPOT (ms)...")
URL = "https://github.com/vllm-project/vllm/issues/24684"


def sample() -> dict:
    """The paste (commands, then the summary) and whose run it is."""
    return {"id": SAMPLE_ID, "text": "\n".join((SERVE, CLIENT, SUMMARY)), "url": URL,
            "gpu": "H100", "model": "llama-3.1-8b",
            "credit": ("A published run: vllm-project/vllm issue #24684 (September 2025), Llama 3.1 8B "
                       "Instruct on one H100 with the vllm/vllm-openai image of the day (about vLLM "
                       "0.10.1 to 0.10.2), 640 prompts, at most 64 in flight; the summary as the issue "
                       "printed it, its line breaks lost and cut after P99 TPOT.")}
