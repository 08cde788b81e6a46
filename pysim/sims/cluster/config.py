"""The cluster's settings (ClusterConfig): what the reader set, and the window they name.

Every replica's scheduler knobs (pysim.engine.scheduler.SchedulerConfig), the trace
window (pysim.traffic.traces), the layout, the router with SGLang's cache-aware
thresholds (sglang-router 0.3.2, `src/policies/cache_aware.rs`), the KV link and the
targets; `block_size` is vLLM's default on the GPU (pysim.engine.vllm_defaults).
"""

from __future__ import annotations

from dataclasses import dataclass

from pysim import fields
from pysim.config import ConfigError, bounded, choice
from pysim.engine import vllm_defaults
from pysim.engine.scheduler import SchedulerConfig
from pysim.timing.catalog import GPUS
from pysim.timing.steptime import check_fits
from pysim.traffic import traces

# Every replica runs vLLM 0.34.0's defaults (pysim.engine.vllm_defaults); the scheduler's knobs
# start from `vllm serve`'s on the default GPU (an H100): pysim.engine.scheduler.SchedulerConfig.
MAX_GPUS = 16


ROUTERS = ("round_robin", "least_loaded", "cache_aware")


# SGLang router's cache-aware defaults (sgl-router, see the module docstring and docs/facts.toml).
CACHE_THRESHOLD = 0.3


BALANCE_ABS_THRESHOLD = 64


BALANCE_REL_THRESHOLD = 1.5


# KV links, bytes per second one way (sources in docs/facts.toml).
LINKS = {
    "nvlink": ("NVLink 4 (H100 SXM), 450 GB/s", 450e9),
    "pcie": ("PCIe 5.0 x16, 64 GB/s", 64e9),
    "infiniband": ("InfiniBand NDR, 400 Gb/s", 50e9),
}


@dataclass(frozen=True)
class ClusterConfig(SchedulerConfig):
    """The cluster's settings: every replica's scheduler knobs (inherited:
    pysim.engine.scheduler.SchedulerConfig), the traffic, the layout, the router and the targets."""

    trace: str = fields.trace("mooncake_conv", traces.PREFIX_TRACES)
    window_start_min: int = fields.window_start_min(10, 0, 55)
    window_minutes: int = fields.window_minutes(5, 1, 10)
    rate_scale: float = fields.rate_scale(1.0, 0.25, 4.0)
    layout: str = choice("colocated", ("colocated", "disaggregated"),
                         "every replica prefills and decodes, or prefill and decode on separate replicas",
                         label="Layout", option_labels={"colocated": "Colocated",
                                                        "disaggregated": "Disaggregated prefill/decode"})
    replicas: int = bounded(4, 1, MAX_GPUS, "replicas, one GPU each (colocated)",
                            label="Replicas", unit="GPUs")
    prefill_replicas: int = bounded(2, 1, MAX_GPUS - 1, "replicas that only prefill (disaggregated)",
                                    label="Prefill replicas", unit="GPUs")
    decode_replicas: int = bounded(2, 1, MAX_GPUS - 1, "replicas that only decode (disaggregated)",
                                   label="Decode replicas", unit="GPUs")
    router: str = choice("cache_aware", ROUTERS, "how the router picks a replica (the prefill "
                         "replica, when disaggregated)", label="Router",
                         option_labels={"round_robin": "Round robin", "least_loaded": "Least loaded",
                                        "cache_aware": "Cache-aware (SGLang)"})
    cache_threshold: float = bounded(CACHE_THRESHOLD, 0.0, 1.0, "cache_aware: the prefix match, as "
                                     "a share of the prompt, above which the matching replica wins",
                                     integer=False, label="cache_threshold", step=0.05)
    balance_abs_threshold: int = bounded(BALANCE_ABS_THRESHOLD, 0, 1024, "cache_aware: outstanding "
                                         "requests the busiest may have above the idlest before "
                                         "loads count as imbalanced", label="balance_abs_threshold",
                                         unit="requests", slider_max=256)
    balance_rel_threshold: float = bounded(BALANCE_REL_THRESHOLD, 1.0, 10.0, "cache_aware: and the "
                                           "ratio of busiest to idlest above which they do",
                                           integer=False, label="balance_rel_threshold", step=0.1)
    kv_link: str = choice("infiniband", tuple(LINKS), "the link a request's KV crosses from "
                          "prefill to decode replica", label="KV link",
                          option_labels={k: v[0] for k, v in LINKS.items()})
    gpu: str = fields.gpu("H100")  # every replica's (16-bit weights and KV)
    model: str = fields.model("llama-3.1-8b")
    slo_ttft_ms: float = fields.slo_ttft_ms(2000.0, 10, 60_000)
    slo_tpot_ms: float = fields.slo_tpot_ms(100.0, 1, 5_000)

    def check(self) -> None:
        if self.layout == "disaggregated" and self.prefill_replicas + self.decode_replicas > MAX_GPUS:
            raise ConfigError("decode_replicas", f"got {self.decode_replicas} with {self.prefill_replicas} "
                                                 f"prefill replicas; at most {MAX_GPUS} GPUs in all: "
                                                 f"expected a whole number from 1 to "
                                                 f"{MAX_GPUS - self.prefill_replicas}")
        SchedulerConfig.check(self)
        check_fits(self.gpu, self.model)
        traces.check_window(self.trace, self.window_start_min, self.window_minutes)


# The widget's fieldsets, in order (pysim.config.describe).
ClusterConfig.GROUPS = (
    ("Traffic", ("trace", "window_start_min", "window_minutes", "rate_scale")),
    ("Cluster", ("layout", "replicas", "prefill_replicas", "decode_replicas", "router", "kv_link")),
    ("Router thresholds (cache aware)", ("cache_threshold", "balance_abs_threshold", "balance_rel_threshold")),
    ("GPU and model", ("gpu", "model")),
    ("Scheduler (each replica)", SchedulerConfig.GROUP[1]),
    ("Targets (SLOs)", ("slo_ttft_ms", "slo_tpot_ms")),
)


def block_size(config: ClusterConfig) -> int:
    """Every replica's KV block, vLLM's default on the GPU (at vllm_defaults.LATEST)."""
    return vllm_defaults.defaults(GPUS[config.gpu]).block_size


def window(config: ClusterConfig) -> list:
    trace = traces.load(config.trace)
    return traces.requests(trace, config.window_start_min, config.window_minutes, config.rate_scale)
