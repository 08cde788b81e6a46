// One job: the link codec. A widget's state lives in the URL hash as
// "NAME.key=value&..." (live.js reads and writes it through these); a value reads as
// JSON where it can, actions as "admit,gen*5". Nothing here judges a value: pysim does.
(function () {
  "use strict";
  const MAX_VALUE_CHARS = 2000; // a value in the hash is cut here before pysim sees it
  const MAX_DECODED_ACTIONS = 10000; // "gen*99999999" stops here; pysim says how many it allows

  // The hash as [key, value] pairs ("#heading", without "=", is an ordinary anchor).
  function hashPairs() {
    const hash = location.hash.replace(/^#/, "");
    if (!hash.includes("=")) return [];
    const out = [];
    for (const part of hash.split("&")) {
      const eq = part.indexOf("=");
      if (eq < 0) continue;
      try {
        out.push([decodeURIComponent(part.slice(0, eq)), decodeURIComponent(part.slice(eq + 1))]);
      } catch (err) {} // a pair that does not decode is skipped
    }
    return out;
  }

  function readLink(prefix) {
    return hashPairs().filter(([k]) => k.startsWith(prefix + "."))
      .map(([k, v]) => [k.slice(prefix.length + 1), v.slice(0, MAX_VALUE_CHARS)]);
  }

  function writeLink(prefix, pairs) {
    const hash = location.hash.replace(/^#/, "");
    const keep = hash.includes("=") ? hash.split("&").filter((p) => p && !p.startsWith(prefix + ".")) : [];
    for (const [key, value] of pairs) {
      // "," and ":" stay readable (paged_kv_cache.actions=admit,admit:B,gen); both are safe in a hash.
      keep.push(`${prefix}.${encodeURIComponent(key)}=${encodeURIComponent(value).replace(/%2C/g, ",").replace(/%3A/g, ":")}`);
    }
    history.replaceState(history.state, "", "#" + keep.join("&"));
  }

  // A value as written in the link: JSON where it reads as JSON (30, true, [..]),
  // otherwise the text itself (H100, llama-3.1-8b). pysim judges the result.
  function parseValue(text) {
    try {
      const value = JSON.parse(text);
      return typeof value === "number" && !Number.isFinite(value) ? text : value;
    } catch (err) {
      return text;
    }
  }

  function encodeValue(value) {
    if (typeof value !== "string") return JSON.stringify(value);
    return parseValue(value) === value ? value : JSON.stringify(value);
  }

  // Actions joined by ","; a run of three or more equal ones is written "gen*5".
  function encodeActions(actions) {
    const parts = [];
    for (let i = 0; i < actions.length;) {
      let j = i;
      while (j < actions.length && actions[j] === actions[i]) j++;
      const text = typeof actions[i] === "string" ? actions[i] : JSON.stringify(actions[i]);
      if (j - i >= 3) parts.push(`${text}*${j - i}`);
      else for (let k = i; k < j; k++) parts.push(text);
      i = j;
    }
    return parts.join(",");
  }

  function decodeActions(text) {
    const out = [];
    for (const part of text ? text.split(",") : []) {
      const star = part.lastIndexOf("*");
      const count = star > 0 ? Number(part.slice(star + 1)) : NaN;
      const run = Number.isInteger(count) && count > 0 ? count : 1;
      const action = run > 1 || star > 0 && count === 1 ? part.slice(0, star) : part;
      for (let k = 0; k < run && out.length <= MAX_DECODED_ACTIONS; k++) out.push(action);
    }
    return out;
  }

  // Own keys one by one: a link's "__proto__" stays a key (pysim refuses it by name).
  function merged(...objects) {
    const out = {};
    for (const o of objects) {
      for (const [k, v] of Object.entries(o)) {
        Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
      }
    }
    return out;
  }

  Object.assign(window.PySim, { hashPairs, readLink, writeLink, parseValue, encodeValue, encodeActions,
                                decodeActions, merged });
})();
