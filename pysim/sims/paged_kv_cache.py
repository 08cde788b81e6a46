"""Simulation 2: the KV-cache block manager with prefix caching, one action at a time.

Follows vLLM 0.34.0's `KVCacheManager` and `BlockPool` (vllm/v1/core/kv_cache_manager.py,
block_pool.py) as its `Scheduler` calls them, through the shared `pysim.engine.blockpool`, with
vLLM's null block and vLLM's timing; checked against recordings of vLLM's own code
(tests/data/fidelity/vllm-0.33.0/kv and vllm-0.34.0/kv). The state is a replay of (config, actions).

Actions (the widget's buttons):
- ``admit`` admits the head of the waiting queue (a preempted request waits at the
  front); ``admit:NAME`` admits that waiting request. Admission is vLLM's prefill of the
  whole current sequence: the prefix-cache lookup (`get_computed_blocks`, capped so the
  last token is computed), then blocks for the whole sequence must fit (the
  full-sequence check of `allocate_slots`), counting free cached hits as used. If they
  do not fit, nothing changes and the log says why. Every full block is hashed.
- ``gen`` is one decode step: every running request, oldest first, first gets a KV slot
  for the token it sampled last step (`allocate_slots(request, 1)`; a block is hashed
  once this write fills it), then samples a new token, which has no slot yet: it is
  *pending* until the next ``gen``. A request admitted since the last ``gen`` has no
  pending token (its prefill sampled its first token) and only samples. When a slot
  needs a new block while the free queue is empty, the most recently admitted running
  request is preempted, possibly the requester itself (recompute): its blocks are freed as on finish, it
  goes to the front of the waiting queue, keeps its generated tokens, and produces
  nothing this step. Requests that reached their answer length finish at the end of
  the step (their last token never gets a slot) and free their blocks in reverse
  table order, so freed blocks serve the next action.
- ``run`` repeats "admit the head if it fits, else gen" until every request finished.

Block 0 is vLLM's null block: reserved, never handed out, so `num_gpu_blocks - 1` blocks
are usable.

Token words become ids through sha256 (equal words, equal ids); request X's k-th
generated token is the word "xk". Statuses: waiting, running, finished, and preempted
(back in the waiting queue after a preemption).

View model (JSON)
    pool        {num_gpu_blocks, block_size, enable_prefix_caching, null_block, null_block_why, usable,
                used, cached, free, num_free_blocks}: num_gpu_blocks is vLLM's
                num_gpu_blocks, the null block (id 0) included; usable = num_gpu_blocks - 1;
                counts of blocks in use, free but cached, free; num_free_blocks =
                cached + free (the free queue's length)
    blocks      one per block id: {id, state "null" | "used" | "cached" | "free", owners (names of
                the running requests holding it, admission order), ref_count, hash
                (6 hex chars or null), parent_hash (6 hex, "root" for a first block,
                null without hash), tokens (words whose KV it holds; a cached free block
                keeps its words, a plain free block shows []), pending (names of running
                requests whose pending token gets its slot in this block next step),
                free_queue_position (0 = head, handed out next; null when in use)}
    free_queue  block ids from head (handed out next) to tail (evicted last)
    requests    in config order: {name, status, block_table, prompt (words),
                generated (words), max_tokens, num_tokens (prompt + generated),
                num_computed_tokens (tokens whose KV is written, vLLM's name; 0 unless
                running), pending_token (the word it sampled last step, whose KV is
                written next step, or null), pending_needs_block (that slot is in a
                block it does not hold yet), prefilled (tokens computed by its prefills, all admissions),
                skipped_by_cache (tokens its prefills took from the cache),
                preemptions, queue_position (index in waiting or null)}
    waiting, running  names in queue order / admission order (oldest first)
    log         plain sentences, oldest first (the last 500); log_dropped: lines cut;
                last_action_log_start: index in `log` of the latest action's first line
    last_action what the latest action did: adm [[name, ok, hit tokens, num tokens]],
                pre [[requester, victim, step]], fin [[name, step]], prims (on run:
                "+X" admitted X, "g" a gen), noop true; each key only when it happened
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

from pysim import fields
from pysim.config import ConfigError, check_json_depth, data
from pysim.engine.blockpool import NULL_BLOCK, BlockPool, KVCacheManager, hash_full_blocks
from pysim.registry import Simulation
from pysim.utils import cdiv

MAX_ACTIONS = 2000
MAX_REQUESTS = 64  # the widget shows 5; 64 keeps the slowest allowed run near 0.15 s (bench_bounds)
MAX_PROMPT_WORDS = 64
MAX_ANSWER_TOKENS = 64
MAX_LOG_LINES = 500  # older lines are dropped (counted in log_dropped)

NULL_BLOCK_WHY = ("Block 0 is vLLM's null block: reserved when the pool is made, never "
                  "handed out, a placeholder for block-table entries that hold no KV.")

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
        check_json_depth(value, "requests")  # deep nesting would overflow Pyodide's stack
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
    num_gpu_blocks: int = fields.num_gpu_blocks(24, 2, 4096)
    block_size: int = fields.block_size(4, 1, 32)
    enable_prefix_caching: bool = fields.enable_prefix_caching(True)
    requests: list = data(default_requests, f"1 to {MAX_REQUESTS} requests, each "
                          "{name, prompt (words), max_tokens}", check_requests,
                          label="Requests")

    def check(self):
        # The longest sequence a request holds KV for is prompt + answer - 1 tokens
        # (its last token never gets a slot); it must fit the usable pool alone, or
        # `run` could never finish it.
        usable = self.num_gpu_blocks - 1
        for r in self.requests:
            need = cdiv(len(r["prompt"]) + r["max_tokens"] - 1, self.block_size)
            if need > usable:
                raise ConfigError("requests", f"request {r['name']} needs {need} blocks for "
                                  f"its prompt and answer; the pool has {usable} usable "
                                  f"(block 0 is vLLM's null block)")


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
        # Tokens whose KV is written (vLLM's num_computed_tokens): len(ids) right after an
        # admission, len(ids) - 1 once it has sampled (the new token is pending), 0 when
        # not running.
        self.num_computed = 0
        self.status = "waiting"  # running, finished, or preempted (waiting again)
        self.prefilled = self.skipped = self.preemptions = 0

    @property
    def generated(self) -> list[str]:
        return self.words[len(self.prompt):]

    @property
    def has_pending(self) -> bool:
        """It sampled a token last step whose KV slot the next step allocates."""
        return self.status == "running" and self.num_computed < len(self.ids)


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
        self.preempted: list[tuple[str, str]] = []  # (requester, victim) names, in order
        self.steps = 0
        self.c = dict(blocks_saved_by_caching=0, prefill_tokens_skipped=0, preemptions=0,
                      did_not_fit=0, prefill_tokens=0, tokens_generated=0)
        self.hash_info: dict[bytes, tuple] = {}  # hash -> (parent hash, words): for the view
        self.last_start = 0  # index of the first log line written by the latest action
        # What the latest action did, in the terms of the vLLM recordings
        # (tests/data/fidelity/vllm-0.34.0/kv/README.md): adm, pre, fin, prims lists, noop.
        self.last: dict = {}

    def note(self, kind: str, item) -> None:
        self.last.setdefault(kind, []).append(item)

    def say(self, line: str) -> None:
        self.log.append(line)

    # --- admission -------------------------------------------------------------
    def hashes(self, r: _Request) -> list[bytes]:
        """r's full-block hashes, extended by the blocks filled since the last call (vLLM
        keeps these on the request and extends them as tokens are appended)."""
        if self.pool.enable_prefix_caching:
            r.hashes += list(hash_full_blocks(r.ids, self.pool.block_size, r.hashes, len(r.hashes)))
        return r.hashes

    def fit(self, r: _Request):
        """(hit blocks, hit tokens, blocks needed) for admitting r now."""
        hits, hit_tokens = self.kv.lookup(r.ids, self.hashes(r))
        return hits, hit_tokens, self.kv.blocks_needed(r.name, len(r.ids), hits)

    def admit(self, r: _Request) -> bool:
        hits, hit_tokens, need = self.fit(r)
        self.note("adm", [r.name, need <= self.pool.num_free_blocks, hit_tokens, len(r.ids)])
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
        r.num_computed = len(r.ids)  # the prefill writes the whole sequence's KV
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

    def allocate(self, r: _Request, hits=(), num_tokens=None) -> bool:
        """Slots for r's first `num_tokens` tokens (default: all); blocks they fill are
        hashed (with caching on), and we remember the new cached blocks' contents."""
        before = self.kv.num_cached_blocks(r.name)
        total = len(r.ids) if num_tokens is None else num_tokens
        if not self.kv.allocate_slots(r.name, r.ids, total, hits, self.hashes(r)):
            return False
        hashes, bs = self.kv.request_hashes(r.name), self.pool.block_size
        for i in range(max(before, len(hits)), len(hashes)):
            self.hash_info[hashes[i]] = (hashes[i - 1] if i else None,
                                         tuple(r.words[i * bs:(i + 1) * bs]))
        return True

    # --- decoding ----------------------------------------------------------------
    def gen(self) -> None:
        """One decode step, as vLLM's schedule() then update_from_output() do it."""
        if not self.running:
            self.say("gen: nothing is running")
            return
        self.steps += 1
        produced, new_blocks, events = [], [], []
        i = 0
        while i < len(self.running):  # oldest first; victims are popped off the end
            r = self.running[i]
            if r.has_pending:  # schedule(): a KV slot for last step's token
                held = len(self.kv.block_table(r.name))
                while not self.allocate(r, num_tokens=r.num_computed + 1):
                    victim = self.running.pop()  # the newest running request
                    events.append(self.preempt(victim, r))
                    if victim is r:
                        break
                if r.status != "running":
                    break  # it preempted itself: nobody after it is served this step
                r.num_computed += 1
                if len(self.kv.block_table(r.name)) > held:
                    new_blocks.append(f"{r.name} writes its last token into new block "
                                      f"{self.kv.block_table(r.name)[-1]}")
            # update_from_output(): the model samples a token; it has no slot yet.
            r.words.append(f"{r.name.lower()}{len(r.generated) + 1}")
            r.ids.append(token_id(r.words[-1]))
            produced.append(r.name)
            i += 1
        self.c["tokens_generated"] += len(produced)
        line = f"gen {self.steps}: " + (", ".join(produced) or "nobody") + \
            (" each sample a token" if len(produced) > 1 else " samples a token")
        self.say(line + "".join(f"; {x}" for x in new_blocks))
        for event in events:
            self.say(event)
        for r in [r for r in self.running if len(r.generated) == r.max_tokens]:
            n = len(self.kv.block_table(r.name))
            self.kv.free(r.name)  # its last token never gets a slot
            self.running.remove(r)
            r.status = "finished"
            r.num_computed = 0
            self.note("fin", [r.name, self.steps])
            self.say(f"{r.name} finished after {r.max_tokens} tokens and frees "
                     f"{_plural(n, 'block')}")

    def preempt(self, victim: _Request, requester: _Request) -> str:
        """Preemption by recompute, as vLLM's V1 scheduler does it; returns the log line."""
        n = len(self.kv.block_table(victim.name))
        self.kv.free(victim.name)
        victim.status = "preempted"
        victim.num_computed = 0
        self.note("pre", [requester.name, victim.name, self.steps])
        self.preempted.append((requester.name, victim.name))
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
        # cannot preempt itself (config.check: every request fits the usable pool alone), so
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
                    self.note("prims", f"+{head.name}")
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
            self.note("prims", "g")
            self.gen()
        self.say(f"run stopped after {limit} steps")

    def apply(self, action: str) -> None:
        start = len(self.log)
        self.last = {}
        if action == "gen":
            if not self.running:
                self.last["noop"] = True
            self.gen()
        elif action == "run":
            if not self.waiting and not self.running:
                self.last["noop"] = True
                self.say("run: every request has finished")
            self.run()
        elif action == "admit":
            if self.waiting:
                self.admit(self.waiting[0])
            else:
                self.last["noop"] = True
                self.say("admit: nothing is waiting")
        else:
            r = self.by_name[action.partition(":")[2]]
            if r in self.waiting:
                self.admit(r)
            else:
                self.last["noop"] = True
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
    pending: dict[int, list[str]] = {}
    needs_block: set[str] = set()
    for r in sim.running:  # running order = admission order
        table = kv.block_table(r.name)
        for i, b in enumerate(table):
            owners.setdefault(b, []).append(r.name)
            content.setdefault(b, r.words[i * bs:min((i + 1) * bs, r.num_computed)])
        if r.has_pending:  # its slot is at position num_computed
            i = r.num_computed // bs
            if i < len(table):
                pending.setdefault(table[i], []).append(r.name)
            else:
                needs_block.add(r.name)
    queue = pool.free_queue()
    position = {b: i for i, b in enumerate(queue)}
    blocks = []
    for b in range(pool.num_gpu_blocks):
        h = pool.block_hash(b)
        parent, words = sim.hash_info[h] if h is not None else (None, ())
        ref = pool.ref_count(b)
        state = "used" if ref else ("cached" if h is not None else "free")
        blocks.append({
            "id": b,
            "state": "null" if b == NULL_BLOCK else state,
            "owners": owners.get(b, []),
            "ref_count": ref,
            "hash": _short(h),
            "parent_hash": (_short(parent) or "root") if h is not None else None,
            "tokens": content[b] if ref else list(words),
            "pending": pending.get(b, []),
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
        "num_computed_tokens": r.num_computed,
        "pending_token": r.words[-1] if r.has_pending else None,
        "pending_needs_block": r.name in needs_block,
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
                 "null_block": NULL_BLOCK, "null_block_why": NULL_BLOCK_WHY,
                 "usable": pool.num_usable_blocks, "used": used, "cached": cached,
                 "free": pool.num_usable_blocks - used - cached,
                 "num_free_blocks": pool.num_free_blocks},
        "blocks": blocks,
        "free_queue": queue,
        "requests": requests,
        "waiting": [r.name for r in sim.waiting],
        "running": [r.name for r in sim.running],
        "log": log,
        "log_dropped": dropped,
        "last_action_log_start": max(0, sim.last_start - dropped),
        "last_action": sim.last,
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
    lines = [f"pool: {p['num_gpu_blocks']} blocks of {p['block_size']} tokens (block "
             f"{p['null_block']} is the null block, {p['usable']} usable), caching "
             f"{'on' if p['enable_prefix_caching'] else 'off'}; {p['used']} used, {p['cached']} free but "
             f"cached, {p['free']} free; gen steps: {v['step']}"]
    mark = {"used": "", "cached": "c", "free": ".", "null": "null"}
    cells = [f"{b['id']}:{'+'.join(b['owners']) or mark[b['state']]}"
             + (f"x{b['ref_count']}" if b["ref_count"] > 1 else "")
             + "".join(f" {n}?" for n in b["pending"]) for b in v["blocks"]]
    for i in range(0, len(cells), 8):
        lines.append("  " + " ".join(f"{x:<9}" for x in cells[i:i + 8]).rstrip())
    lines.append("free queue (head..tail): " + " ".join(map(str, v["free_queue"])))
    lines.append(f"{'request':<8} {'status':<10} {'gen':>7} {'kv':>4} {'prefill':>7} "
                 f"{'skipped':>7} {'preempt':>7}  block table, then the pending token")
    for r in v["requests"]:
        pend = r["pending_token"]
        lines.append(f"{r['name']:<8} {r['status']:<10} "
                     f"{len(r['generated']):>3}/{r['max_tokens']:<3} "
                     f"{r['num_computed_tokens']:>4} {r['prefilled']:>7} "
                     f"{r['skipped_by_cache']:>7} {r['preemptions']:>7}  "
                     + " ".join(map(str, r["block_table"]))
                     + (f"  [{pend} pending{', needs a new block' if r['pending_needs_block'] else ''}]"
                        if pend else ""))
    lines.append("counters: " + ", ".join(f"{k}={val}" for k, val in c.items()))
    lines.append("log (last 20 lines):")
    lines.extend("  " + line for line in v["log"][-20:])
    return "\n".join(lines)


def figures() -> dict:
    """The numbers page 3's "Try this" quotes ({{ paged_kv_cache.KEY }}), from the defaults."""
    on, off = PagedKVCacheConfig(), PagedKVCacheConfig(enable_prefix_caching=False)
    shared = run(on, ["admit", "admit"])
    b_on = shared["requests"][1]
    a_on = shared["requests"][0]
    common = [blk for blk in b_on["block_table"] if blk in a_on["block_table"]]
    copies = run(off, ["admit", "admit"])
    b_off = copies["requests"][1]

    # Caching off: alternate Admit next (while it is enabled) and Generate, until the
    # first preemption (the walk-through of step 3).
    actions: list[str] = []
    gens = 0
    while True:
        view = run(off, actions)
        if view["counters"]["preemptions"]:
            break
        if actions and actions[-1] != "gen":
            actions.append("gen")
            gens += 1
        elif view["next_actions"]["can_admit"] and view["next_actions"]["head_fits"]:
            actions.append("admit")
        else:
            actions.append("gen")
            gens += 1
        assert gens < 100, "the default pool never runs out"
    requester, victim_name = simulate(off, actions).preempted[0]
    victim = next(r for r in view["requests"] if r["name"] == victim_name)
    # The page's text tells a self-preemption: the newest running request is the one
    # whose pending token needs the block (vLLM's timing and null block, issue 17).
    assert requester == victim_name, "docs/paged-kv-cache.md step 3 describes a self-preemption"
    finished_at_preemption = [r["name"] for r in view["requests"] if r["status"] == "finished"]

    # vLLM's timing: A alone, Generate until its first new block. The gen that fills
    # its last block is followed by one whose pending token needs a new block, written
    # a gen later.
    timing: list[str] = ["admit"]
    while True:
        timing.append("gen")
        a = run(on, timing)["requests"][0]
        if a["pending_needs_block"]:
            full_gen = len(timing) - 1
            break
    a_next = run(on, timing + ["gen"])["requests"][0]

    done_on = run(on, ["run"])
    finished_on, finished_off = done_on["counters"], run(off, ["run"])["counters"]
    return {
        "block_size": on.block_size,
        "num_gpu_blocks": on.num_gpu_blocks,
        "usable_blocks": shared["pool"]["usable"],
        "null_block": shared["pool"]["null_block"],
        "a_prompt_tokens": len(a["prompt"]),
        "a_full_gen": full_gen,  # gens after which A's last block is full of written KV
        "a_full_tokens": a["num_computed_tokens"],
        "a_pending_word": a["pending_token"],
        "a_new_block_gen": full_gen + 1,
        "a_new_block": a_next["block_table"][-1],
        "shared_blocks": len(common),
        "shared_ref": max(blk["ref_count"] for blk in shared["blocks"] if blk["id"] in common),
        "skipped_tokens": b_on["skipped_by_cache"],
        "b_new_blocks": len(b_on["block_table"]) - len(common),
        "b_own_blocks": len(b_off["block_table"]),
        "extra_blocks": len(b_off["block_table"]) - (len(b_on["block_table"]) - len(common)),
        "preempt_gen_step": gens,
        "preempt_requester": requester,
        "preempt_victim": victim_name,
        "victim_kept_tokens": len(victim["generated"]),
        "finished_at_preemption": " and ".join(finished_at_preemption),
        "run_blocks_saved": finished_on["blocks_saved_by_caching"],
        "run_cached_blocks": done_on["pool"]["cached"],
        "run_allocations_on": finished_on["allocations"],
        "run_allocations_off": finished_off["allocations"],
        "run_prefill_on": finished_on["prefill_tokens"],
        "run_prefill_off": finished_off["prefill_tokens"],
    }


SIMULATION = Simulation(name="paged_kv_cache", config_cls=PagedKVCacheConfig, run=run, text=text,
                        takes_actions=True, figures=figures)
