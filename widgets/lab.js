// Widget for page 7, the serving lab (pysim/sims/lab/, bridge name "lab").
//
// pysim replays a window of a production trace (Azure or Mooncake), or a benchmark as `vllm bench serve` sends
// it, through the V1 engine and scores it as `vllm bench serve` would; this file lays out its controls (from pysim's description,
// grouped), draws the view model (widgets/lab.charts.js holds the charts), and runs the
// three things a reader does beyond changing a setting:
// - the capacity sweep: one "lab_sweep_point" call per rate (simulations of their own,
//   with this widget's data files; the rate's place is the call's action), so the page
//   can say how far it got and stop between two calls (Cancel), then one "lab_capacity"
//   call for the answer (the points are its actions);
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
  const { h, fmt, groupsOf, signatureExcept } = window.PySim;
  const NAME = "lab";
  const GAUGE_ROWS = 12; // rows of the gauges' table (one every NUM_BINS / 12 bins)

  const pct = (x) => (x * 100).toFixed(1) + "%";
  const rate = (x) => x.toFixed(2);
  // What a sweep's points depend on: every setting but the rate scale it sweeps itself.
  const signature = (config) => signatureExcept(config, ["rate_scale"]);

  function mount(w) {
    const charts = window.PySim.labCharts;
    const ms = charts.ms;
    let sweep = null;    // {signature, points, capacity, complete}
    let running = null;  // the sweep in progress: a token compared after every call
    const nPoints = w.view.sweep_rates.length; // one lab_sweep_point call each

    // ---------------------------------------------------------------- controls
    const controls = w.controls();
    const groups = h("div", { class: "lab-groups" });
    const sets = {};
    for (const [title, names] of groupsOf(w.fields)) { // pysim's LabConfig.GROUPS
      const set = h("fieldset", { class: "lab-group" }, h("legend", {}, title));
      for (const n of names) if (controls.has(n)) set.append(controls.get(n).root);
      groups.append(set);
      sets[title] = set;
    }
    // The trace's settings or the benchmark's: only those of the traffic chosen show.
    const showTraffic = (kind) => {
      sets["Production trace"].hidden = kind === "benchmark";
      sets["vllm bench serve"].hidden = kind !== "benchmark";
    };
    controls.root.prepend(groups); // a field no group names stays after them

    // ---------------------------------------------------------------- results
    const note = h("p", { class: "lab-note" });
    const status = h("p", { class: "lab-status", "aria-live": "polite" });
    const traffic = h("p", { class: "lab-traffic" });
    const machine = h("p", { class: "lab-machine" });
    const printed = h("pre", { class: "lab-printed", tabindex: "0", role: "region", "aria-label": "What vllm bench serve would print for this run, computed by pysim" });
    const printedBox = h("details", { class: "lab-details" }, h("summary", {}, "As vllm bench serve prints it"), printed);
    const cards = h("dl", { class: "lab-cards" });
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
      keep: () => ({ sweep: sweep && sweep.signature === signature(w.state.config) && sweep.complete ? sweep : null }),
    });
    const cdfTtft = h("div", { class: "lab-chart" });
    const cdfTpot = h("div", { class: "lab-chart" });
    const results = h("table", { class: "lab-results" });
    const gRequests = h("div", { class: "lab-chart" });
    const gKv = h("div", { class: "lab-chart" });
    const gTokens = h("div", { class: "lab-chart" });
    const gauges = h("table", { class: "lab-gauges" });

    // ---------------------------------------------------------------- sweep
    const sweepBtn = h("button", { type: "button", class: "md-button md-button--primary", onclick: runSweep, "data-needs-python": true }, "Run the capacity sweep");
    const cancelBtn = h("button", { type: "button", class: "md-button", onclick: () => stopSweep("Cancelled"), disabled: true }, "Cancel");
    const progress = h("p", { class: "lab-progress", "aria-live": "polite" });
    const capacityText = h("p", { class: "lab-capacity" });
    const sweepChart = h("div", { class: "lab-chart lab-sweep-chart" });
    const sweepTable = h("table", { class: "lab-sweep-table" });

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

    const section = (title, ...kids) => h("section", { class: "lab-section" }, h("h3", { class: "lab-title" }, title), ...kids);
    const scroll = (table) => h("div", { class: "lab-scroll", tabindex: "0", role: "region", "aria-label": "table, scrolls sideways" }, table);
    w.body.append(
      controls.root, w.messages, note, status,
      section("This run", traffic, machine, printedBox, cards, h("div", { class: "lab-buttons" }, bandBtn), bandText,
        h("div", { class: "lab-buttons" }, pin.buttons), pin.note,
        h("div", { class: "lab-pair" }, cdfTtft, cdfTpot), scroll(results)),
      section("Over time", h("div", { class: "lab-pair lab-three" }, gRequests, gKv, gTokens),
        h("details", { class: "lab-details" }, h("summary", {}, "The gauges as a table"), scroll(gauges))),
      section("Capacity: how much traffic one replica takes",
        h("div", { class: "lab-buttons" }, sweepBtn, cancelBtn), progress, capacityText, sweepChart, scroll(sweepTable)),
      section("Run it on a real server", commandsIntro, serveCmd.root, prepareCmd.root, prepareNote, benchCmd.root, copied,
        h("p", { class: "lab-commands-intro" }, "What the command cannot express:"), cannotList),
      section("Calibrate to your server",
        h("label", { for: benchId, class: "lab-bench-label" }, "vllm bench serve output (the printed summary, or --save-result JSON, with --save-detailed for a replay request by request; up to 4 runs)"),
        bench, benchError, h("div", { class: "lab-buttons" }, fitBtn, unfitBtn, sampleBtn), sampleNote, fitText, fitTables),
    );

    // ---------------------------------------------------------------- drawing
    const drawn = []; // uPlot charts, rebuilt on every draw, a resize or a theme switch
    function drawCharts() {
      while (drawn.length) drawn.pop().destroy();
      const pinned = pin.pinned ? [pin.pinned.view] : [];
      const both = (key) => [{ label: "this run", cdf: w.view[key].cdf },
        ...pinned.map((v) => ({ label: "pinned", cdf: v[key].cdf, pinned: true }))].filter((s) => s.cdf.length);
      const s = w.view.series;
      if (w.view.ttft_ms.cdf.length) drawn.push(charts.cdf(cdfTtft, { title: "TTFT", series: both("ttft_ms"), target: w.view.slo.ttft_ms }));
      if (w.view.tpot_ms.cdf.length) drawn.push(charts.cdf(cdfTpot, { title: "TPOT", series: both("tpot_ms"), target: w.view.slo.tpot_ms }));
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
      if (sweep) drawn.push(charts.sweep(sweepChart, { points: sweep.points, target: w.view.attainment_target, capacity: sweep.capacity,
        pinned: pin.pinned && pin.pinned.sweep ? pin.pinned.sweep.points : null }));
      else sweepChart.replaceChildren();
    }

    function card(label, value, pinnedValue) {
      return h("div", { class: "lab-card" }, h("dt", {}, label),
        h("dd", {}, value, pinnedValue == null ? "" : h("span", { class: "lab-card-pin" }, `pinned: ${pinnedValue}`)));
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
      const pinned = pin.pinned ? pin.pinned.view : null;
      note.textContent = w.view.note;
      traffic.textContent = w.view.traffic.sentence;
      machine.textContent = w.view.hardware.sentence;
      printedBox.hidden = !w.view.bench_summary;
      printed.textContent = w.view.bench_summary ? w.view.bench_summary.text : "";
      showTraffic(w.view.config.traffic);
      cards.replaceChildren(...FIGURES.map(([label, f]) => card(label, f(w.view), pinned ? f(pinned) : null)));

      const rows = [
        ["Requests completed", (v) => fmt(v.summary.completed)], ["Good (meet both targets)", (v) => fmt(v.summary.good)],
        ...FIGURES.filter(([label]) => !/^(TTFT|TPOT) p90$/.test(label)),
        ...["ttft_ms", "tpot_ms"].flatMap((key) => ["mean", "p50", "p90", "p99"].map((q) =>
          [`${key.slice(0, 4).toUpperCase()} ${q}`, (v) => ms(v[key][q])])),
        ["Duration", (v) => fmt(Math.round(v.summary.duration_s * 10) / 10) + " s"], ["Engine steps", (v) => fmt(v.summary.num_steps)],
      ];
      results.replaceChildren(
        h("caption", {}, pinned ? "This run and the pinned one" : "This run, in numbers"),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Metric"), h("th", { scope: "col" }, "This run"),
          pinned ? h("th", { scope: "col" }, "Pinned") : "")),
        h("tbody", {}, ...rows.map(([label, f]) => h("tr", {}, h("th", { scope: "row" }, label), h("td", {}, f(w.view)),
          pinned ? h("td", {}, f(pinned)) : ""))));

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
      const hostT = h("div", { class: "lab-chart" });
      const hostP = h("div", { class: "lab-chart" });
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
      return h("div", { class: "lab-per-request" }, h("p", {}, pr.sentence), h("div", { class: "lab-pair" }, hostT, hostP), scroll(dist),
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

    function drawSweep() {
      const fresh = sweep && sweep.signature === signature(w.state.config);
      if (sweep && !fresh && !running) {
        sweep = null;
        progress.textContent = "The settings changed since the last sweep: run it again for these.";
      }
      if (!sweep) { capacityText.textContent = ""; sweepTable.replaceChildren(); return; }
      capacityText.textContent = sweep.capacity ? sweep.capacity.sentence : ""; // pysim's words
      sweepTable.replaceChildren(h("caption", {}, "The sweep, rate by rate"),
        h("thead", {}, h("tr", {}, ...["Rate scale", "SLO attainment", "Goodput (req/s)", "Throughput (req/s)", "TTFT p90", "TPOT p90", "Preemptions"]
          .map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, ...sweep.points.map((p) => h("tr", {}, h("th", { scope: "row" }, "x" + p.rate_scale),
          h("td", {}, pct(p.slo_attainment)), h("td", {}, rate(p.request_goodput)), h("td", {}, rate(p.request_throughput)),
          h("td", {}, ms(p.ttft_p90_ms)), h("td", {}, ms(p.tpot_p90_ms)), h("td", {}, fmt(p.num_preemptions))))));
    }

    function draw() {
      drawText();
      drawFit();
      drawSweep();
      drawCharts();
      showSweepState();
    }
    function showSweepState() {
      w.root.dataset.sweep = running ? "running" : sweep ? (sweep.complete ? "done" : "partial") : "none";
    }

    // ---------------------------------------------------------------- pin and compare
    function describe(config) {
      const f = (n) => { const field = w.field(n); const v = config[n]; return field.option_labels && field.option_labels[v] ? field.option_labels[v] : fmt(v); };
      const what = config.traffic === "benchmark" ? `benchmark at ${config.request_rate ? f("request_rate") + " req/s" : "once"}` : `${f("trace")} trace`;
      return `${what} x${config.rate_scale}, ${f("gpu")}, ${f("model")}, max_num_seqs ${f("max_num_seqs")}, ` +
        `max_num_batched_tokens ${f("max_num_batched_tokens")}`;
    }

    // ---------------------------------------------------------------- the sweep
    function setSweeping(on) {
      if (!on) running = null;
      sweepBtn.disabled = on;
      cancelBtn.disabled = !on;
      showSweepState();
    }
    async function capacityOf(config, points) {
      const answer = await w.call({ config, actions: points }, { simulation: "lab_capacity" });
      return answer.ok ? answer.result.capacity : null;
    }
    async function runSweep() {
      const config = { ...w.state.config };
      const token = {};
      running = token;
      sweep = { config, signature: signature(config), points: [], capacity: null, complete: false };
      setSweeping(true);
      const started = performance.now();
      for (let i = 0; i < nPoints; i++) {
        progress.textContent = `Replaying the window at rate ${i + 1} of ${nPoints}…`;
        let answer;
        try {
          answer = await w.call({ config, actions: [{ sweep_index: i }] }, { simulation: "lab_sweep_point", timeoutMs: 60000 });
        } catch (err) {
          if (running === token) stopSweep("Python stopped answering; the sweep stopped");
          return;
        }
        if (running !== token) return; // cancelled, or a newer sweep started
        if (!answer.ok) { stopSweep(`pysim refused: ${answer.error.message}`); return; }
        sweep.points.push(answer.result.point);
        drawSweep();
      }
      sweep.complete = true;
      sweep.capacity = await capacityOf(config, sweep.points);
      if (running !== token) return;
      progress.textContent = `Swept ${nPoints} rates in ${((performance.now() - started) / 1000).toFixed(1)} s.`;
      setSweeping(false);
      draw();
    }
    async function stopSweep(why) {
      if (!running) return;
      const done = sweep;
      setSweeping(false);
      progress.textContent = `${why} after ${done.points.length} of ${nPoints} rates.`;
      if (done.points.length) done.capacity = await capacityOf(done.config, done.points).catch(() => null);
      if (sweep === done) draw();
    }

    // ---------------------------------------------------------------- start
    return {
      draw(view, state) {
        if (running && sweep && sweep.signature !== signature(state.config)) stopSweep("The settings changed; the sweep stopped");
        if (typeof state.config.bench_text === "string" && bench.value !== state.config.bench_text && document.activeElement !== bench) bench.value = state.config.bench_text;
        draw();
        if (bandOf !== JSON.stringify(state.config)) { bandOf = null; bandText.textContent = ""; bandBtn.disabled = !!w.offline; }
      },
      // The charts are rebuilt at the new width, or in the new scheme's colours.
      redraw: drawCharts,
      busy(on) { status.textContent = on ? "Replaying…" : ""; },
      unmount() {
        running = null;
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
