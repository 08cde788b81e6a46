"""Simulation 2: the KV-cache block manager with prefix caching, one action at a time.

Rules: widgets.md section 2; where it is silent, vLLM V1 (vllm-v1-semantics.md), via
the shared `pysim.blockpool`. The state is a replay of (config, actions).

Actions (the widget's buttons):
- ``admit`` admits the head of the waiting queue (a preempted request waits at the
  front); ``admit:NAME`` admits that waiting request. Admission is prefill: the
  prefix-cache lookup (capped so the last token is computed, C2), then blocks for the
  request's whole current sequence must fit (D3), counting free cached hits as used
  (D1). If they do not fit, nothing changes and the log says why.
- ``gen`` is one decode step: every running request, oldest first, produces one token.
  Simplification: the token and its KV slot appear together (in vLLM the KV of a
  sampled token is written one step later), so every token shown sits in a block.
  A request needing a new block when none is free preempts the newest running request,
  possibly itself (F2, recompute): its blocks are freed as on finish, it goes to the
  front of the waiting queue, keeps its generated tokens, and produces nothing this
  step. Requests that reached their answer length finish at the end of the step and
  free their blocks (F5), so freed blocks serve the next action.
- ``run`` repeats "admit the head if it fits, else gen" until every request finished.

Token words become ids through sha256 (equal words, equal ids); request X's k-th
generated token is the word "xk". Statuses: waiting, running, finished, and preempted
(back in the waiting queue after a preemption).

View model (JSON)
    pool        {num_gpu_blocks, block_size, enable_prefix_caching, used, cached, free, num_free_blocks}:
                counts of blocks in use, free but cached, free; num_free_blocks =
                cached + free (the free queue's length)
    blocks      one per block id: {id, state "used" | "cached" | "free", owners (names of
                the running requests holding it, admission order), ref_count, hash
                (6 hex chars or null), parent_hash (6 hex, "root" for a first block,
                null without hash), tokens (words it holds; a cached free block keeps
                its words, a plain free block shows []), free_queue_position (0 = head,
                handed out next; null when in use)}
    free_queue  block ids from head (handed out next) to tail (evicted last)
    requests    in config order: {name, status, block_table, prompt (words),
                generated (words), max_tokens, num_tokens (prompt + generated),
                prefilled (tokens computed by its prefills, all admissions),
                skipped_by_cache (tokens its prefills took from the cache),
                preemptions, queue_position (index in waiting or null)}
    waiting, running  names in queue order / admission order (oldest first)
    log         plain sentences, oldest first (the last 500); log_dropped: lines cut;
                last_action_log_start: index in `log` of the latest action's first line
    counters    blocks_saved_by_caching (cache-hit blocks at admissions),
                prefill_tokens_skipped, preemptions, did_not_fit (admissions refused,
                and steps a `run` waited for the head), prefill_tokens (computed),
                tokens_generated, evictions (cached hashes dropped when their block was
                handed out), allocations (blocks handed out from the free queue)
    step        gen steps so far; actions_applied: number of actions replayed
    next_actions {can_admit, head, head_needs_blocks, head_fits, admittable (names),
                can_gen, can_run, done}: which buttons make sense now
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import deque
from dataclasses import dataclass

from .blockpool import BlockPool, KVCacheManager, cdiv, hash_block
from .bridge import Simulation, check_depth
from .config import ConfigError, bounded, data, flag

MAX_ACTIONS = 2000
MAX_REQUESTS = 64  # the widget shows 5; 64 keeps the slowest allowed run near 0.15 s (bench_bounds)
MAX_PROMPT_WORDS = 64
MAX_ANSWER_TOKENS = 64
MAX_LOG_LINES = 500  # older lines are dropped (counted in log_dropped)

SYSTEM = "you are a helpful assistant . be brief".split()
PIRATE = "you are a pirate . speak like one".split()


def default_requests() -> list[dict]:
    """The spec's five chats: A, B, C, E share an 8-token system prompt, D has its own."""
    return [
        {"name": "A", "prompt": SYSTEM + "explain kv caching".split(), "max_tokens": 8},
        {"name": "B", "prompt": SYSTEM + "define latency".split(), "max_tokens": 10},
        {"name": "C", "prompt": SYSTEM + "why batch requests ?".split(), "max_tokens": 6},
        {"name": "D", "prompt": PIRATE + "tell me about the sea".split(), "max_tokens": 12},
        {"name": "E", "prompt": SYSTEM + "what is a kv cache ?".split(), "max_tokens": 9},
    ]


