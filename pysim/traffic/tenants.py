"""Traffic with tenants and tiers, from real traces, for the scheduling-policy lab.

The Azure LLM inference trace 2023 (Patel et al., "Splitwise", ISCA 2024; CC BY 4.0,
credited in data/traces/README.md) holds two real services, conversation and coding:
here they are two tenants of one server, `conv` and `code`, each at a rate the reader
sets. The Mooncake FAST'25 trace of Kimi's conversation service (Qin et al.,
"Mooncake", FAST 2025; credited in data/traces/README.md) names each prompt's 512-token
blocks, so shared prefixes are known: it is one tenant, `mooncake_conv`, served with
prefix caching on (the prefix-aware policies' traffic).

A rate scale s keeps a tenant's burst pattern and fills the same window: the window's
`minutes` hold s x `minutes` of that tenant's trace, every gap divided by s (so s = 4
is four times the requests, as four such services would send). A flooding tenant is
one whose scale is multiplied by `flood_factor`.

Each request is in a tier, interactive or batch: a share `batch_share` of each tenant's
requests, drawn with pysim's own PRNG (pysim.prng) from the seed and the tenant, so
one seed gives one split and a tenant's split does not move when another's rate does.
Interactive requests carry vLLM priority 0, batch requests 1 (vLLM serves lower values
first).
"""

from __future__ import annotations

from dataclasses import dataclass

from pysim.config import ConfigError
from pysim.prng import SplitMix64
from pysim.traffic import traces

SERVICES = {"azure": ("conv", "code"), "mooncake": ("mooncake_conv",)}
TIERS = ("interactive", "batch")
PRIORITY = {"interactive": 0, "batch": 1}
CREDIT = {
    "azure": "Azure LLM inference trace 2023 (Patel et al., Splitwise, ISCA 2024), CC BY 4.0",
    "mooncake": "Mooncake FAST'25 traces (Qin et al., Mooncake, FAST 2025), Kimi's conversation service",
}


@dataclass(frozen=True)
class Traffic:
    """The window's requests, in arrival order (seconds from the window's start)."""

    arrivals: list
    prompt_tokens: list
    output_tokens: list
    tenants: list  # each request's tenant (a trace's name)
    tiers: list  # "interactive" or "batch"
    hash_ids: list | None  # per request, its prompt's block ids (Mooncake), else None
    scales: dict  # tenant -> the rate scale it was sent at
    services: str

    def __len__(self) -> int:
        return len(self.arrivals)

    def token_ids(self, i: int):
        return traces.PromptTokens(self.hash_ids[i], self.prompt_tokens[i]) if self.hash_ids else None


def check(services: str, start_min: float, minutes: float, scales: dict, fields_of: dict) -> None:
    """ConfigError naming the setting, if a tenant's window runs past its trace's end.
    `fields_of`: tenant -> the setting that sets its rate."""
    for tenant, scale in scales.items():
        try:
            span = traces.load(tenant).span_minutes
        except FileNotFoundError:
            raise ConfigError("services", f"the {tenant} trace is not loaded; in the page, the widget "
                                          "downloads it with its first call") from None
        need = start_min + minutes * scale
        if need > span:
            most = (span - start_min) / minutes
            raise ConfigError(fields_of[tenant],
                              f"the {tenant} tenant at x{scale:g} needs {minutes * scale:g} min of its "
                              f"trace from minute {start_min:g}, which has {span:.1f}; expected a rate "
                              f"giving at most x{most:.2f} here")


def mix(services: str, start_min: float, minutes: float, scales: dict, batch_share: float,
        seed: int) -> Traffic:
    """The tenants' requests merged in arrival order, each with its tier."""
    assert 0 <= batch_share <= 1 and set(scales) == set(SERVICES[services])
    rows = []
    for k, tenant in enumerate(SERVICES[services]):
        trace, scale = traces.load(tenant), scales[tenant]
        idx = traces.window(trace, start_min, minutes * scale)
        rng = SplitMix64(seed * 1_000_003 + k)
        t0 = start_min * 60_000
        for i in idx:
            tier = TIERS[rng.random() < batch_share]
            rows.append(((trace.offsets_ms[i] - t0) / 1000 / scale, k, i, tenant, tier,
                         trace.prompt_tokens[i], trace.output_tokens[i],
                         trace.hash_ids[i] if trace.hash_ids else None))
    rows.sort(key=lambda row: row[:3])
    assert all(0 <= row[0] <= minutes * 60 for row in rows)
    hashed = services == "mooncake"
    return Traffic([r[0] for r in rows], [r[5] for r in rows], [r[6] for r in rows],
                   [r[3] for r in rows], [r[4] for r in rows],
                   [r[7] for r in rows] if hashed else None, dict(scales), services)
