// Widget for page 7, the serving lab (pysim/sims/lab/, bridge name "lab").
//
// pysim replays a window of a production trace (Azure or Mooncake), or a benchmark as `vllm bench serve` sends
// it, through the V1 engine and scores it as `vllm bench serve` would; this file lays out its controls (from pysim's description,
// grouped), draws the view model (widgets/lab.charts.js holds the charts), and runs the
// three things a reader does beyond changing a setting:
// - the capacity sweep (PySim.sweepPanel, widgets/sweep.js): one "lab_sweep_point" call
//   per rate (simulations of their own, with this widget's data files; the rate's place
//   is the call's action), so the page can say how far it got and stop between two calls
//   (Cancel), then one "lab_capacity" call for the answer (the points are its actions);
// - pin and compare (w.pin): the pinned view model is kept and drawn beside the new one;
// - calibration: the pasted `vllm bench serve` text is the config field `bench_text`,
//   so pysim judges it like any setting, and its message appears under the text box;
//   pysim replays each pasted run, fits the step-time coefficients, and the table shows
//   measured and replayed figures side by side. A real run fills the box from a button
//   (pysim's `sample_bench`, a published summary); a --save-detailed JSON is replayed
//   request by request, and its TTFT and TPOT are drawn measured against replayed;
// - the commands: the settings as `vllm serve` and `vllm bench serve` (pysim's `commands`),
//   each with a copy button.
(function () {
  "use strict";
  const { h, fmt, tableBox, signatureExcept, sweepPanel } = window.PySim;
  const NAME = "lab";
  const GAUGE_ROWS = 12; // rows of the gauges' table (one every NUM_BINS / 12 bins)

  const pct = (x) => (x * 100).toFixed(1) + "%";
  const rate = (x) => x.toFixed(2);
  // What a sweep's points depend on: every setting but the rate scale it sweeps itself.
  const signature = (config) => signatureExcept(config, ["rate_scale"]);

  function mount(w) {
    const charts = window.PySim.labCharts;
    const ms = charts.ms;
    const nPoints = w.view.sweep_rates.length; // one lab_sweep_point call each

    // ---------------------------------------------------------------- controls
    const controls = w.controls({ fieldsets: "lab" }); // pysim's LabConfig.GROUPS
    // The trace's settings or the benchmark's: only those of the traffic chosen show.
    const showTraffic = (kind) => {
      controls.sets["Production trace"].hidden = kind === "benchmark";
      controls.sets["vllm bench serve"].hidden = kind !== "benchmark";
    };

    // ---------------------------------------------------------------- results
    const note = h("p", { class: "lab-note" });
    const status = h("p", { class: "lab-status", "aria-live": "polite" });
    const traffic = h("p", { class: "lab-traffic" });
    const machine = h("p", { class: "lab-machine" });
    const printed = h("pre", { class: "lab-printed", tabindex: "0", role: "region", "aria-label": "What vllm bench serve would print for this run, computed by pysim" });
    const printedBox = h("details", { class: "lab-details" }, h("summary", {}, "As vllm bench serve prints it"), printed);
    const cards = h("dl", { class: "pysim-cards lab-cards" });
    // The error band of this run's percentiles (pysim's lab_band: two more replays, so
    // asked for by the reader, not on every change).
    const bandText = h("p", { class: "lab-band", "aria-live": "polite" });
    let bandOf = null; // the settings the band line is for
    async function fetchBand() {
      const config = w.state.config;
      const key = JSON.stringify(config);
      bandOf = key;
      bandBtn.disabled = true;
      bandText.textContent = "Replaying at both ends of the error band…";
      const answer = await w.call({ config }, { simulation: "lab_band" }).catch(() => null);
      if (bandOf !== key) return; // the settings changed meanwhile
      bandText.textContent = answer && answer.ok ? answer.result.sentence : "The error band could not be computed.";
    }
    const bandBtn = h("button", { type: "button", class: "md-button", onclick: fetchBand, "data-needs-python": true },
      "Error band of these figures");
    // A pinned configuration keeps its capacity sweep too, if one was run for it.
    const pin = w.pin({
      labels: ["Pin this configuration", "Clear pin"], describe, note: "lab-pin-note", changed: draw,
      keep: () => ({ sweep: sweep.done() }),
    });
    const chart = () => h("div", { class: "pysim-chart lab-chart" });
    const [cdfTtft, cdfTpot, gRequests, gKv, gTokens] = [chart(), chart(), chart(), chart(), chart()];
    const results = h("table", { class: "lab-results" });
    const gauges = h("table", { class: "lab-gauges" });

    // ---------------------------------------------------------------- the sweep
    async function capacityOf(config, points) {
      const answer = await w.call({ config, actions: points }, { simulation: "lab_capacity" });
      return answer.ok ? answer.result.capacity : null;
    }
    const sweep = sweepPanel(w, {
      prefix: NAME, button: "Run the capacity sweep", answer: "lab-capacity", size: () => nPoints, unit: "rates", signature,
      next: (s) => (s.points.length < nPoints ? {
        progress: `Replaying the window at rate ${s.points.length + 1} of ${nPoints}…`,
        payload: { config: s.config, actions: [{ sweep_index: s.points.length }] },
        options: { simulation: "lab_sweep_point", timeoutMs: 60000 },
      } : null),
      took: (s, result) => { s.points.push(result.point); },
      finished: async (s) => { s.answer = await capacityOf(s.config, s.points); },
      done: (s, secs) => `Swept ${nPoints} rates in ${secs} s.`,
      stopped: async (s) => { if (s.points.length) s.answer = await capacityOf(s.config, s.points).catch(() => null); },
      sentence: (s) => (s.answer ? s.answer.sentence : ""), // s.answer: lab_capacity's capacity
      caption: () => "The sweep, rate by rate",
      columns: ["Rate scale", "SLO attainment", "Goodput (req/s)", "Throughput (req/s)", "TTFT p90", "TPOT p90", "Preemptions"],
      row: (p) => ["x" + p.rate_scale, pct(p.slo_attainment), rate(p.request_goodput), rate(p.request_throughput),
        ms(p.ttft_p90_ms), ms(p.tpot_p90_ms), fmt(p.num_preemptions)],
      draw,
    });

    // ---------------------------------------------------------------- calibration
    const benchId = w.id("lab-bench");
    const bench = h("textarea", { id: benchId, class: "lab-bench", rows: 8, spellcheck: "false",
      placeholder: "============ Serving Benchmark Result ============\nSuccessful requests:  ...", "aria-describedby": benchId + "-err" });
    const benchError = h("p", { class: "pysim-error", id: benchId + "-err", role: "alert" });
    w.errorSlot("bench_text", benchError);
    const fitBtn = h("button", { type: "button", class: "md-button md-button--primary", onclick: () => w.set({ bench_text: bench.value }), "data-needs-python": true }, "Fit to these runs");
    const unfitBtn = h("button", { type: "button", class: "md-button", onclick: () => { bench.value = ""; w.set({ bench_text: "" }); }, "data-needs-python": true }, "Clear the paste");
    const sampleBtn = h("button", { type: "button", class: "md-button", "data-needs-python": true,
      onclick: () => { bench.value = w.view.sample_bench.text; w.set({ bench_text: bench.value }); } }, "Paste a published run");
    const sampleNote = h("p", { class: "lab-sample-note" });
    const fitText = h("p", { class: "lab-fit", "aria-live": "polite" });
    const fitTables = h("div", { class: "lab-fit-tables" }); // one small table per pasted run

    // ---------------------------------------------------------------- the commands
    const copied = h("p", { class: "lab-copied", "aria-live": "polite" });
    const commandBlock = (label) => {
      const pre = h("pre", { class: "lab-command", tabindex: "0", role: "region", "aria-label": label });
      const btn = h("button", { type: "button", class: "md-button lab-copy", onclick: () => copy(pre.textContent, label) }, `Copy ${label}`);
      return { pre, btn, root: h("div", { class: "lab-command-box" }, h("div", { class: "lab-command-head" }, h("span", {}, label), btn), pre) };
    };
    const serveCmd = commandBlock("vllm serve");
    const benchCmd = commandBlock("vllm bench serve");
    const prepareCmd = commandBlock("window.jsonl");
    const commandsIntro = h("p", { class: "lab-commands-intro" });
    const cannotList = h("ul", { class: "lab-cannot" });
    const prepareNote = h("p", { class: "lab-commands-intro" });
    async function copy(text, label) {
      try { await navigator.clipboard.writeText(text); copied.textContent = `Copied the ${label} command.`; }
      catch (err) { copied.textContent = `The browser refused the clipboard: select the ${label} command and copy it.`; }
    }

    const section = (title, ...kids) => h("section", { class: "pysim-section lab-section" }, h("h3", { class: "lab-title" }, title), ...kids);
    const scroll = (table) => tableBox(table, { class: "lab-scroll" });
    const buttons = (...kids) => h("div", { class: "pysim-buttons" }, ...kids);
    w.body.append(
      controls.root, w.messages, note, status,
      section("This run", traffic, machine, printedBox, cards, buttons(bandBtn), bandText, buttons(...pin.buttons), pin.note,
        h("div", { class: "pysim-pair" }, cdfTtft, cdfTpot), scroll(results)),
      section("Over time", h("div", { class: "pysim-pair" }, gRequests, gKv, gTokens),
        h("details", { class: "lab-details" }, h("summary", {}, "The gauges as a table"), scroll(gauges))),
      section("Capacity: how much traffic one replica takes",
        sweep.buttons, sweep.progress, sweep.answer, sweep.chart, scroll(sweep.table)),
      section("Run it on a real server", commandsIntro, serveCmd.root, prepareCmd.root, prepareNote, benchCmd.root, copied,
        h("p", { class: "lab-commands-intro" }, "What the command cannot express:"), cannotList),
      section("Calibrate to your server",
        h("label", { for: benchId, class: "lab-bench-label" }, "vllm bench serve output (the printed summary, or --save-result JSON, with --save-detailed for a replay request by request; up to 4 runs)"),
        bench, benchError, buttons(fitBtn, unfitBtn, sampleBtn), sampleNote, fitText, fitTables),
    );

    // ---------------------------------------------------------------- drawing
    const drawn = []; // uPlot charts, rebuilt on every draw, a resize or a theme switch
    function drawCharts() {
      while (drawn.length) drawn.pop().destroy();
      drawn.push(...charts.latency([cdfTtft, cdfTpot], w.view, pin.pinned ? pin.pinned.view : null));
      const s = w.view.series;
      drawn.push(charts.timeline(gRequests, { title: "Requests", t: s.t_s, yLabel: "requests", lines: [
        { label: "num_requests_running", values: s.num_requests_running, color: "now" },
        { label: "num_requests_waiting", values: s.num_requests_waiting, color: "second", dash: [6, 3] }] }));
      drawn.push(charts.timeline(gKv, { title: "KV cache", t: s.t_s, yLabel: "kv_cache_usage_perc", percent: true,
        lines: [{ label: "kv_cache_usage_perc", values: s.kv_cache_usage_perc.map((x) => x * 100), color: "now" }],
        bars: { label: "Preemptions", values: s.num_preemptions, color: "bad" }, y2Label: "preemptions" }));
      drawn.push(charts.timeline(gTokens, { title: "Output tokens per second", t: s.t_s, yLabel: "tokens/s",
        lines: [{ label: "output tokens/s", values: s.output_tokens_per_s, color: "now" }] }));
      for (const { host, key, title, target, data } of perRequest) {
        drawn.push(charts.cdf(host, { title, target, series: [{ label: "measured", cdf: data.measured.cdf },
          { label: "replayed", cdf: data.replayed.cdf, pinned: true }] }));
      }
      const swept = sweep.current;
      if (swept) drawn.push(charts.sweep(sweep.chart, { points: swept.points, target: w.view.attainment_target, capacity: swept.answer,
        pinned: pin.pinned && pin.pinned.sweep ? pin.pinned.sweep.points : null }));
      else sweep.chart.replaceChildren();
    }

    const FIGURES = [ // [label, (view) => text]
      ["Goodput (req/s)", (v) => rate(v.summary.request_goodput)],
      ["SLO attainment", (v) => pct(v.summary.slo_attainment)],
      ["TTFT p90", (v) => ms(v.ttft_ms.p90)],
      ["TPOT p90", (v) => ms(v.tpot_ms.p90)],
      ["Request throughput (req/s)", (v) => rate(v.summary.request_throughput)],
      ["Output tokens/s", (v) => fmt(Math.round(v.summary.output_throughput))],
      ["Preemptions", (v) => fmt(v.summary.num_preemptions)],
      ["Prefix-cache hit rate", (v) => v.prefix_cache ? pct(v.prefix_cache.hit_rate) : "off"],
    ];

    function drawText() {
      note.textContent = w.view.note;
      traffic.textContent = w.view.traffic.sentence;
      machine.textContent = w.view.hardware.sentence;
      printedBox.hidden = !w.view.bench_summary;
      printed.textContent = w.view.bench_summary ? w.view.bench_summary.text : "";
      showTraffic(w.view.config.traffic);
      pin.cards(cards, FIGURES, NAME);

      const rows = [
        ["Requests completed", (v) => fmt(v.summary.completed)], ["Good (meet both targets)", (v) => fmt(v.summary.good)],
        ...FIGURES.filter(([label]) => !/^(TTFT|TPOT) p90$/.test(label)),
        ...["ttft_ms", "tpot_ms"].flatMap((key) => ["mean", "p50", "p90", "p99"].map((q) =>
          [`${key.slice(0, 4).toUpperCase()} ${q}`, (v) => ms(v[key][q])])),
        ["Duration", (v) => fmt(Math.round(v.summary.duration_s * 10) / 10) + " s"], ["Engine steps", (v) => fmt(v.summary.num_steps)],
      ];
      pin.table(results, rows);

      const s = w.view.series;
      const every = Math.max(1, Math.round(s.t_s.length / GAUGE_ROWS));
      const body = [];
      for (let i = every - 1; i < s.t_s.length; i += every) {
        const preempted = s.num_preemptions.slice(i - every + 1, i + 1).reduce((a, b) => a + b, 0);
        body.push(h("tr", {}, h("th", { scope: "row" }, fmt(Math.round(s.t_s[i])) + " s"),
          h("td", {}, fmt(s.num_requests_running[i])), h("td", {}, fmt(s.num_requests_waiting[i])),
          h("td", {}, (s.kv_cache_usage_perc[i] * 100).toFixed(1) + "%"), h("td", {}, fmt(Math.round(s.output_tokens_per_s[i]))),
          h("td", {}, fmt(preempted))));
      }
      gauges.replaceChildren(h("caption", {}, `Every ${fmt(Math.round(every * s.bin_s))} s: the gauges at that moment, the preemptions since the row before`),
        h("thead", {}, h("tr", {}, ...["time", "num_requests_running", "num_requests_waiting", "kv_cache_usage_perc",
          "output tokens/s", "preemptions"].map((x) => h("th", { scope: "col" }, x)))), h("tbody", {}, ...body));
    }

    const FIT_FIGURES = [["mean_ttft_ms", "Mean TTFT"], ["median_ttft_ms", "Median TTFT"], ["p99_ttft_ms", "P99 TTFT"],
      ["mean_tpot_ms", "Mean TPOT"], ["median_tpot_ms", "Median TPOT"], ["p99_tpot_ms", "P99 TPOT"],
      ["mean_itl_ms", "Mean ITL"], ["output_throughput", "Output tok/s"]];
    function drawCommands() {
      const c = w.view.commands;
      commandsIntro.textContent = `The lab's settings as vLLM ${c.vllm_version}'s commands: start the server, then send it the traffic.`;
      serveCmd.pre.textContent = c.serve;
      benchCmd.pre.textContent = c.bench;
      prepareCmd.root.hidden = !c.prepare;
      prepareCmd.pre.textContent = c.prepare || "";
      prepareNote.hidden = !c.prepare_note;
      prepareNote.textContent = c.prepare_note || "";
      cannotList.replaceChildren(...c.cannot.map((x) => h("li", {}, x)));
      const sb = w.view.sample_bench;
      sampleNote.replaceChildren(`${sb.credit} `, h("a", { href: sb.url }, "The issue"), ".");
    }

    // A detailed paste: measured against replayed, request by request (charts drawn in drawCharts).
    let perRequest = [];
    const QUANTS = [["mean", "Mean"], ["p50", "Median"], ["p90", "P90"], ["p99", "P99"]];
    function drawPerRequest(r, i) {
      const pr = r.per_request;
      const [hostT, hostP] = [chart(), chart()];
      perRequest.push({ host: hostT, title: `Run ${i + 1}: TTFT per request`, target: w.view.slo.ttft_ms, data: pr.ttft_ms },
        ...(pr.tpot_ms.count ? [{ host: hostP, title: `Run ${i + 1}: TPOT per request`, target: w.view.slo.tpot_ms, data: pr.tpot_ms }] : []));
      const dist = h("table", { class: "lab-per-request-dist" }, h("caption", {}, "The two distributions as a table"),
        h("thead", {}, h("tr", {}, ...["", "TTFT measured", "TTFT replayed", "TPOT measured", "TPOT replayed"].map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, ...QUANTS.map(([q, label]) => h("tr", {}, h("th", { scope: "row" }, label),
          ...["ttft_ms", "tpot_ms"].flatMap((k) => [h("td", {}, pr[k].count ? ms(pr[k].measured[q]) : "–"), h("td", {}, pr[k].count ? ms(pr[k].replayed[q]) : "–")])))));
      const misses = (rows, key, caption) => h("table", { class: "lab-misses" }, h("caption", {}, caption),
        h("thead", {}, h("tr", {}, ...["Request", "Prompt tokens", "Answer tokens", "Sent at", `${key} measured`, `${key} replayed`].map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, ...rows.map((m) => h("tr", {}, h("th", { scope: "row" }, "#" + fmt(m.index)), h("td", {}, fmt(m.num_prompt_tokens)),
          h("td", {}, fmt(m.max_tokens)), h("td", {}, m.sent_s.toFixed(2) + " s"),
          h("td", {}, ms(key === "TTFT" ? m.ttft_ms : m.tpot_ms)), h("td", {}, ms(key === "TTFT" ? m.replayed_ttft_ms : m.replayed_tpot_ms))))));
      return h("div", { class: "lab-per-request" }, h("p", {}, pr.sentence), h("div", { class: "pysim-pair" }, hostT, hostP), scroll(dist),
        scroll(misses(pr.largest_ttft_misses, "TTFT", "The requests whose TTFT the replay misses most")),
        pr.largest_tpot_misses.length ? scroll(misses(pr.largest_tpot_misses, "TPOT", "The requests whose TPOT the replay misses most")) : "");
    }

    function drawFit() {
      drawCommands();
      perRequest = [];
      const cal = w.view.calibration;
      if (!cal) {
        fitText.textContent = w.view.config.bench_text ? "" : "Nothing pasted: the lab runs with the GPU's default coefficients, fitted to published runs (see \"How far to trust the lab\" below).";
        fitTables.replaceChildren();
        return;
      }
      fitText.textContent = cal.sentence; // pysim's words
      const err = (x) => (x > 0 ? "+" : "") + (x * 100).toFixed(1) + "%";
      const show = (k, x) => (k === "output_throughput" ? fmt(Math.round(x)) : ms(x));
      // A run: what was sent (the command, and what had to be assumed), then each figure
      // the paste holds, measured against replayed with the fitted coefficients.
      fitTables.replaceChildren(...cal.runs.map((r, i) => h("div", { class: "lab-fit-run" }, scroll(h("table", { class: "lab-fit-table" },
        h("caption", {}, `Run ${i + 1} (${r.source}), replayed as it was sent: `, h("code", {}, r.benchmark.command),
          r.notes.length ? h("span", { class: "lab-fit-notes" }, ` Assumed: ${r.notes.join("; ")}.`) : ""),
        h("thead", {}, h("tr", {}, ...["Figure", "Measured", "Replayed", "Error"].map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, ...FIT_FIGURES.filter(([k]) => k in r.measured).map(([k, label]) => h("tr", {},
          h("th", { scope: "row" }, label), h("td", {}, show(k, r.measured[k])), h("td", {}, show(k, r.replayed[k])),
          h("td", {}, err(r.error[k]))))))),
        ...r.server_notes.map((x) => h("p", { class: "lab-fit-notes" }, x)),
        r.per_request ? drawPerRequest(r, i) : "")));
    }

    function draw() {
      drawText();
      drawFit();
      sweep.draw();
      drawCharts();
    }

    // ---------------------------------------------------------------- pin and compare
    function describe(config) {
      const f = (n) => { const field = w.field(n); const v = config[n]; return field.option_labels && field.option_labels[v] ? field.option_labels[v] : fmt(v); };
      const what = config.traffic === "benchmark" ? `benchmark at ${config.request_rate ? f("request_rate") + " req/s" : "once"}` : `${f("trace")} trace`;
      return `${what} x${config.rate_scale}, ${f("gpu")}, ${f("model")}, max_num_seqs ${f("max_num_seqs")}, ` +
        `max_num_batched_tokens ${f("max_num_batched_tokens")}`;
    }

    // ---------------------------------------------------------------- start
    return {
      draw(view, state) {
        sweep.follow(state.config);
        if (typeof state.config.bench_text === "string" && bench.value !== state.config.bench_text && document.activeElement !== bench) bench.value = state.config.bench_text;
        draw();
        if (bandOf !== JSON.stringify(state.config)) { bandOf = null; bandText.textContent = ""; bandBtn.disabled = !!w.offline; }
      },
      // The charts are rebuilt at the new width, or in the new scheme's colours.
      redraw: drawCharts,
      busy(on) { status.textContent = on ? "Replaying…" : ""; },
      unmount() {
        sweep.unmount();
        while (drawn.length) drawn.pop().destroy();
      },
    };
  }

  window.PySim.widget(NAME, {
    mount, unlinked: ["bench_text"],
    // A key older links may hold: the lab's clock had one efficiency for every GPU.
    retired: { efficiency: "the lab's clock now uses coefficients fitted to published runs for each GPU, or to the runs you paste" },
  });
})();
