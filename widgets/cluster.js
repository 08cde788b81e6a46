// Widget for page 8, scheduling across replicas (pysim/sims/cluster/, bridge name "cluster").
//
// pysim replays a window of the Mooncake trace through a router and several replicas of
// the lab's engine, colocated or split into prefill and decode; this file lays out its
// controls (from pysim's description, grouped, with only the fields the chosen layout
// and router use), draws the view model (widgets/cluster.charts.js holds the charts),
// and runs what a reader does beyond changing a setting:
// - the GPU sweep (PySim.sweepPanel, widgets/sweep.js): one "cluster_sweep" call per GPU
//   count (w.call with that simulation's name: it has no widget of its own, and the calls
//   carry this widget's data files), so the
//   page can say how far it got and stop between two calls (Cancel). Each call sends the
//   points so far (its actions) and gets back pysim's answer so far: its sentence, and
//   which count and layouts to run next (none once both layouts meet the target or the
//   counts run out);
// - pin and compare (w.pin): the pinned view model is kept and drawn beside the new one.
(function () {
  "use strict";
  const { h, fmt, tableBox, signatureExcept, sweepPanel } = window.PySim;
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
  // A share that is an upper bound, rounded down to 0.1% (so 89.98% is not "90.0%").
  const below = (x) => (Math.floor(x * 1000 + 1e-9) / 10).toFixed(1) + "%";
  // What a sweep's points depend on: every setting but the layout and counts it sets itself.
  const signature = (config) => signatureExcept(config, ["layout", "replicas", "prefill_replicas",
    "decode_replicas", ...OWN]);
  const replicaName = (r) => (r.role === "replica" ? `replica ${r.replica}` : `${r.role} ${r.replica}`);

  function mount(w) {
    const charts = window.PySim.clusterCharts;
    const ms = charts.ms;

    // ---------------------------------------------------------------- controls
    const controls = w.controls({
      skip: OWN, fieldsets: NAME, // pysim's ClusterConfig.GROUPS
      onChange: (n, v, delay) => { w.set({ [n]: v }, delay); showFields(w.draft.config); },
    });
    function showFields(config) {
      for (const [n, shown] of Object.entries(ONLY)) if (controls.has(n)) controls.get(n).root.hidden = !shown(config);
      controls.sets[THRESHOLDS_GROUP].hidden = config.router !== "cache_aware";
    }
    const optionLabel = (n, v) => { const f = w.field(n); return f && f.option_labels && f.option_labels[v] ? f.option_labels[v] : fmt(v); };

    // ---------------------------------------------------------------- results
    const note = h("p", { class: "cluster-note" });
    const status = h("p", { class: "cluster-status", "aria-live": "polite" });
    const sentence = h("p", { class: "cluster-sentence" });
    const cards = h("dl", { class: "pysim-cards cluster-cards" });
    const pin = w.pin({ labels: ["Pin this configuration", "Clear pin"], describe, note: "cluster-pin-note", changed: draw });
    const pinnedView = () => (pin.pinned ? pin.pinned.view : null);
    const chart = () => h("div", { class: "pysim-chart cluster-chart" });
    const [cdfTtft, cdfTpot, gRunning, gHits] = [chart(), chart(), chart(), chart()];
    const results = h("table", { class: "cluster-results" });
    const routing = h("p", { class: "cluster-routing" });
    const transfer = h("p", { class: "cluster-transfer" });
    const replicaTable = h("table", { class: "cluster-replicas" });
    const overTime = h("table", { class: "cluster-over-time" });
    const sweep = sweepPanel(w, sweepSpec());

    const section = (title, ...kids) => h("section", { class: "pysim-section cluster-section" }, h("h3", { class: "cluster-title" }, title), ...kids);
    const details = (summary, ...kids) => h("details", { class: "cluster-details" }, h("summary", {}, summary), ...kids);
    w.body.append(
      controls.root, w.messages, note, status,
      section("This run", sentence, cards, h("div", { class: "pysim-buttons" }, pin.buttons), pin.note,
        h("div", { class: "pysim-pair" }, cdfTtft, cdfTpot), tableBox(results, {}, "This run in numbers, scrolls sideways")),
      section("Replica by replica", routing, transfer, tableBox(replicaTable, {}, "Replicas, scrolls sideways"),
        h("div", { class: "pysim-pair" }, gRunning, gHits),
        details("The replicas over time, as a table", tableBox(overTime, {}, "Replicas over time, scrolls sideways"))),
      section("How many GPUs does this traffic need?",
        h("p", { class: "cluster-explain" }, w.view.sweep_sentence),
        sweep.buttons, sweep.progress, sweep.answer, sweep.chart, tableBox(sweep.table, {}, "The GPU sweep, scrolls sideways")),
    );

    // ---------------------------------------------------------------- drawing
    const drawn = []; // uPlot charts, rebuilt on every draw, a resize or a theme switch
    function drawCharts() {
      while (drawn.length) drawn.pop().destroy();
      drawn.push(...charts.latency([cdfTtft, cdfTpot], w.view, pinnedView()));
      const s = w.view.series;
      const names = w.view.replicas.map(replicaName);
      drawn.push(charts.replicas(gRunning, { title: "Requests running", t: s.t_s, yLabel: "num_requests_running",
        lines: s.replicas.map((r, i) => ({ label: names[i], values: r.num_requests_running })) }));
      drawn.push(charts.replicas(gHits, { title: "Prefix-cache hit rate so far", t: s.t_s, yLabel: "hits / queries", percent: true,
        lines: s.replicas.map((r, i) => ({ label: names[i], values: r.hit_rate.map((x) => x * 100) })) }));
      const swept = sweep.current;
      if (swept && swept.points.length) drawn.push(charts.sweep(sweep.chart, { points: swept.points, target: swept.points[0].target }));
      else sweep.chart.replaceChildren();
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

    function drawText() {
      const pinned = pinnedView();
      showFields(w.draft.config);
      note.textContent = w.view.note;
      sentence.textContent = w.view.sentence;
      pin.cards(cards, w.view.transfer_ms || (pinned && pinned.transfer_ms) ? [...FIGURES, TRANSFER] : FIGURES, NAME);

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
      pin.table(results, rows);

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

    // ---------------------------------------------------------------- the sweep
    // One cell per layout and count: what pysim measured, or why it did not run to the end.
    function cell(q, split) {
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
    }
    // Each call asks for the count pysim's answer so far names next (none once both layouts
    // meet the target or the counts run out), with the points so far as its actions.
    function sweepSpec() {
      const counts = () => w.view.sweep_gpus;
      const first = () => ({ gpus: counts()[0], sweep_layouts: "both", sweep_exact: counts().length === 1, index: 0 });
      return {
        prefix: NAME, button: "Find the fewest GPUs", answer: "cluster-answer", size: () => counts().length, unit: "counts", signature,
        config: (config) => { delete config.gpus; return config; },
        next(s) {
          const next = s.answer ? s.answer.next : first();
          if (!next) return null;
          const which = next.sweep_layouts === "both" ? "both layouts" : `${next.sweep_layouts} only`;
          return {
            progress: `Count ${next.index + 1} of ${counts().length}: simulating ${next.gpus} GPUs, ${which}…`,
            payload: { config: { ...s.config, gpus: next.gpus, sweep_layouts: next.sweep_layouts, sweep_exact: next.sweep_exact },
              actions: s.points },
            options: { simulation: SWEEP, timeoutMs: 120000 },
          };
        },
        took(s, { answer, ...point }, secs) {
          s.points.push(point);
          s.answer = answer;
          if (!answer.next) return null;
          drawCharts();
          return `Count ${s.points.length} of ${counts().length} done (${secs} s)…`;
        },
        done: (s, secs) => (s.points.length < counts().length
          ? `Stopped at ${s.points[s.points.length - 1].gpus} GPUs, count ${s.points.length} of ${counts().length}: both layouts meet the target (${secs} s).`
          : `Swept ${counts().length} of ${counts().length} counts in ${secs} s.`),
        sentence: (s) => (s.answer ? s.answer.sentence + (s.points[0].ceiling_sentence ? " " + s.points[0].ceiling_sentence : "") : ""),
        caption: () => w.view.sweep_caption,
        columns: ["GPUs", "Colocated", "Disaggregated"],
        row: (p) => [fmt(p.gpus), cell(p.colocated),
          cell(p.disaggregated, p.disaggregated ? `${p.disaggregated.prefill_replicas}P + ${p.disaggregated.decode_replicas}D` : "")],
        draw,
      };
    }

    function draw() {
      drawText();
      sweep.draw();
      drawCharts();
    }

    // ---------------------------------------------------------------- pin and compare
    // The pinned configuration in words, under the buttons.
    function describe(c) {
      const layout = c.layout === "colocated" ? `${c.replicas} colocated` : `${c.prefill_replicas} prefill + ${c.decode_replicas} decode over ${optionLabel("kv_link", c.kv_link)}`;
      return `${layout}, ${optionLabel("router", c.router)}, ${optionLabel("gpu", c.gpu)}, ${optionLabel("model", c.model)}, rate x${c.rate_scale}`;
    }

    // ---------------------------------------------------------------- start
    return {
      draw(view, state) {
        sweep.follow(state.config);
        draw();
      },
      // The charts are rebuilt at the new width, or in the new scheme's colours.
      redraw: drawCharts,
      busy(on) { status.textContent = on ? "Simulating the cluster…" : ""; },
      unmount() {
        sweep.unmount();
        while (drawn.length) drawn.pop().destroy();
      },
    };
  }

  // A cluster replays up to 16 engines: on a slow machine a 10-minute window at a high
  // rate takes longer than the kit's 20 s guard against a stuck worker.
  window.PySim.widget(NAME, { mount, unlinked: OWN, timeoutMs: 120000 });
})();