_NAME = re.compile(r"^[A-Za-z0-9_-]{1,12}$")


def check_requests(value) -> list[dict]:
    """Validate the requests list (a list, or its JSON text from the command line)."""
    def bad(message):
        return ConfigError("requests", message)

    if isinstance(value, str):
        check_depth(value, "requests")  # deep nesting would overflow Pyodide's stack
        try:
            value = json.loads(value)
        except ValueError:
            raise bad("expected a JSON list of requests") from None
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_REQUESTS:
        raise bad(f"expected a list of 1 to {MAX_REQUESTS} requests")
    out, names = [], set()
    for i, item in enumerate(value, 1):
        if not isinstance(item, dict) or set(item) != {"name", "prompt", "max_tokens"}:
            raise bad(f"request {i}: expected exactly the keys name, prompt, max_tokens")
        name, prompt, answer = item["name"], item["prompt"], item["max_tokens"]
        if not isinstance(name, str) or not _NAME.match(name):
            raise bad(f"request {i}: name must be 1 to 12 letters, digits, '_' or '-'")
        if name in names:
            raise bad(f"request {i}: the name {name} is used twice")
        names.add(name)
        if isinstance(prompt, str):
            prompt = prompt.split()
        if (not isinstance(prompt, list) or not 1 <= len(prompt) <= MAX_PROMPT_WORDS
                or not all(isinstance(w, str) and 1 <= len(w) <= 24 and w.split() == [w]
                           for w in prompt)):
            raise bad(f"request {name}: prompt must be 1 to {MAX_PROMPT_WORDS} words "
                      "of 1 to 24 characters without spaces")
        if isinstance(answer, bool) or not isinstance(answer, int) \
                or not 1 <= answer <= MAX_ANSWER_TOKENS:
            raise bad(f"request {name}: max_tokens must be a whole number "
                      f"from 1 to {MAX_ANSWER_TOKENS}")
        out.append({"name": name, "prompt": list(prompt), "max_tokens": answer})
    return out


@dataclass(frozen=True)
class PagedKVCacheConfig:
    num_gpu_blocks: int = bounded(24, 1, 4096, "blocks in the KV-cache pool",
                                 label="KV blocks", unit="blocks")
    block_size: int = bounded(4, 1, 32, "tokens per block", label="Block size", unit="tokens")
    enable_prefix_caching: bool = flag(True, "prefix caching on or off", label="Prefix caching")
    requests: list = data(default_requests, f"1 to {MAX_REQUESTS} requests, each "
                          "{name, prompt (words), max_tokens}", check_requests,
                          label="Requests")

    def check(self):
        for r in self.requests:
            need = cdiv(len(r["prompt"]) + r["max_tokens"], self.block_size)
            if need > self.num_gpu_blocks:
                raise ConfigError("requests", f"request {r['name']} needs {need} blocks for "
                                  f"its prompt and answer; the pool has {self.num_gpu_blocks}")


def token_id(word: str) -> int:
    """Equal words, equal ids: the first 4 bytes of the word's sha256."""
    return int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big")


class _Request:
    def __init__(self, spec: dict):
        self.name = spec["name"]
        self.prompt = spec["prompt"]
        self.max_tokens = spec["max_tokens"]
        self.words = list(self.prompt)  # prompt + generated so far
        self.ids = [token_id(w) for w in self.words]
        self.hashes: list[bytes] = []  # chained hashes of its full blocks, grown as they fill
        self.status = "waiting"  # running, finished, or preempted (waiting again)
        self.prefilled = self.skipped = self.preemptions = 0

    @property
    def generated(self) -> list[str]:
        return self.words[len(self.prompt):]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


