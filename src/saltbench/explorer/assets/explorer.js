/* saltbench explorer: plain JavaScript, no dependencies, works from file:// (docs/explorer.md).
 *
 * Data files (data/*.js) call SALT_EXPLORER_LOADED(kind, id, data); they are loaded by <script> elements
 * on demand (fetch() of local files is refused by browsers). State lives in the URL hash
 * (#m=model&t=task&s=style&c=flavour.function&g=granularity&r=sample&u=unit&v=view&sc=scope), so every view
 * has a link. Without a model in the hash the page opens on the manifest's "open" cell: the eligible (model,
 * style) with the highest answered share, on its task with the most answered responses.
 *
 * Direction: a confidence function whose lower values mean more confident (entropies, perplexity; its
 * column's "sign" is -1) is shown with its raw values and the label "lower = more confident" wherever a
 * value appears; ranks, shades and lists use the oriented value sign * value (higher = more confident).
 *
 * Shading: a unit's confidence percentile among the scored units of its (model, style, task) at the same
 * granularity, by the oriented value (higher = more confident; average rank for ties):
 * p = (rank - 1) / (n - 1), 0.5 when n = 1. Background alpha = 0.12 + 0.78 * p.
 */
"use strict";

const STATUSES = ["correct", "incorrect", "redundant", "selective", "missing"];
const GRANULARITIES = ["atom", "line", "generation"];
const loaded = { index: {}, chunk: {}, interventions: {}, lists: {} };
const waiting = {};
let manifest = null;
let state = {};
const listState = { sortKey: "r", sortDir: 1 };

window.SALT_EXPLORER_LOADED = function (kind, id, data) {
  loaded[kind][id] = data;
  const key = kind + ":" + id;
  if (waiting[key]) { waiting[key].forEach((resolve) => resolve(data)); delete waiting[key]; }
  if (kind === "index") { start(data); }
};

function load(kind, id, file) {
  if (loaded[kind][id] !== undefined) { return Promise.resolve(loaded[kind][id]); }
  return new Promise((resolve, reject) => {
    const key = kind + ":" + id;
    const first = !waiting[key];
    (waiting[key] = waiting[key] || []).push(resolve);
    if (!first) { return; }
    const tag = document.createElement("script");
    tag.src = file;
    tag.onerror = () => reject(new Error("cannot load " + file));
    document.head.appendChild(tag);
  });
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined) { continue; }
    if (key === "class") { node.className = value; }
    else if (key === "style") { node.setAttribute("style", value); }
    else if (key.startsWith("on")) { node.addEventListener(key.slice(2), value); }
    else { node.setAttribute(key, value); }
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) { continue; }
    node.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
  return node;
}

/* a number to `digits` decimals; null (absent, e.g. an import without log-probabilities) as "—",
   the data files' "-inf" / "inf" (JSON has no infinity) as ∓∞ (docs/explorer.md §2) */
function fmt(value, digits) {
  if (value === "-inf" || value === "inf") { return value === "inf" ? "∞" : "−∞"; }
  return value === null || value === undefined || Number.isNaN(value) ? "—" : Number(value).toFixed(digits === undefined ? 3 : digits);
}

const FAMILY_LABELS = { single_pass: "single pass", samples: "samples", second_pass: "second pass" };

