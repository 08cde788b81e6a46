"""Record a vLLM release's own scheduler code, for pysim's fidelity tests.

    python tools/record_vllm.py 0.34.0 [--out tests/data/fidelity/vllm-0.34.0]
                                       [--cases N] [--keep-env DIR]

1. Makes a throwaway venv (a temp dir, or --keep-env DIR to keep and reuse it) with
   vLLM X installed CPU-only: `vllm==X --no-deps`, a CPU build of torch, and only the
   pure-Python packages that importing vLLM's scheduler needs.
2. Generates the cases here, deterministically from integer seeds (random.Random).
3. Runs tools/vllm_recorder.py with the venv's Python: it drives vLLM's real
   KVCacheManager/BlockPool, synchronous Scheduler and AsyncScheduler on every case,
   with a mocked model.
4. Writes OUT/{kv,sched,sched_async}/cases.jsonl.gz (byte-for-byte deterministic) and
   a README.md per folder that defines the format and how vLLM was driven.

Run outside CI (it installs packages); it is not part of pysim's wheel. The case
generator and the writer need only the standard library, so tests/build can check them.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RECORDER = HERE / "vllm_recorder.py"

# torch: the CPU build that is small and imports; vLLM's scheduler never runs a kernel.
TORCH = "torch==2.13.0"
# What importing vLLM's config and scheduler modules needs besides vLLM and torch, found
# by importing them (see install_vllm, which adds whatever a newer release also needs).
# Their versions follow vLLM's own requirements where vLLM pins them.
PURE_PYTHON_NEEDS = [
    "numpy", "packaging", "regex", "pillow", "pydantic", "pydantic-core",
    "typing-inspection", "annotated-types", "typing-extensions", "psutil", "pyzmq",
    "transformers", "huggingface-hub", "tokenizers", "safetensors", "tqdm", "pyyaml",
    "filelock", "fsspec", "httpx2", "httpcore2", "h11", "idna", "anyio", "certifi",
    "truststore", "urllib3", "requests", "aiohttp", "multidict", "attrs", "yarl",
    "propcache", "aiohappyeyeballs", "aiosignal", "frozenlist", "pybase64", "cachetools",
    "cbor2", "msgspec", "cloudpickle", "uvloop", "py-cpuinfo", "prometheus_client",
    "llguidance", "xgrammar", "apache-tvm-ffi", "einops", "typer", "click", "rich",
    "shellingham", "markdown-it-py", "mdurl", "pygments", "annotated-doc",
]
# A module name that is not its package's name on PyPI.
PACKAGE_OF_MODULE = {"PIL": "pillow", "yaml": "pyyaml", "zmq": "pyzmq", "attr": "attrs",
                     "cpuinfo": "py-cpuinfo", "tvm_ffi": "apache-tvm-ffi",
                     "cv2": "opencv-python-headless", "google": "protobuf"}

# A tiny model *config* (no weights): vLLM's ModelConfig reads it from a local folder,
# so nothing is downloaded. Only max_position_embeddings matters (>= max_model_len).
TINY_MODEL = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2,
              "num_key_value_heads": 2, "num_hidden_layers": 1, "vocab_size": 200000,
              "max_position_embeddings": 8192, "torch_dtype": "float32",
              "rms_norm_eps": 1e-6}

SCHED_SEED_BASE = 620000
KV_SEED_BASE = 840000
DEFAULT_SCHED_CASES = 96  # an eighth of them large


# ----------------------------------------------------------------------------------
# Case generation (deterministic, standard library only)
# ----------------------------------------------------------------------------------

def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# Every scheduler setting pysim models, each combination equally often.
COMBOS = [(policy, caching, chunking) for policy in ("fcfs", "priority")
          for caching in (False, True) for chunking in (True, False)]


def sched_case(index: int, large: bool) -> dict:
    """One scheduler workload, drawn from its seed. Small pools and budgets so that
    preemption and head-of-line blocking happen often."""
    seed = SCHED_SEED_BASE + index
    rng = random.Random(seed)
    policy, caching, chunking = COMBOS[index % len(COMBOS)]
    if large:
        bs, n = 16, rng.randint(30, 60)
        prompt_len, out_len = (30, 270), (1, 64)
        seqs = rng.choice([8, 32, 64])
        prefixes = [[rng.randrange(1, 900) for _ in range(rng.choice([16, 48, 100]))]
                    for _ in range(3)]
    else:
        bs, n = rng.choice([2, 4, 8]), rng.randint(3, 12)
        prompt_len, out_len = (1, 25), (1, 16)
        seqs = rng.randint(1, 8)
        prefixes = [[rng.randrange(1, 100) for _ in range(rng.choice([2, 4, 6, 8]))]
                    for _ in range(2)]
    all_at_zero = rng.random() < 0.35
    requests, clock = [], rng.randint(0, 3)
    for i in range(n):
        length = rng.randint(*prompt_len)
        # Some prompts start with a shared prefix (prefix-cache hits), the rest is unique
        # to the request (ids 1000*(i+1) + j, below 100000).
        head = list(rng.choice(prefixes)) if rng.random() < 0.5 else []
        head = head[:max(0, length - 1)]
        prompt = head + [1000 * (i + 1) + j for j in range(length - len(head))]
        if not all_at_zero:
            clock += rng.choice([0, 0, 1, 1, 2, 3])
        requests.append({"arrival_step": 0 if all_at_zero else clock, "prompt": prompt,
                         "output_len": rng.randint(*out_len),
                         "priority": rng.randint(0, 3) if policy == "priority" else 0})
    requests.sort(key=lambda r: r["arrival_step"])  # stable: ties keep draw order
    for i, r in enumerate(requests):
        r["id"] = f"R{i}"
    requests = [{k: r[k] for k in ("id", "arrival_step", "prompt", "output_len", "priority")}
                for r in requests]
    longest = max(len(r["prompt"]) + r["output_len"] for r in requests)
    need = max(_cdiv(len(r["prompt"]) + r["output_len"], bs) for r in requests)
    usable = need + rng.randint(0, need * (3 if large else 4))
    if chunking:
        max_model_len = 4096 if large else 256
        budget = rng.choice([128, 256, 512, 2048] if large else [4, 6, 8, 12, 16, 24, 32, 64])
        budget = max(budget, seqs)
    else:  # without chunking vLLM needs the budget to hold a whole max_model_len
        max_model_len = longest + 1 + rng.randint(0, 30)
        budget = max(max_model_len + rng.choice([0, 0, 10, 40]), seqs)
    return {
        "id": f"{'large' if large else 'small'}_{index:03d}", "seed": seed,
        "config": {"block_size": bs, "num_gpu_blocks": usable + 1,
                   "max_num_batched_tokens": budget, "max_num_seqs": seqs,
                   "enable_prefix_caching": caching, "enable_chunked_prefill": chunking,
                   "policy": policy, "max_model_len": max_model_len,
                   "async_scheduling": False},
        "requests": requests,
    }


def sched_cases(count: int = DEFAULT_SCHED_CASES) -> list[dict]:
    """`count` workloads: the last eighth (at least one) large, the rest small."""
    num_large = max(1, count // 8)
    return [sched_case(i, large=i >= count - num_large) for i in range(count)]


def as_async(case: dict) -> dict:
    """The same workload for the AsyncScheduler."""
    return dict(case, config=dict(case["config"], async_scheduling=True))


# The KV-cache widget (docs' walk-through and pysim.sims.paged_kv_cache's defaults).
SYSTEM = "you are a helpful assistant . be brief".split()
PIRATE = "you are a pirate . speak like one".split()
DEFAULT_CHATS = [("A", SYSTEM + "explain kv caching".split(), 8),
                 ("B", SYSTEM + "define latency".split(), 10),
                 ("C", SYSTEM + "why batch requests ?".split(), 6),
                 ("D", PIRATE + "tell me about the sea".split(), 12),
                 ("E", SYSTEM + "what is a kv cache ?".split(), 9)]
_ALTERNATE = ["admit", "gen"] * 5 + ["gen"] * 3
WALKS = [  # (id, caching, actions): the chapter's walk-through
    ("walk1_share_prefix_on", True, ["admit", "admit"]),
    ("walk2_share_prefix_off", False, ["admit", "admit"]),
    ("walk3_alternate_off", False, _ALTERNATE + ["admit"] + ["gen"] * 7),
    ("walk3_alternate_on", True, _ALTERNATE + ["gen"] * 7),
    ("walk3_until_first_preemption_then_run_off", False, _ALTERNATE + ["run"]),
    ("walk4_run_on", True, ["run"]),
    ("walk4_run_off", False, ["run"]),
    ("walk5_admit_two_then_run_on", True, ["admit", "admit", "run"]),
]
WORDS = ("the a of to and in is it you that he was for on are with as I his they be at "
         "one have this from or had by hot word but what some we can out other were all "
         "there when up use your how said an each she which do their time if will way "
         "about many then them write would like so these her long make thing see him two").split()


def kv_request(name, words, answer) -> dict:
    return {"name": name, "prompt": list(words), "prompt_ids": [_word_id(w) for w in words],
            "answer_tokens": answer,
            "output_ids": [_word_id(f"{name.lower()}{k}") for k in range(1, answer + 1)]}


def _word_id(word: str) -> int:
    import hashlib
    return int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:4], "big")


def _kv_config(bs, num_blocks, caching, requests, default) -> dict:
    return {"block_size": bs, "num_blocks": num_blocks, "null_block": 0, "caching": caching,
            "default_requests": default, "requests": requests}


def _random_actions(rng: random.Random, names: list[str]) -> list[str]:
    actions = []
    for _ in range(rng.randint(8, 40)):
        x = rng.random()
        if x < 0.45:
            actions.append("gen")
        elif x < 0.75:
            actions.append("admit")
        elif x < 0.95:
            actions.append(f"admit:{rng.choice(names)}")
        else:
            actions.append("run")
            break  # run finishes everything: what follows would change nothing
    return actions


def kv_cases() -> list[dict]:
    """The walk-through (8), the widget's own setup (32), the default chats on other
    pools (40) and other request lists (40): 120 cases."""
    defaults = [kv_request(n, w, a) for n, w, a in DEFAULT_CHATS]
    names = [r["name"] for r in defaults]
    cases = [{"id": cid, "seed": None, "config": _kv_config(4, 24, on, defaults, True),
              "actions": list(actions)} for cid, on, actions in WALKS]
    for i in range(32):
        rng = random.Random(KV_SEED_BASE + i)
        cases.append({"id": f"widget_{i:03d}", "seed": KV_SEED_BASE + i,
                      "config": _kv_config(4, 24, i % 2 == 0, defaults, True),
                      "actions": _random_actions(rng, names)})
    for i in range(40):
        seed = KV_SEED_BASE + 100 + i
        rng = random.Random(seed)
        bs = rng.randint(2, 4)
        need = max(_cdiv(len(r["prompt"]) + r["answer_tokens"], bs) for r in defaults)
        cases.append({"id": f"default_{i:03d}", "seed": seed,
                      "config": _kv_config(bs, need + 1 + rng.randint(0, 2 * need),
                                           rng.random() < 0.5, defaults, True),
                      "actions": _random_actions(rng, names)})
    for i in range(40):
        seed = KV_SEED_BASE + 200 + i
        rng = random.Random(seed)
        bs = rng.randint(2, 4)
        num_blocks = rng.randint(6, 30)
        prefixes = [rng.sample(WORDS, rng.randint(2, 8)) for _ in range(2)]
        requests = []
        for name in "ABCDEF"[:rng.randint(2, 6)]:
            while True:  # every request fits the usable pool on its own, answer included
                words = (list(rng.choice(prefixes)) if rng.random() < 0.6 else []) + \
                    [rng.choice(WORDS) for _ in range(rng.randint(1, 8))]
                answer = rng.randint(1, 12)
                if _cdiv(len(words) + answer, bs) <= num_blocks - 1:
                    break
            requests.append(kv_request(name, words, answer))
        cases.append({"id": f"custom_{i:03d}", "seed": seed,
                      "config": _kv_config(bs, num_blocks, rng.random() < 0.5, requests, False),
                      "actions": _random_actions(rng, [r["name"] for r in requests])})
    return cases


# ----------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------

def gzip_jsonl(cases: list[dict]) -> bytes:
    """cases.jsonl, gzipped with no timestamp or name: the same cases give the same bytes."""
    text = "".join(json.dumps(c, separators=(", ", ": ")) + "\n" for c in cases)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as f:
        f.write(text.encode("utf-8"))
    return buf.getvalue()


def write_folder(folder: Path, cases: list[dict], readme: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cases.jsonl.gz").write_bytes(gzip_jsonl(cases))
    (folder / "README.md").write_text(readme, encoding="utf-8")


def readme(kind: str, version: str, count: int, command: str) -> str:
    """The folder's README: the template tools/readmes/<kind>.md with the version,
    the number of cases and the command filled in."""
    text = (HERE / "readmes" / f"{kind}.md").read_text(encoding="utf-8")
    return (text.replace("{version}", version).replace("{count}", str(count))
            .replace("{command}", command))


# ----------------------------------------------------------------------------------
# The venv
# ----------------------------------------------------------------------------------

def _pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "-q", *args], check=True)


def _probe(python: Path, model_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), str(RECORDER), "--probe", str(model_dir)],
                          capture_output=True, text=True)


def install_vllm(env: Path, version: str, model_dir: Path) -> Path:
    """A venv at `env` where vLLM `version`'s scheduler imports and runs; its python."""
    python = env / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    if _probe(python, model_dir).returncode == 0:
        return python  # a kept venv that already works
    _pip(python, TORCH)
    _pip(python, "--no-deps", f"vllm=={version}")
    pins = subprocess.run(  # vLLM's own requirement for each package, if it states one
        [str(python), "-c", "import importlib.metadata as m, json; "
         "print(json.dumps([r.split(';')[0] for r in m.requires('vllm') or []]))"],
        capture_output=True, text=True, check=True)
    spec = {}
    for req in json.loads(pins.stdout):
        name = req.split("[")[0].split("<")[0].split(">")[0].split("=")[0].split("!")[0]
        spec[name.strip().lower().replace("_", "-")] = req.replace(" ", "")
    want = [spec.get(p.lower().replace("_", "-"), p) for p in PURE_PYTHON_NEEDS]
    _pip(python, "--no-deps", *[w for w in want if not w.startswith("torch")])
    for _ in range(30):  # a newer vLLM may import more: add what it asks for
        probe = _probe(python, model_dir)
        if probe.returncode == 0:
            return python
        missing = [line.split("No module named '")[1].split("'")[0].split(".")[0]
                   for line in probe.stderr.splitlines() if "No module named '" in line]
        missing = [m for m in missing if m != "vllm"]
        if not missing:
            break
        package = PACKAGE_OF_MODULE.get(missing[0], missing[0])
        print(f"  installing {package} (vLLM imports {missing[0]})", file=sys.stderr)
        _pip(python, "--no-deps", spec.get(package.lower(), package))
    raise SystemExit(f"vLLM {version}'s scheduler does not import:\n{probe.stderr[-3000:]}")


