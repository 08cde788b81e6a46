// Widget for page 8, scheduling across replicas (pysim/sims/cluster/, bridge name "cluster").
//
// pysim replays a window of the Mooncake trace through a router and several replicas of
// the lab's engine, colocated or split into prefill and decode; this file lays out its
// controls (from pysim's description, grouped, with only the fields the chosen layout
// and router use), draws the view model (widgets/cluster.charts.js holds the charts),
// and runs what a reader does beyond changing a setting:
// - the GPU sweep: one "cluster_sweep" call per GPU count (w.call with that simulation's
//   name: it has no widget of its own, and the calls carry this widget's data files), so the
//   page can say how far it got and stop between two calls (Cancel). Each call sends the
//   points so far (its actions) and gets back pysim's answer so far: its sentence, and
//   which count and layouts to run next (none once both layouts meet the target or the
//   counts run out);
// - pin and compare (w.pin): the pinned view model is kept and drawn beside the new one.
(function () {
  "use strict";
  const { h, fmt, tableBox, groupsOf, signatureExcept } = window.PySim;
  const NAME = "cluster";
  const SWEEP = "cluster_sweep";
  const OWN = ["gpus"]; // a link from before the sweep moved to cluster_sweep may hold it: ignored
  const THRESHOLDS_GROUP = "Router thresholds (cache aware)"; // shown for that router only
  // Only these fields show for each choice; the rest of the config always does.
  const ONLY = {
    replicas: (c) => c.layout === "colocated",
    prefill_replicas: (c) => c.layout === "disaggregated",
    decode_replicas: (c) => c.layout === "disaggregated",
    kv_link: (c) => c.layout === "disaggregated",
  };
  const TABLE_ROWS = 12; // rows of the over-time table

  const pct = (x) => (x * 100).toFixed(1) + "%";
  // What a sweep's points depend on: every setting but the layout and counts it sets itself.
  const signature = (config) => signatureExcept(config, ["layout", "replicas", "prefill_replicas",
    "decode_replicas", ...OWN]);
  const replicaName = (r) => (r.role === "replica" ? `replica ${r.replica}` : `${r.role} ${r.replica}`);

  function mount(w) {
    const charts = window.PySim.clusterCharts;
    const ms = charts.ms;
    let sweep = null;   // {config, signature, points, complete, why}
    let running = null; // the sweep in progress: a token compared after every call

    // ---------------------------------------------------------------- controls
    const controls = w.controls({
      skip: OWN,
      onChange: (n, v, delay) => { w.set({ [n]: v }, delay); showFields(w.draft.config); },
    });
    const groups = h("div", { class: "cluster-groups" });
    const sets = {};
    for (const [title, names] of groupsOf(w.fields)) { // pysim's ClusterConfig.GROUPS
      const set = h("fieldset", { class: "cluster-group" }, h("legend", {}, title));
      for (const n of names) if (controls.has(n)) set.append(controls.get(n).root);
      groups.append(set);
      sets[title] = set;
    }
    controls.root.prepend(groups); // a field no group names stays after them
    function showFields(config) {
      for (const [n, shown] of Object.entries(ONLY)) if (controls.has(n)) controls.get(n).root.hidden = !shown(config);
      sets[THRESHOLDS_GROUP].hidden = config.router !== "cache_aware";
    }
    const optionLabel = (n, v) => { const f = w.field(n); return f && f.option_labels && f.option_labels[v] ? f.option_labels[v] : fmt(v); };

    // ---------------------------------------------------------------- results
    const note = h("p", { class: "cluster-note" });
    const status = h("p", { class: "cluster-status", "aria-live": "polite" });
    const sentence = h("p", { class: "cluster-sentence" });
    const cards = h("dl", { class: "cluster-cards" });
    const pin = w.pin({ labels: ["Pin this configuration", "Clear pin"], describe, note: "cluster-pin-note", changed: draw });
    const pinnedView = () => (pin.pinned ? pin.pinned.view : null);
    const cdfTtft = h("div", { class: "cluster-chart" });
    const cdfTpot = h("div", { class: "cluster-chart" });
    const results = h("table", { class: "cluster-results" });
    const routing = h("p", { class: "cluster-routing" });
    const transfer = h("p", { class: "cluster-transfer" });
    const replicaTable = h("table", { class: "cluster-replicas" });
    const gRunning = h("div", { class: "cluster-chart" });
    const gHits = h("div", { class: "cluster-chart" });
    const overTime = h("table", { class: "cluster-over-time" });

    // ---------------------------------------------------------------- sweep
    const sweepBtn = h("button", { type: "button", class: "md-button md-button--primary", onclick: runSweep, "data-needs-python": true }, "Find the fewest GPUs");
    const cancelBtn = h("button", { type: "button", class: "md-button", onclick: () => stopSweep("Cancelled"), disabled: true }, "Cancel");
    const progress = h("p", { class: "cluster-progress", "aria-live": "polite" });
    const answerText = h("p", { class: "cluster-answer", "aria-live": "polite" });
    const sweepChart = h("div", { class: "cluster-chart cluster-sweep-chart" });
    const sweepTable = h("table", { class: "cluster-sweep-table" });

    const section = (title, ...kids) => h("section", { class: "cluster-section" }, h("h3", { class: "cluster-title" }, title), ...kids);
    const details = (summary, ...kids) => h("details", { class: "cluster-details" }, h("summary", {}, summary), ...kids);
    w.body.append(
      controls.root, w.messages, note, status,
      section("This run", sentence, cards, h("div", { class: "cluster-buttons" }, pin.buttons), pin.note,
        h("div", { class: "cluster-pair" }, cdfTtft, cdfTpot), tableBox(results, {}, "This run in numbers, scrolls sideways")),
      section("Replica by replica", routing, transfer, tableBox(replicaTable, {}, "Replicas, scrolls sideways"),
        h("div", { class: "cluster-pair" }, gRunning, gHits),
        details("The replicas over time, as a table", tableBox(overTime, {}, "Replicas over time, scrolls sideways"))),
      section("How many GPUs does this traffic need?",
        h("p", { class: "cluster-explain" }, w.view.sweep_sentence),
        h("div", { class: "cluster-buttons" }, sweepBtn, cancelBtn), progress, answerText, sweepChart,
        tableBox(sweepTable, {}, "The GPU sweep, scrolls sideways")),
    );

    // ---------------------------------------------------------------- drawing
    const drawn = []; // uPlot charts, rebuilt on every draw, a resize or a theme switch
    function drawCharts() {
      while (drawn.length) drawn.pop().destroy();
      const pinned = pinnedView();
      const both = (key) => [{ label: "this run", cdf: w.view[key].cdf },
        ...(pinned ? [{ label: "pinned", cdf: pinned[key].cdf, pinned: true }] : [])].filter((s) => s.cdf.length);
      if (w.view.ttft_ms.cdf.length) drawn.push(charts.cdf(cdfTtft, { title: "TTFT", series: both("ttft_ms"), target: w.view.slo.ttft_ms }));
      else cdfTtft.replaceChildren();
      if (w.view.tpot_ms.cdf.length) drawn.push(charts.cdf(cdfTpot, { title: "TPOT", series: both("tpot_ms"), target: w.view.slo.tpot_ms }));
      else cdfTpot.replaceChildren();
      const s = w.view.series;
      const names = w.view.replicas.map(replicaName);
      drawn.push(charts.replicas(gRunning, { title: "Requests running", t: s.t_s, yLabel: "num_requests_running",
        lines: s.replicas.map((r, i) => ({ label: names[i], values: r.num_requests_running })) }));
      drawn.push(charts.replicas(gHits, { title: "Prefix-cache hit rate so far", t: s.t_s, yLabel: "hits / queries", percent: true,
        lines: s.replicas.map((r, i) => ({ label: names[i], values: r.hit_rate.map((x) => x * 100) })) }));
      if (sweep && sweep.points.length) drawn.push(charts.sweep(sweepChart, { points: sweep.points, target: sweep.points[0].target }));
      else sweepChart.replaceChildren();
    }

    function imbalanceText(v) {
      const entries = Object.entries(v.imbalance);
      if (entries.length === 1) return "x" + entries[0][1].toFixed(2);
      return entries.map(([role, x]) => `${role} x${x.toFixed(2)}`).join(", ");
    }
    const FIGURES = [ // [label, (view) => text], the cards
      ["Goodput per GPU (req/s)", (v) => v.summary.goodput_per_gpu.toFixed(3)],
      ["SLO attainment", (v) => pct(v.summary.slo_attainment)],
      ["Prefix-cache hit rate", (v) => pct(v.prefix_cache.hit_rate)],
      ["TTFT p90", (v) => ms(v.ttft_ms.p90)],
      ["TPOT p90", (v) => ms(v.tpot_ms.p90)],
      ["Load imbalance (busiest / mean)", imbalanceText],
      ["GPUs", (v) => fmt(v.gpus)],
    ];
    const TRANSFER = ["KV transfer p50", (v) => (v.transfer_ms ? ms(v.transfer_ms.p50) : "none")];

    function card(label, value, pinnedValue) {
      return h("div", { class: "cluster-card" }, h("dt", {}, label),
        h("dd", {}, value, pinnedValue == null ? "" : h("span", { class: "cluster-card-pin" }, `pinned: ${pinnedValue}`)));
    }

    function drawText() {
      const pinned = pinnedView();
      showFields(w.draft.config);
      note.textContent = w.view.note;
      sentence.textContent = w.view.sentence;
      const figures = w.view.transfer_ms || (pinned && pinned.transfer_ms) ? [...FIGURES, TRANSFER] : FIGURES;
      cards.replaceChildren(...figures.map(([label, f]) => card(label, f(w.view), pinned ? f(pinned) : null)));

      const rows = [
        ["Requests completed", (v) => fmt(v.summary.completed)], ["Good (meet both targets)", (v) => fmt(v.summary.good)],
        ...FIGURES.filter(([label]) => !/^(TTFT|TPOT) p90$/.test(label)),
        ["Goodput (req/s)", (v) => v.summary.request_goodput.toFixed(2)],
        ["Request throughput (req/s)", (v) => v.summary.request_throughput.toFixed(2)],
        ["Output tokens/s", (v) => fmt(Math.round(v.summary.output_throughput))],
        ["Prefix-cache hits / queries (tokens)", (v) => `${fmt(v.prefix_cache.hits)} / ${fmt(v.prefix_cache.queries)}`],
        ...["ttft_ms", "tpot_ms"].flatMap((key) => ["mean", "p50", "p90", "p99"].map((q) =>
          [`${key.slice(0, 4).toUpperCase()} ${q}`, (v) => ms(v[key][q])])),
        ...(w.view.transfer_ms || (pinned && pinned.transfer_ms) ? [TRANSFER] : []),
        ["Duration", (v) => fmt(Math.round(v.summary.duration_s * 10) / 10) + " s"],
      ];
      results.replaceChildren(
        h("caption", {}, pinned ? "This run and the pinned one" : "This run, in numbers"),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Metric"), h("th", { scope: "col" }, "This run"),
          pinned ? h("th", { scope: "col" }, "Pinned") : "")),
        h("tbody", {}, ...rows.map(([label, f]) => h("tr", {}, h("th", { scope: "row" }, label), h("td", {}, f(w.view)),
          pinned ? h("td", {}, f(pinned)) : ""))));

      const rr = w.view.router_reasons;
      routing.textContent = rr ? `The cache-aware router sent ${fmt(rr.prefix)} requests to the replica with the longest prefix match, ` +
        `${fmt(rr.low_match)} to the least-loaded replica because no match covered more than ${w.view.config.cache_threshold} of the prompt, ` +
        `and ${fmt(rr.balance)} to the least-loaded replica because the loads were out of balance.`
        : `The ${w.view.config.router.replace("_", " ")} router does not look at prefixes.`;
      const t = w.view.transfer_ms;
      transfer.hidden = !t;
      transfer.textContent = t ? `Moving each request's KV from its prefill to its decode replica over ${optionLabel("kv_link", w.view.config.kv_link)} ` +
        `took ${ms(t.p50)} at the median, ${ms(t.p90)} at p90 and ${ms(t.p99)} at p99 (waiting for the link included).` : "";

      replicaTable.replaceChildren(h("caption", {}, "Each replica: what it served and its busiest moments"),
        h("thead", {}, h("tr", {}, ...["Replica", "Role", "Requests", "Hit rate", "Preemptions", "Peak running", "Peak waiting", "Peak KV use"]
          .map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, ...w.view.replicas.map((r) => h("tr", {}, h("th", { scope: "row" }, fmt(r.replica)), h("td", {}, r.role),
          h("td", {}, fmt(r.requests)), h("td", {}, pct(r.hit_rate)), h("td", {}, fmt(r.num_preemptions)),
          h("td", {}, fmt(r.peak_running)), h("td", {}, fmt(r.peak_waiting)), h("td", {}, pct(r.peak_kv_cache_usage_perc))))));

      const s = w.view.series;
      const every = Math.max(1, Math.round(s.t_s.length / TABLE_ROWS));
      const names = w.view.replicas.map(replicaName);
      const body = [];
      for (let i = every - 1; i < s.t_s.length; i += every) {
        body.push(h("tr", {}, h("th", { scope: "row" }, fmt(Math.round(s.t_s[i])) + " s"),
          ...s.replicas.flatMap((r) => [h("td", {}, fmt(r.num_requests_running[i])), h("td", {}, pct(r.hit_rate[i]))])));
      }
      overTime.replaceChildren(h("caption", {}, "Requests running, and the hit rate so far, of each replica at that moment"),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "time"),
          ...names.flatMap((n) => [h("th", { scope: "col" }, `${n} running`), h("th", { scope: "col" }, `${n} hit rate`)]))),
        h("tbody", {}, ...body));
    }

    // ---------------------------------------------------------------- the sweep's text
    function drawSweep() {
      const fresh = sweep && sweep.signature === signature(w.state.config);
      if (sweep && !fresh && !running) {
        sweep = null;
        progress.textContent = "The settings changed since the last sweep: run it again for these.";
      }
      if (!sweep) { answerText.textContent = ""; sweepTable.replaceChildren(); return; }
      answerText.textContent = sweep.answer ? sweep.answer.sentence + (sweep.points[0].ceiling_sentence ? " " + sweep.points[0].ceiling_sentence : "") : "";
      // One cell per layout and count: what pysim measured, or why it did not run to the end.
      const below = (x) => (Math.floor(x * 1000 + 1e-9) / 10).toFixed(1) + "%";
      const cell = (q, split) => {
        if (!q) return h("td", {}, "not run: met at fewer GPUs");
        const head = split ? `${split}: ` : "";
        if (q.stopped) {
          const s = q.stopped;
          return h("td", { class: "cluster-stopped" }, `${head}misses: at most ${below(q.attainment_at_most)} ` +
            (s.replayed ? `(${fmt(s.missed)} surely late ${fmt(Math.round(s.at_s))} s into the ${fmt(Math.round(s.window_s))} s window; stopped there)`
              : `(${fmt(s.missed)} requests too long for any GPU count; not replayed)`));
        }
        return h("td", {}, `${head}${pct(q.slo_attainment)}${q.meets ? " (meets)" : ""}, ` +
          `${q.goodput_per_gpu.toFixed(3)} good req/s per GPU, TTFT p90 ${ms(q.ttft_p90_ms)}`);
      };
      sweepTable.replaceChildren(h("caption", {}, w.view.sweep_caption),
        h("thead", {}, h("tr", {}, ...["GPUs", "Colocated", "Disaggregated"].map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, ...sweep.points.map((p) => h("tr", {}, h("th", { scope: "row" }, fmt(p.gpus)),
          cell(p.colocated), cell(p.disaggregated, p.disaggregated ? `${p.disaggregated.prefill_replicas}P + ${p.disaggregated.decode_replicas}D` : "")))));
    }

    function draw() {
      drawText();
      drawSweep();
      drawCharts();
      showSweepState();
    }
    function showSweepState() {
      w.root.dataset.sweep = running ? "running" : sweep ? (sweep.complete ? "done" : "partial") : "none";
    }

    // ---------------------------------------------------------------- pin and compare
    // The pinned configuration in words, under the buttons.
    function describe(c) {
      const layout = c.layout === "colocated" ? `${c.replicas} colocated` : `${c.prefill_replicas} prefill + ${c.decode_replicas} decode over ${optionLabel("kv_link", c.kv_link)}`;
      return `${layout}, ${optionLabel("router", c.router)}, ${optionLabel("gpu", c.gpu)}, ${optionLabel("model", c.model)}, rate x${c.rate_scale}`;
    }

    // ---------------------------------------------------------------- the sweep
    function setSweeping(on) {
      if (!on) running = null;
      sweepBtn.disabled = on;
      cancelBtn.disabled = !on;
      showSweepState();
    }
    async function runSweep() {
      const config = { ...w.state.config };
      delete config.gpus;
      const token = {};
      running = token;
      sweep = { config, signature: signature(config), points: [], answer: null, complete: false };
      setSweeping(true);
      answerText.textContent = "";
      const started = performance.now();
      const counts = w.view.sweep_gpus;
      const n = counts.length;
      let next = { gpus: counts[0], sweep_layouts: "both", sweep_exact: n === 1, index: 0 };
      while (next) {
        const which = next.sweep_layouts === "both" ? "both layouts" : `${next.sweep_layouts} only`;
        progress.textContent = `Count ${next.index + 1} of ${n}: simulating ${next.gpus} GPUs, ${which}…`;
        let answer;
        try {
          answer = await w.call({ config: { ...config, gpus: next.gpus, sweep_layouts: next.sweep_layouts,
            sweep_exact: next.sweep_exact }, actions: sweep.points }, { simulation: SWEEP, timeoutMs: 120000 });
        } catch (err) {
          if (running === token) stopSweep("Python stopped answering; the sweep stopped");
          return;
        }
        if (running !== token) return; // cancelled, or a newer sweep started
        if (!answer.ok) { stopSweep(`pysim refused: ${answer.error.message}; the sweep stopped`); return; }
        const { answer: said, ...point } = answer.result;
        sweep.points.push(point);
        sweep.answer = said;
        next = said.next;
        const secs = ((performance.now() - started) / 1000).toFixed(1);
        if (!next) {
          sweep.complete = true;
          progress.textContent = sweep.points.length < n
            ? `Stopped at ${point.gpus} GPUs, count ${sweep.points.length} of ${n}: both layouts meet the target (${secs} s).`
            : `Swept ${n} of ${n} counts in ${secs} s.`;
          setSweeping(false);
          draw();
          return;
        }
        progress.textContent = `Count ${sweep.points.length} of ${n} done (${secs} s)…`;
        drawSweep();
        drawCharts();
      }
    }
    function stopSweep(why) {
      if (!running) return;
      setSweeping(false);
      progress.textContent = `${why} after ${sweep.points.length} of ${w.view.sweep_gpus.length} counts.`;
      draw();
    }

    // ---------------------------------------------------------------- start
    return {
      draw(view, state) {
        if (running && sweep && sweep.signature !== signature(state.config)) stopSweep("The settings changed; the sweep stopped");
        draw();
      },
      // The charts are rebuilt at the new width, or in the new scheme's colours.
      redraw: drawCharts,
      busy(on) { status.textContent = on ? "Simulating the cluster…" : ""; },
      unmount() {
        running = null;
        while (drawn.length) drawn.pop().destroy();
      },
    };
  }

  // A cluster replays up to 16 engines: on a slow machine a 10-minute window at a high
  // rate takes longer than the kit's 20 s guard against a stuck worker.
  window.PySim.widget(NAME, { mount, unlinked: OWN, timeoutMs: 120000 });
})();