class _Sim:
    def __init__(self, config: PagedKVCacheConfig):
        self.pool = BlockPool(config.num_gpu_blocks, config.block_size, config.enable_prefix_caching)
        self.kv = KVCacheManager(self.pool)
        self.requests = [_Request(r) for r in config.requests]
        self.by_name = {r.name: r for r in self.requests}
        self.waiting = deque(self.requests)
        self.running: list[_Request] = []
        self.log: list[str] = []
        self.steps = 0
        self.c = dict(blocks_saved_by_caching=0, prefill_tokens_skipped=0, preemptions=0,
                      did_not_fit=0, prefill_tokens=0, tokens_generated=0)
        self.hash_info: dict[bytes, tuple] = {}  # hash -> (parent hash, words): for the view
        self.last_start = 0  # index of the first log line written by the latest action

    def say(self, line: str) -> None:
        self.log.append(line)

    # --- admission -------------------------------------------------------------
    def hashes(self, r: _Request) -> list[bytes]:
        """r's full-block hashes, extended by the blocks filled since the last call (B1)."""
        if self.pool.enable_prefix_caching:
            hs, bs = r.hashes, self.pool.block_size
            while len(hs) < len(r.ids) // bs:
                i = len(hs)
                hs.append(hash_block(hs[-1] if hs else None, r.ids[i * bs:(i + 1) * bs]))
        return r.hashes

    def fit(self, r: _Request):
        """(hit blocks, hit tokens, blocks needed) for admitting r now."""
        hits, hit_tokens = self.kv.lookup(r.ids, self.hashes(r))
        return hits, hit_tokens, self.kv.blocks_needed(r.name, len(r.ids), hits)

    def admit(self, r: _Request) -> bool:
        hits, hit_tokens, need = self.fit(r)
        if need > self.pool.num_free_blocks:
            self.c["did_not_fit"] += 1
            self.say(f"{r.name} does not fit: needs {_plural(need, 'block')}, "
                     f"{self.pool.num_free_blocks} free")
            return False
        evicted = self.pool.num_evictions
        ok = self.allocate(r, hits)
        assert ok, "blocks_needed said it fits"
        self.waiting.remove(r)
        self.running.append(r)
        again = r.status == "preempted"
        r.status = "running"
        computed = len(r.ids) - hit_tokens
        r.prefilled += computed
        r.skipped += hit_tokens
        self.c["prefill_tokens"] += computed
        self.c["prefill_tokens_skipped"] += hit_tokens
        self.c["blocks_saved_by_caching"] += len(hits)
        new = len(self.kv.block_table(r.name)) - len(hits)
        what = f"prompt + {len(r.generated)} generated" if again else "prompt"
        line = f"{r.name}{' re-' if again else ' '}admitted ({what}, {len(r.ids)} tokens): "
        if hits:
            line += (f"{_plural(len(hits), 'block')} from cache, prefill skips "
                     f"{hit_tokens} tokens and computes {computed} into "
                     f"{_plural(new, 'new block')}")
        else:
            line += f"prefill computes {computed} tokens into {_plural(new, 'new block')}"
        if self.pool.num_evictions > evicted:
            line += f", evicting {_plural(self.pool.num_evictions - evicted, 'cached block')}"
        self.say(line)
        return True

    def allocate(self, r: _Request, hits=()) -> bool:
        """Blocks for all of r's tokens; remember newly cached blocks' contents."""
        before = self.kv.num_cached_blocks(r.name)
        if not self.kv.allocate_slots(r.name, r.ids, len(r.ids), hits, self.hashes(r)):
            return False
        hashes, bs = self.kv.request_hashes(r.name), self.pool.block_size
        for i in range(max(before, len(hits)), len(hashes)):
            self.hash_info[hashes[i]] = (hashes[i - 1] if i else None,
                                         tuple(r.words[i * bs:(i + 1) * bs]))
        return True

    # --- decoding ----------------------------------------------------------------
    def gen(self) -> None:
        if not self.running:
            self.say("gen: nothing is running")
            return
        self.steps += 1
        produced, new_blocks, events = [], [], []
        i = 0
        while i < len(self.running):  # oldest first; victims are popped off the end
            r = self.running[i]
            held = len(self.kv.block_table(r.name))
            r.words.append(f"{r.name.lower()}{len(r.generated) + 1}")
            r.ids.append(token_id(r.words[-1]))
            while not self.allocate(r):
                victim = self.running.pop()
                if victim is r:  # preempted: it produces nothing this step
                    r.words.pop()
                    r.ids.pop()
                    del r.hashes[len(r.ids) // self.pool.block_size:]
                events.append(self.preempt(victim, r))
                if victim is r:
                    break
            if r.status != "running":
                break  # FCFS: a request preempting itself is the last one (F2)
            produced.append(r.name)
            if len(self.kv.block_table(r.name)) > held:
                new_blocks.append(f"{r.name} takes block {self.kv.block_table(r.name)[-1]}")
            i += 1
        self.c["tokens_generated"] += len(produced)
        line = f"gen {self.steps}: " + (", ".join(produced) or "nobody") + \
            (" each produce a token" if len(produced) > 1 else " produces a token")
        self.say(line + "".join(f"; {x}" for x in new_blocks))
        for event in events:
            self.say(event)
        for r in [r for r in self.running if len(r.generated) == r.max_tokens]:
            n = len(self.kv.block_table(r.name))
            self.kv.free(r.name)
            self.running.remove(r)
            r.status = "finished"
            self.say(f"{r.name} finished after {r.max_tokens} tokens and frees "
                     f"{_plural(n, 'block')}")

    def preempt(self, victim: _Request, requester: _Request) -> str:
        """Recompute preemption (F2); returns the log line."""
        n = len(self.kv.block_table(victim.name))
        self.kv.free(victim.name)
        victim.status = "preempted"
        victim.preemptions += 1
        self.c["preemptions"] += 1
        self.waiting.appendleft(victim)
        who = "itself" if victim is requester else victim.name
        return (f"out of blocks: {requester.name} needs a block, preempt {who} (newest "
                f"running), freeing {_plural(n, 'block')}; {victim.name} waits at the front "
                f"and keeps its {_plural(len(victim.generated), 'generated token')}")

    # --- run to completion ---------------------------------------------------------
    def run(self) -> None:
        # Termination: the oldest running request is never preempted by another, and
        # cannot preempt itself (config.check: every request fits the pool alone), so
        # every gen produces at least one token and there are at most sum(answers) gens.
        # Between two gens, each admission follows a preemption or a first arrival,
        # and a gen preempts fewer than len(requests). The bound is a safety net.
        n = len(self.requests)
        limit = (n + 1) * (sum(r.max_tokens for r in self.requests) + 1) + n
        blocked = None
        for _ in range(limit):
            if not self.waiting and not self.running:
                return
            head = self.waiting[0] if self.waiting else None
            if head is not None:
                need = self.fit(head)[2]
                if need <= self.pool.num_free_blocks:
                    self.admit(head)
                    blocked = None
                    continue
                self.c["did_not_fit"] += 1
                if blocked is not head:
                    blocked = head
                    self.say(f"run: {head.name} waits, needs {_plural(need, 'block')}, "
                             f"{self.pool.num_free_blocks} free")
            if not self.running:
                self.say(f"run stops: {head.name} can never fit")  # excluded by check()
                return
            self.gen()
        self.say(f"run stopped after {limit} steps")

    def apply(self, action: str) -> None:
        start = len(self.log)
        if action == "gen":
            self.gen()
        elif action == "run":
            if not self.waiting and not self.running:
                self.say("run: every request has finished")
            self.run()
        elif action == "admit":
            if self.waiting:
                self.admit(self.waiting[0])
            else:
                self.say("admit: nothing is waiting")
        else:
            r = self.by_name[action.partition(":")[2]]
            if r in self.waiting:
                self.admit(r)
            else:
                self.say(f"admit {r.name}: it is {r.status}, not waiting")
        self.last_start = start

    def tables(self):
        return self.kv.tables().values()


def parse_actions(actions, names) -> list[str]:
    if len(actions) > MAX_ACTIONS:
        raise ConfigError("actions", f"{len(actions):,} actions; at most {MAX_ACTIONS:,}")
    allowed = "admit, admit:NAME, gen, run"
    for a in actions:
        if not isinstance(a, str):
            raise ConfigError("actions", f"got {str(a)[:40]!r}; allowed actions: {allowed}")
        if a in ("admit", "gen", "run"):
            continue
        verb, sep, name = a.partition(":")
        if verb != "admit" or not sep or name not in names:
            raise ConfigError("actions", f"unknown action {a[:40]!r}; allowed actions: "
                              f"{allowed} (NAME one of {', '.join(sorted(names))[:200]})")
    return list(actions)


def simulate(config: PagedKVCacheConfig, actions) -> _Sim:
    """The simulation state after replaying `actions` (tests step through `_Sim.apply`)."""
    sim = _Sim(config)
    for a in parse_actions(actions, sim.by_name):
        sim.apply(a)
    return sim


def run(config: PagedKVCacheConfig, actions) -> dict:
    sim = simulate(config, actions)
    sim.pool.check_invariants(sim.tables())
    v = view(sim)
    v["actions_applied"] = len(actions)
    return v


def _short(h) -> str | None:
    return h.hex()[:6] if h is not None else None


def view(sim: _Sim) -> dict:
    pool, kv, bs = sim.pool, sim.kv, sim.pool.block_size
    owners: dict[int, list[str]] = {}
    content: dict[int, list[str]] = {}
    for r in sim.running:  # running order = admission order
        for i, b in enumerate(kv.block_table(r.name)):
            owners.setdefault(b, []).append(r.name)
            content.setdefault(b, r.words[i * bs:(i + 1) * bs])
    queue = pool.free_queue()
    position = {b: i for i, b in enumerate(queue)}
    blocks = []
    for b in range(pool.num_gpu_blocks):
        h = pool.block_hash(b)
        parent, words = sim.hash_info[h] if h is not None else (None, ())
        ref = pool.ref_count(b)
        blocks.append({
            "id": b,
            "state": "used" if ref else ("cached" if h is not None else "free"),
            "owners": owners.get(b, []),
            "ref_count": ref,
            "hash": _short(h),
            "parent_hash": (_short(parent) or "root") if h is not None else None,
            "tokens": content[b] if ref else list(words),
            "free_queue_position": position.get(b),
        })
    waiting_pos = {r.name: i for i, r in enumerate(sim.waiting)}
    requests = [{
        "name": r.name,
        "status": r.status,
        "block_table": list(kv.block_table(r.name)),
        "prompt": list(r.prompt),
        "generated": r.generated,
        "max_tokens": r.max_tokens,
        "num_tokens": len(r.words),
        "prefilled": r.prefilled,
        "skipped_by_cache": r.skipped,
        "preemptions": r.preemptions,
        "queue_position": waiting_pos.get(r.name),
    } for r in sim.requests]
    head = sim.waiting[0] if sim.waiting else None
    need = sim.fit(head)[2] if head else None
    used = sum(1 for b in blocks if b["state"] == "used")
    cached = sum(1 for b in blocks if b["state"] == "cached")
    log = sim.log[-MAX_LOG_LINES:]
    dropped = len(sim.log) - len(log)
    return {
        "pool": {"num_gpu_blocks": pool.num_gpu_blocks, "block_size": bs, "enable_prefix_caching": pool.enable_prefix_caching,
                 "used": used, "cached": cached, "free": pool.num_gpu_blocks - used - cached,
                 "num_free_blocks": pool.num_free_blocks},
        "blocks": blocks,
        "free_queue": queue,
        "requests": requests,
        "waiting": [r.name for r in sim.waiting],
        "running": [r.name for r in sim.running],
        "log": log,
        "log_dropped": dropped,
        "last_action_log_start": max(0, sim.last_start - dropped),
        "counters": {**sim.c, "evictions": pool.num_evictions,
                     "allocations": pool.num_allocations},
        "step": sim.steps,
        "next_actions": {
            "can_admit": head is not None,
            "head": head.name if head else None,
            "head_needs_blocks": need,
            "head_fits": head is not None and need <= pool.num_free_blocks,
            "admittable": [r.name for r in sim.waiting],
            "can_gen": bool(sim.running),
            "can_run": bool(sim.running or sim.waiting),
            "done": not sim.running and not sim.waiting,
        },
    }


def text(v: dict) -> str:
    p, c = v["pool"], v["counters"]
    lines = [f"pool: {p['num_gpu_blocks']} blocks of {p['block_size']} tokens, caching "
             f"{'on' if p['enable_prefix_caching'] else 'off'}; {p['used']} used, {p['cached']} free but "
             f"cached, {p['free']} free; gen steps: {v['step']}"]
    mark = {"used": "", "cached": "c", "free": "."}
    cells = [f"{b['id']}:{'+'.join(b['owners']) or mark[b['state']]}"
             + (f"x{b['ref_count']}" if b["ref_count"] > 1 else "") for b in v["blocks"]]
    for i in range(0, len(cells), 8):
        lines.append("  " + " ".join(f"{x:<9}" for x in cells[i:i + 8]).rstrip())
    lines.append("free queue (head..tail): " + " ".join(map(str, v["free_queue"])))
    lines.append(f"{'request':<8} {'status':<10} {'gen':>7} {'prefill':>7} {'skipped':>7} "
                 f"{'preempt':>7}  block table")
    for r in v["requests"]:
        lines.append(f"{r['name']:<8} {r['status']:<10} "
                     f"{len(r['generated']):>3}/{r['max_tokens']:<3} {r['prefilled']:>7} "
                     f"{r['skipped_by_cache']:>7} {r['preemptions']:>7}  "
                     + " ".join(map(str, r["block_table"])))
    lines.append("counters: " + ", ".join(f"{k}={val}" for k, val in c.items()))
    lines.append("log (last 20 lines):")
    lines.extend("  " + line for line in v["log"][-20:])
    return "\n".join(lines)


SIMULATION = Simulation(name="paged_kv_cache", config_cls=PagedKVCacheConfig, run=run, text=text,
                        takes_actions=True)