# ----------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("version", help="a vLLM release on PyPI, e.g. 0.34.0")
    ap.add_argument("--out", help="default: tests/data/fidelity/vllm-VERSION")
    ap.add_argument("--cases", type=int, default=DEFAULT_SCHED_CASES,
                    help="scheduler workloads, recorded once sync and once async")
    ap.add_argument("--keep-env", help="make (or reuse) the venv here and keep it")
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else ROOT / "tests/data/fidelity" / f"vllm-{args.version}"
    command = f"python tools/record_vllm.py {args.version}" + \
        (f" --cases {args.cases}" if args.cases != DEFAULT_SCHED_CASES else "")
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="record-vllm-") as tmp:
        tmp = Path(tmp)
        model_dir = tmp / "tiny-model"
        model_dir.mkdir()
        (model_dir / "config.json").write_text(json.dumps(TINY_MODEL))
        env = Path(args.keep_env) if args.keep_env else tmp / "venv"
        print(f"installing vLLM {args.version} into {env}", file=sys.stderr)
        python = install_vllm(env, args.version, model_dir)
        sched = sched_cases(args.cases)
        todo = [dict(c, kind="kv") for c in kv_cases()] + \
            [dict(c, kind="sched") for c in sched] + \
            [dict(as_async(c), kind="sched_async") for c in sched]
        cases_in, records = tmp / "cases.jsonl", tmp / "records.jsonl"
        cases_in.write_text("".join(json.dumps(c) + "\n" for c in todo))
        print(f"recording {len(todo)} cases", file=sys.stderr)
        subprocess.run([str(python), str(RECORDER), str(cases_in), str(records),
                        str(model_dir)], check=True)
        lines = [json.loads(line) for line in records.read_text().splitlines()]
    got = lines[0]["vllm_version"]
    if got != args.version:
        raise SystemExit(f"asked for vLLM {args.version}, the venv has {got}")
    by_kind: dict[str, list[dict]] = {"kv": [], "sched": [], "sched_async": []}
    for line in lines[1:]:
        by_kind[line["kind"]].append(line["case"])
    for kind, cases in by_kind.items():
        write_folder(out / kind, cases, readme(kind, args.version, len(cases), command))
        print(f"{out / kind}: {len(cases)} cases", file=sys.stderr)
    print(f"done in {time.time() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