function readHash() {
  const out = {};
  for (const part of location.hash.replace(/^#/, "").split("&")) {
    if (!part) { continue; }
    const at = part.indexOf("=");
    if (at > 0) { out[decodeURIComponent(part.slice(0, at))] = decodeURIComponent(part.slice(at + 1)); }
  }
  return out;
}

function hashOf(values) {
  return "#" + Object.entries(values).filter(([, v]) => v !== undefined && v !== null && v !== "")
    .map(([k, v]) => encodeURIComponent(k) + "=" + encodeURIComponent(v)).join("&");
}

function setHash(changes) {
  const next = Object.assign({}, state, changes);
  const text = hashOf(next);
  if (text === location.hash) { render(); } else { location.hash = text; }
}

function fillSelect(id, values, labels) {
  const select = document.getElementById(id);
  select.replaceChildren(...values.map((v, i) => el("option", { value: v }, labels ? labels[i] : v)));
}

function directionOf(column) {
  const meta = columnMeta(column);
  return meta && meta.sign < 0 ? "lower = more confident" : "higher = more confident";
}

function eligibilityOf(model, style) {
  return (manifest.eligibility || []).find((e) => e.model === model && e.style === style);
}

function modelLabel(model, style) {
  const entry = eligibilityOf(model, style);
  if (!entry || entry.eligible) { return model; }
  return model + " — excluded: answered " + fmt(entry.share) + " (" + style + ")";
}

function chunkOf(model, style, task) {
  return manifest.chunks.find((c) => c.model === model && c.style === style && c.task === task);
}

function start(data) {
  manifest = data;
  fillSelect("model", manifest.models);
  fillSelect("task", manifest.tasks);
  fillSelect("style", manifest.styles);
  const functions = [...new Set(manifest.columns.map((c) => c.function))];
  const flavours = [...new Set(manifest.columns.map((c) => c.flavour))];
  const signOf = (f) => (manifest.columns.find((c) => c.function === f) || {}).sign;
  const familyOf = (f) => (manifest.columns.find((c) => c.function === f) || {}).family || "single_pass";
  fillSelect("function", functions, functions.map((f) => f + (signOf(f) < 0 ? " (lower = more confident)" : "") +
    (familyOf(f) !== "single_pass" ? " · " + (FAMILY_LABELS[familyOf(f)] || familyOf(f)) : "")));
  fillSelect("flavour", flavours);
  fillSelect("granularity", GRANULARITIES);
  const statusFilter = document.getElementById("filter-status");
  for (const status of ["answered", "truncated", "no_fence", "error"]) {
    statusFilter.appendChild(el("option", { value: status }, status));
    document.getElementById("list-response-status").appendChild(el("option", { value: status }, status));
  }
  document.getElementById("list-scope").addEventListener("change", (e) => setHash({ sc: e.target.value }));
  for (const node of document.querySelectorAll("#list-filters input, #list-response-status")) {
    node.addEventListener("change", () => renderLists());
  }
  for (const id of ["model", "task", "style", "granularity"]) {
    document.getElementById(id).addEventListener("change", (e) => setHash({ [id[0]]: e.target.value, r: "", u: "" }));
  }
  for (const id of ["function", "flavour"]) {
    document.getElementById(id).addEventListener("change", () => {
      /* the picked pair's column; else, as the source of a draws / second-pass / trace estimator differs from
         the flavours, the picked function in the source it has, or the picked source's first column */
      const fn = document.getElementById("function").value, fl = document.getElementById("flavour").value;
      const pick = (test) => (manifest.columns.find(test) || {}).name;
      const column = pick((c) => c.name === fl + "." + fn) ||
        (id === "flavour" ? pick((c) => c.flavour === fl) : pick((c) => c.function === fn));
      setHash({ c: column });
    });
  }
  for (const id of ["filter-status", "filter-pmin", "filter-pmax", "filter-text"]) {
    for (const event of ["input", "change"]) { document.getElementById(id).addEventListener(event, () => renderList()); }
  }
  for (const th of document.querySelectorAll("#responses th")) {
    th.addEventListener("click", () => {
      const key = th.dataset.key;
      listState.sortDir = listState.sortKey === key ? -listState.sortDir : 1;
      listState.sortKey = key;
      renderList();
    });
  }
  for (const tab of document.querySelectorAll("#tabs a")) {
    tab.addEventListener("click", (e) => { e.preventDefault(); setHash({ v: tab.dataset.view }); });
  }
  renderLegend();
  const meta = manifest.meta || {};
  document.getElementById("footer").textContent = "Built by saltbench " + (meta.version || "") +
    (meta.git_commit ? " (" + String(meta.git_commit).slice(0, 10) + ")" : "") + " · " + manifest.chunks.length +
    " cells · hover tokens show up to " + manifest.top_k + " alternatives; an alternative the model never chose in this run is shown by its token id. " +
    "Estimates from fewer than " + manifest.min_units + " correct or incorrect units are marked unreliable in the figures (analysis.min_units); " +
    "a model and style answering fewer than " + fmt(manifest.eligible_answered_share, 2) + " of its prompts enters no estimate (analysis.eligible_answered_share, docs/metrics.md §10).";
  window.addEventListener("hashchange", render);
  render();
}

function renderLegend() {
  const legend = document.getElementById("legend");
  legend.replaceChildren("Unit status:",
    ...STATUSES.map((s) => el("span", {}, el("span", { class: "swatch", style: "background: rgb(var(--" + s + "))" }), s)),
    " · shade: the unit's confidence percentile within its model, style and task (pale = least confident, full = most)."
  );
}

function resolveState() {
  const hash = readHash();
  const column = manifest.columns.some((c) => c.name === hash.c) ? hash.c : manifest.default_column;
  const open = manifest.open || {};
  const pick = (values, wanted, fallback) => values.includes(wanted) ? wanted : (values.includes(fallback) ? fallback : values[0]);
  state = {
    m: pick(manifest.models, hash.m, open.m),
    t: pick(manifest.tasks, hash.t, open.t),
    s: pick(manifest.styles, hash.s, open.s),
    c: column,
    g: GRANULARITIES.includes(hash.g) ? hash.g : "atom",
    r: hash.r || "",
    u: hash.u || "",
    v: hash.v === "lists" ? "lists" : "responses",
    sc: hash.sc === "task" ? "task" : "cell",
  };
  const models = document.getElementById("model");
  fillSelect("model", manifest.models, manifest.models.map((m) => modelLabel(m, state.s)));
  for (const option of models.options) { option.classList.toggle("excluded", option.textContent !== option.value); }
  document.getElementById("list-scope").value = state.sc;
  document.getElementById("model").value = state.m;
  document.getElementById("task").value = state.t;
  document.getElementById("style").value = state.s;
  document.getElementById("flavour").value = state.c.split(".")[0];
  document.getElementById("function").value = state.c.split(".").slice(1).join(".");
  document.getElementById("granularity").value = state.g;
  for (const tab of document.querySelectorAll("#tabs a")) { tab.classList.toggle("active", tab.dataset.view === state.v); }
}

let current = null; // {meta, data, rows}

async function render() {
  resolveState();
  document.getElementById("responses-view").hidden = state.v !== "responses";
  document.getElementById("lists-view").hidden = state.v !== "lists";
  const meta = chunkOf(state.m, state.s, state.t);
  renderSummary(meta);
  if (state.v === "lists") {
    if (meta) {
      load("chunk", meta.id, meta.file).then((data) => renderSummary(meta, data),
        (err) => document.getElementById("cell-summary").appendChild(el("p", { class: "error" }, String(err))));
    }
    renderLists();
    return;
  }
  const pane = document.getElementById("response-pane");
  if (!meta) {
    current = null;
    document.querySelector("#responses tbody").replaceChildren();
    document.getElementById("count").textContent = "No responses of " + state.m + " on " + state.t + " (" + state.s + ").";
    pane.replaceChildren(el("p", { class: "hint" }, "Nothing to show."));
    return;
  }
  let data;
  try { data = await load("chunk", meta.id, meta.file); } catch (err) {
    pane.replaceChildren(el("p", { class: "error" }, String(err)));
    return;
  }
  current = { meta: meta, data: data, rows: responseRows(data) };
  renderSummary(meta, data);
  renderList();
  const r = data.responses.sample_id.indexOf(state.r);
  if (r >= 0) { renderResponse(r); } else { pane.replaceChildren(el("p", { class: "hint" }, "Pick a response on the left.")); }
}

/* ---- confidence: values, orientation, percentiles ---- */

function columnMeta(name) { return manifest.columns.find((c) => c.name === name); }

function unitsOf(data, granularity) { return data.units[granularity] || { r: [], i: [], s: [], a: [], b: [], u: [], f: [], n: [], c: {} }; }

function percentiles(data, granularity, column) {
  /* average-rank percentile of each scored unit's oriented value (null where undefined) */
  const units = unitsOf(data, granularity);
  const values = units.c[column] || [];
  const sign = columnMeta(column).sign;
  const scored = [];
  values.forEach((v, k) => { if (v !== null && units.s[k] !== "missing") { scored.push([sign * v, k]); } });
  scored.sort((x, y) => x[0] - y[0]);
  const out = new Array(values.length).fill(null);
  const n = scored.length;
  let lo = 0;
  while (lo < n) {
    let hi = lo;
    while (hi + 1 < n && scored[hi + 1][0] === scored[lo][0]) { hi += 1; }
    const rank = (lo + hi) / 2; // zero-based average rank
    for (let k = lo; k <= hi; k += 1) { out[scored[k][1]] = n > 1 ? rank / (n - 1) : 0.5; }
    lo = hi + 1;
  }
  return out;
}

function alphaOf(p) { return p === null ? 0.12 : 0.12 + 0.78 * p; }

function responseRows(data) {
  const units = unitsOf(data, state.g);
  const values = units.c[state.c] || [];
  const n = data.responses.sample_id.length;
  const sums = new Array(n).fill(0), counts = new Array(n).fill(0), total = new Array(n).fill(0), wrong = new Array(n).fill(0);
  const missing = new Array(n).fill(0), rows = new Array(n).fill(0);
  units.r.forEach((r, k) => {
    rows[r] += 1;
    if (units.s[k] === "missing") { missing[r] += 1; return; }
    total[r] += 1;
    if (units.s[k] !== "correct") { wrong[r] += 1; }
    if (values[k] !== null && values[k] !== undefined) { sums[r] += values[k]; counts[r] += 1; }
  });
  /* a response without units at this granularity (no answer: no_fence, cut off, error) misses every
     reference unit of its sample (docs/explorer.md §1) */
  const reference = ((data.responses.reference_units || {})[state.g]) || [];
  for (let r = 0; r < n; r += 1) { if (rows[r] === 0 && reference[r]) { missing[r] = reference[r]; } }
  const precision = (data.responses.precision || {})[state.g] || [];
  return data.responses.sample_id.map((sample, r) => ({
    r: r, sample_id: sample, variant: data.responses.variant[r] || "", answer_status: data.responses.answer_status[r],
    precision: precision[r] === undefined ? null : precision[r], confidence: counts[r] ? sums[r] / counts[r] : null,
    n_units: total[r], n_wrong: wrong[r], n_missing: missing[r],
  }));
}

/* ---- the response list ---- */

function filteredRows() {
  const status = document.getElementById("filter-status").value;
  const pmin = document.getElementById("filter-pmin").value;
  const pmax = document.getElementById("filter-pmax").value;
  const text = document.getElementById("filter-text").value.trim().toLowerCase();
  return current.rows.filter((row) =>
    (!status || row.answer_status === status) &&
    (pmin === "" || (row.precision !== null && row.precision >= Number(pmin))) &&
    (pmax === "" || (row.precision !== null && row.precision <= Number(pmax))) &&
    (!text || row.sample_id.toLowerCase().includes(text) || row.variant.toLowerCase().includes(text)));
}

function renderList() {
  if (!current) { return; }
  const key = listState.sortKey, dir = listState.sortDir;
  const rows = filteredRows().sort((x, y) => {
    const a = x[key], b = y[key];
    if (a === b) { return x.r - y.r; }
    if (a === null) { return 1; }
    if (b === null) { return -1; }
    return (a < b ? -1 : 1) * dir;
  });
  const lower = columnMeta(state.c).sign < 0;
  const header = document.querySelector("#responses th[data-key=confidence]");
  header.textContent = lower ? "mean conf. ↓" : "mean conf.";
  header.title = "mean " + state.c + " over the response's units (" + directionOf(state.c) + ")";
  for (const th of document.querySelectorAll("#responses th")) {
    th.classList.toggle("sorted-asc", th.dataset.key === key && dir > 0);
    th.classList.toggle("sorted-desc", th.dataset.key === key && dir < 0);
  }
  document.getElementById("count").textContent = rows.length + " of " + current.rows.length + " responses · " +
    state.g + " units · mean " + state.c + " (" + directionOf(state.c) + ")";
  document.querySelector("#responses tbody").replaceChildren(...rows.map((row) => el("tr", {
    class: "response" + (row.sample_id === state.r ? " selected" : ""), "data-r": row.r, "data-sample": row.sample_id,
    "data-status": row.answer_status, onclick: () => setHash({ r: row.sample_id, u: "" }),
  }, el("td", { class: "num" }, row.r), el("td", { class: "mono" }, row.sample_id.replace(/^.*-(\d+)$/, "…$1"), row.variant ? " " + row.variant : ""),
  el("td", {}, el("span", { class: "status-tag" }, row.answer_status)), el("td", { class: "num" }, fmt(row.precision)),
  el("td", { class: "num" }, fmt(row.confidence)), el("td", { class: "num" }, row.n_units), el("td", { class: "num" }, row.n_wrong),
  el("td", { class: "num" }, row.n_missing))));
}

/* ---- one response ---- */

function tokenRange(tokens, textLength, a, b) {
  /* indices of the answer tokens overlapping the characters [a, b) */
  const out = [];
  if (!tokens) { return out; }
  for (let k = 0; k < tokens.o.length; k += 1) {
    const end = k + 1 < tokens.o.length ? tokens.o[k + 1] : textLength;
    if (tokens.o[k] < b && end > a) { out.push(k); }
  }
  return out;
}

function visible(text) { return JSON.stringify(text).slice(1, -1); }

function showTip(event, node) {
  const tip = document.getElementById("tip");
  tip.replaceChildren(node);
  tip.hidden = false;
  const x = Math.min(event.clientX + 14, window.innerWidth - 540);
  const y = Math.min(event.clientY + 14, window.innerHeight - tip.offsetHeight - 8);
  tip.style.left = Math.max(4, x) + "px";
  tip.style.top = Math.max(4, y) + "px";
}

function hideTip() { document.getElementById("tip").hidden = true; }

function tipFor(data, r, k, pct) {
  const units = unitsOf(data, state.g);
  const value = (units.c[state.c] || [])[k];
  const tokens = data.tokens[r];
  const text = data.responses.text[r];
  const rows = tokenRange(tokens, text.length, units.a[k], units.b[k]).map((t) => el("tr", {},
    el("td", {}, el("span", { class: "tok" }, visible(tokens.t[t]))),
    el("td", { class: "num" }, fmt(tokens.lp[t])),
    el("td", {}, ...tokens.k[t].map((id, j) => el("span", { class: id === tokens.i[t] ? "chosen" : "" },
      el("span", { class: "tok" }, data.vocab[id] !== undefined ? visible(data.vocab[id]) : "#" + id), " ", fmt(tokens.kl[t][j], 2), "  ")))));
  return el("div", {},
    el("div", {}, el("b", {}, units.s[k]), " · unit " + units.i[k] + " · " + state.c + " " + fmt(value, 4) + " (" + directionOf(state.c) + ")" +
      " · percentile " + fmt(pct, 2) + " · " + units.n[k] + " tokens"),
    el("div", {}, "reference: ", el("span", { class: "tok" }, units.f[k] === null ? "(none)" : visible(units.f[k]))),
    estimatorLines(units, k),
    rows.length ? el("table", {}, el("tr", {}, el("th", {}, "token"), el("th", {}, "log p"), el("th", {}, "top-" + manifest.top_k + " alternatives (log p; bold: chosen)")), rows)
      : el("div", { class: "hint" }, "no token detail for this unit"));
}

function estimatorLines(units, k) {
  /* every estimator's value at the unit, oriented (sign * value: higher = more confident), by family */
  const families = [...new Set(manifest.columns.map((c) => c.family || "single_pass"))];
  const lines = families.map((family) => {
    const values = manifest.columns.filter((c) => (c.family || "single_pass") === family)
      .filter((c) => units.c[c.name] && units.c[c.name][k] !== null && units.c[c.name][k] !== undefined)
      .map((c) => c.name + " " + fmt(c.sign * units.c[c.name][k], 3));
    return values.length ? el("div", { class: "family", "data-family": family }, el("b", {}, (FAMILY_LABELS[family] || family) + ": "), values.join(" · ")) : null;
  }).filter((line) => line !== null);
  return el("div", { class: "estimators" }, el("div", { class: "hint" }, "every estimator, oriented (higher = more confident):"), ...lines);
}

function unitSpan(data, r, k, pct, content) {
  const units = unitsOf(data, state.g);
  const status = units.s[k];
  const attrs = {
    class: "unit st-" + status + (String(units.i[k]) === state.u ? " focus" : ""), "data-i": units.i[k], "data-status": status,
    "data-k": k, "data-pct": pct === null ? "" : pct.toFixed(4), style: "--a: " + alphaOf(pct).toFixed(4),
    onmousemove: (e) => showTip(e, tipFor(data, r, k, pct)), onmouseleave: hideTip,
  };
  return el("span", attrs, content);
}

function answerNodes(data, r, pcts) {
  /* the fenced answer with each unit of the granularity as a coloured span; missing units as chips */
  const text = data.responses.text[r];
  const start = data.responses.answer_start[r], end = data.responses.answer_end[r];
  const units = unitsOf(data, state.g);
  const mine = [];
  units.r.forEach((rr, k) => { if (rr === r) { mine.push(k); } });
  mine.sort((x, y) => units.i[x] - units.i[y]);
  const nodes = [];
  let cursor = start;
  const chips = [];
  for (const k of mine) {
    if (units.s[k] === "missing" || units.a[k] === null) {
      chips.push(unitSpan(data, r, k, null, "∅ " + (units.f[k] === null ? "" : units.f[k])));
      continue;
    }
    if (units.a[k] < cursor) { continue; } // overlapping spans are not expected; keep the first
    nodes.push(...chips.splice(0));
    nodes.push(text.slice(cursor, units.a[k]));
    nodes.push(unitSpan(data, r, k, pcts[k], text.slice(units.a[k], units.b[k])));
    cursor = units.b[k];
  }
  nodes.push(text.slice(cursor, end));
  nodes.push(...chips);
  return nodes;
}

function alignedTable(data, r, pcts) {
  const units = unitsOf(data, state.g);
  const rows = [];
  units.r.forEach((rr, k) => { if (rr === r) { rows.push(k); } });
  rows.sort((x, y) => units.i[x] - units.i[y]);
  const values = units.c[state.c] || [];
  return el("table", { class: "aligned" },
    el("tr", {}, el("th", {}, "#"), el("th", {}, "response"), el("th", {}, "reference"), el("th", {}, "status"), el("th", {}, state.c + " (" + directionOf(state.c) + ")")),
    rows.map((k) => el("tr", { class: "aligned", "data-i": units.i[k], "data-status": units.s[k] },
      el("td", {}, units.i[k]), el("td", { class: "mono" }, units.u[k] === null ? "" : units.u[k]),
      el("td", { class: "mono" }, units.f[k] === null ? "" : units.f[k]),
      el("td", {}, el("span", { class: "unit st-" + units.s[k], style: "--a: " + alphaOf(pcts[k]).toFixed(4) }, units.s[k])),
      el("td", { class: "num" }, fmt(values[k], 4)))));
}

function renderResponse(r) {
  const data = current.data;
  const res = data.responses;
  const pcts = percentiles(data, state.g, state.c);
  const text = res.text[r];
  const pane = document.getElementById("response-pane");
  const row = current.rows[r];
  const parts = [
    el("h2", { id: "response-title" }, res.sample_id[r]),
    el("p", {}, "status ", el("b", { id: "response-status" }, res.answer_status[r]), " · finish " + (res.finish_reason[r] || "—") +
      " · " + res.num_generated_tokens[r] + " tokens · precision (" + state.g + ") " + fmt(row.precision) +
      " · mean " + state.c + " " + fmt(row.confidence) + " (" + directionOf(state.c) + ")"),
    el("p", { id: "response-units" }, row.n_units + " units answered (" + row.n_wrong + " not correct), " + row.n_missing +
      " missing of the reference's " + fmt(((res.reference_units || {})[state.g] || [])[r], 0) + " · aligned " + manifest.alignment),
    el("details", {}, el("summary", {}, "prompt"), el("pre", { class: "folded" }, res.prompt[r])),
  ];
  if (res.error[r]) { parts.push(el("p", { class: "error" }, "error: " + res.error[r])); }
  const start = res.answer_start[r];
  if (start === null) {
    parts.push(el("p", { class: "hint" }, "No fenced answer was found: the whole response, unscored."));
    parts.push(el("pre", { class: "folded", id: "raw-response" }, text));
  } else {
    const before = text.slice(0, start);
    if (before.length) {
      const label = res.reasoning_end[r] > 0 ? "reasoning and text before the answer" : "text before the answer";
      parts.push(el("details", {}, el("summary", {}, label + " (" + before.length + " characters)"), el("pre", { class: "folded" }, before)));
    }
    parts.push(el("div", { class: "side-by-side" },
      el("div", {}, el("h3", {}, "answer (" + state.g + " units)"), el("pre", { class: "answer", id: "answer" }, answerNodes(data, r, pcts))),
      el("div", {}, el("h3", {}, "reference"), el("pre", { class: "reference", id: "reference" }, res.reference[r] || ""))));
    const after = text.slice(res.answer_end[r]);
    if (after.trim().length) { parts.push(el("details", {}, el("summary", {}, "text after the answer"), el("pre", { class: "folded" }, after))); }
  }
  parts.push(el("h3", {}, "units, aligned with the reference (" + alignmentText() + ")"), alignedTable(data, r, pcts));
  const section = el("section", { id: "interventions" });
  parts.push(section);
  pane.replaceChildren(...parts);
  for (const tr of document.querySelectorAll("#responses tr.response")) { tr.classList.toggle("selected", tr.dataset.sample === state.r); }
  const focus = pane.querySelector(".unit.focus");
  if (focus) { focus.scrollIntoView({ block: "center" }); }
  renderInterventions(section, res.sample_id[r]);
}

function markedPrefix(prefix, spans) {
  if (!spans) { return [prefix]; }
  const nodes = [];
  let cursor = 0;
  for (const [a, b] of [...spans].sort((x, y) => x[0] - y[0])) {
    if (a < cursor) { continue; }
    nodes.push(prefix.slice(cursor, a), el("mark", { class: "corrupt" }, prefix.slice(a, b)));
    cursor = b;
  }
  nodes.push(prefix.slice(cursor));
  return nodes;
}

async function renderInterventions(section, sample) {
  const meta = manifest.interventions.find((c) => c.model === state.m && c.task === state.t && c.samples.includes(sample));
  if (!meta) { return; }
  const data = await load("interventions", meta.id, meta.file);
  const rows = data.samples[sample] || [];
  section.replaceChildren(el("h3", {}, "Interventions on this sample (" + rows.length + "): corrupted atoms are marked in the prefix"),
    el("table", { class: "interventions" },
      el("tr", {}, el("th", {}, "k / n"), el("th", {}, "placement"), el("th", {}, "corrupted"), el("th", {}, "prefix"),
        el("th", {}, "continuation"), el("th", {}, "next atom"), el("th", {}, "reference"), el("th", {}, "status"), el("th", {}, "confidence")),
      rows.map((row) => el("tr", { class: "intervention", "data-status": row.next_status },
        el("td", {}, row.position + " / " + row.n_atoms), el("td", {}, row.placement), el("td", {}, String(row.n_corrupted)),
        el("td", {}, el("pre", {}, markedPrefix(row.prefix, row.spans))), el("td", {}, el("pre", {}, row.continuation)),
        el("td", { class: "mono" }, row.next_atom === null ? "" : row.next_atom), el("td", { class: "mono" }, row.reference_atom === null ? "" : row.reference_atom),
        el("td", {}, el("span", { class: "unit st-" + (row.next_correct ? "correct" : "incorrect"), style: "--a: 0.5" }, row.next_status || "—")),
        el("td", { class: "num" }, fmt(row.next_confidence, 4))))));
}

/* ---- a cell's summary ---- */

function alignmentText() {
  return manifest.alignment === "dynamic" ? "dynamic alignment: Needleman–Wunsch, docs/evaluation.md §6"
    : "strict alignment: the i-th unit against the i-th reference unit, docs/evaluation.md §5";
}

function interval(values) {
  /* [value, ci_low, ci_high, n_units, n_responses] of the metrics stage as "v [lo, hi]" */
  if (!values) { return "—"; }
  return fmt(values[0]) + (values[1] === null || values[1] === undefined ? "" : " [" + fmt(values[1]) + ", " + fmt(values[2]) + "]");
}

function classCounts(data, granularity, column) {
  /* response units with a defined value of the column: correct and not correct */
  const units = unitsOf(data, granularity);
  const values = units.c[column] || [];
  let correct = 0, incorrect = 0;
  units.s.forEach((s, k) => {
    if (s === "missing" || values[k] === null || values[k] === undefined) { return; }
    if (s === "correct") { correct += 1; } else { incorrect += 1; }
  });
  return [correct, incorrect];
}

function renderSummary(meta, data) {
  /* the picked cell: eligibility, precision and AUROC with intervals, answered share, units, alignment */
  const box = document.getElementById("cell-summary");
  if (!meta) { box.replaceChildren(el("span", { class: "hint" }, "No responses of " + state.m + " on " + state.t + " (" + state.s + ").")); return; }
  const entry = eligibilityOf(meta.model, meta.style) || {};
  const parts = [el("b", {}, meta.model + " · " + meta.style + " · " + meta.task + " · " + state.g + " units"),
    " · answered " + meta.answered + " of " + meta.responses + " responses",
    " · model answered share (" + meta.style + ", every task) " + fmt(entry.share),
    entry.eligible === false ? el("span", { class: "excluded", id: "summary-excluded" }, " · excluded from every estimate: answered " +
      fmt(entry.share) + " < " + fmt(manifest.eligible_answered_share, 2) + " (docs/metrics.md §10)") : null];
  if (data) {
    const summary = data.summary || {};
    const precision = (summary.precision || {})[state.g];
    const auroc = ((summary.auroc || {})[state.g] || {})[state.c];
    const [correct, incorrect] = classCounts(data, state.g, state.c);
    let written = 0, missing = 0;
    responseRows(data).forEach((row) => { written += row.n_units; missing += row.n_missing; });
    const floor = Math.min(correct, incorrect) < manifest.min_model_units;
    parts.push(el("br"),
      el("span", { id: "summary-precision" }, "precision " + interval(precision)),
      el("span", { id: "summary-auroc" }, " · AUROC of " + state.c + " " + interval(auroc)),
      el("span", { id: "summary-classes", class: floor ? "excluded" : "" }, " on " + correct + " correct | " + incorrect + " not correct units" +
        (floor ? " (fewer than " + manifest.min_model_units + " of either: no estimate, analysis.min_model_units)" : "")),
      el("span", { id: "summary-units" }, " · " + written + " units answered, " + missing + " missing"),
      " · " + alignmentText());
  }
  box.replaceChildren(...parts.filter((p) => p !== null));
}

/* ---- confident and wrong · unsure and right, in a cell or across the models of a task ---- */

function cellEntries(meta, data) {
  /* every scored response unit of one cell as a list entry */
  const units = unitsOf(data, state.g);
  const values = units.c[state.c] || [];
  const out = [];
  units.s.forEach((status, k) => {
    if (status === "missing" || values[k] === null || values[k] === undefined) { return; }
    out.push({ chunk: meta.id, r: units.r[k], sample: data.responses.sample_id[units.r[k]], i: units.i[k], status: status,
      answer: data.responses.answer_status[units.r[k]], value: values[k], unit: units.u[k], reference: units.f[k] });
  });
  return out;
}

function taskEntries(data) {
  /* the entries of a (task, style) lists file (data/lists-*.js) for the picked function and granularity */
  const rows = ((data.lists[state.c] || {})[state.g]) || [];
  return rows.map((e) => ({ chunk: e[0], r: e[1], sample: data.samples[e[2]], i: e[3], status: e[4], answer: e[5],
    value: e[6], unit: e[7], reference: e[8] }));
}

async function listEntries() {
  /* the picked cell's units, or the candidates of every model on the task (docs/explorer.md §1) */
  if (state.sc !== "task") {
    const meta = chunkOf(state.m, state.s, state.t);
    return meta ? cellEntries(meta, await load("chunk", meta.id, meta.file)) : [];
  }
  const meta = (manifest.task_lists || []).find((l) => l.task === state.t && l.style === state.s);
  if (!meta) { return []; }
  const eligibleOnly = document.getElementById("list-eligible").checked;
  const entries = taskEntries(await load("lists", meta.id, meta.file));
  return entries.filter((e) => { const c = manifest.chunks[e.chunk]; return !eligibleOnly || (eligibilityOf(c.model, c.style) || {}).eligible !== false; });
}

function filtered(entries) {
  /* the status filters: which wrong statuses count, and the response status */
  const statuses = [...document.querySelectorAll(".list-status:checked")].map((e) => e.value);
  const responseStatus = document.getElementById("list-response-status").value;
  return entries.filter((e) => (e.status === "correct" || statuses.includes(e.status)) && (!responseStatus || e.answer === responseStatus));
}

function ranked(entries, wrong) {
  /* "wrong": most confident first; "right": least confident first (oriented values); ties by chunk, response, unit */
  const sign = columnMeta(state.c).sign;
  const pool = entries.filter((e) => (e.status === "correct") !== wrong);
  pool.sort((x, y) => (wrong ? sign * (y.value - x.value) : sign * (x.value - y.value)) || x.chunk - y.chunk || x.r - y.r || x.i - y.i);
  return pool.slice(0, manifest.list_size);
}

function listEntry(item) {
  const chunk = manifest.chunks[item.chunk];
  const href = hashOf({ m: chunk.model, t: chunk.task, s: chunk.style, c: state.c, g: state.g, r: item.sample, u: item.i, v: "responses" });
  return el("li", { class: "list-entry", "data-chunk": chunk.id, "data-sample": item.sample, "data-i": item.i, "data-status": item.status },
    el("a", { href: href }, chunk.model + " · " + chunk.style + " · " + chunk.task + " · " + item.sample),
    " ", el("span", { class: "mono" }, JSON.stringify(item.unit)), " vs ", el("span", { class: "mono" }, JSON.stringify(item.reference)),
    " · " + item.status + " · " + fmt(item.value, 4));
}

async function renderLists() {
  const body = document.getElementById("lists-body");
  const token = (renderLists.token = (renderLists.token || 0) + 1);
  let entries;
  try { entries = filtered(await listEntries()); } catch (err) {
    body.replaceChildren(el("p", { class: "error" }, String(err)));
    return;
  }
  if (token !== renderLists.token) { return; } // a later render is under way
  const models = [...new Set(entries.map((e) => manifest.chunks[e.chunk].model))];
  const scope = state.sc === "task" ? "every " + (document.getElementById("list-eligible").checked ? "eligible " : "") +
    "model on " + state.t + " (" + state.s + "; with units listed: " + (models.join(", ") || "none") + ")" : state.m + " · " + state.s + " · " + state.t;
  const column = (title, items, note) => el("div", {}, el("h2", {}, title), el("p", { class: "hint" }, note),
    items.length ? el("ol", {}, items.map(listEntry)) : el("p", { class: "hint" }, "none"));
  body.replaceChildren(
    el("p", { id: "lists-scope" }, state.g + " units of " + scope + ", by " + state.c + " (" + directionOf(state.c) +
      "; values as the function gives them, ranked by confidence)."),
    el("div", { class: "columns" },
      column("Confident and wrong", ranked(entries, true), "Units that are not correct, most confident first."),
      column("Unsure and right", ranked(entries, false), "Correct units, least confident first.")));
}
