// memtool ui: every piece of stored text is put into the page as text (text nodes, textContent),
// never as HTML; there is no innerHTML in this file. Changes are POSTs with the page's CSRF token.
"use strict";

const csrf = document.querySelector('meta[name="csrf"]').content;
const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, ...kids) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") n.className = v;
    else if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v);
  }
  for (const kid of kids) if (kid !== null && kid !== undefined) n.append(kid instanceof Node ? kid : String(kid));
  return n;
}

function sv(tag, attrs, text) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, String(v));
  if (text !== undefined) n.textContent = String(text);
  return n;
}

async function get(path, params) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params || {})) if (v !== "" && v !== false && v !== undefined) url.searchParams.set(k, v === true ? "1" : v);
  const r = await fetch(url, { credentials: "same-origin" });
  const data = await r.json();
  if (!r.ok) throw new Error(data.error || String(r.status));
  return data;
}

async function post(path, body) {
  const r = await fetch(path, {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
    body: JSON.stringify(body || {}),
  });
  const data = await r.json();
  if (!r.ok) throw new Error(data.error || String(r.status));
  return data;
}

function note(text) { const n = $("note"); n.textContent = text || ""; n.hidden = !text; }
function fail(where, err) { where.replaceChildren(el("p", { class: "error" }, err.message)); }

// -- tabs --------------------------------------------------------------------------------------
let current = "timeline";
function show(view) {
  current = view;
  for (const b of document.querySelectorAll(".tab")) b.classList.toggle("on", b.dataset.view === view);
  for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== "view-" + view;
  if (view === "pictures") pictures();
}
for (const b of document.querySelectorAll(".tab")) b.addEventListener("click", () => show(b.dataset.view));

// -- timeline ----------------------------------------------------------------------------------
let offset = 0, page = 0;
function filters() {
  return { since: $("f-since").value, until: $("f-until").value, topic: $("f-topic").value,
           importance: $("f-importance").value, agent: $("f-agent").value, trust: $("f-trust").value };
}

// where a hit or an entry is from, when not the project's shared files: "personal", "private" (as memory search labels it)
function origin(e) {
  const label = [e.origin === "personal" ? "personal" : null, e.private ? "private" : null].filter(Boolean).join(", ");
  return label ? el("span", { class: "badge from" }, label) : null;
}

function badges(e) {
  return el("span", { class: "meta" },
    el("span", {}, (e.timestamp || "").slice(0, 16).replace("T", " ")),
    e.kind === "log" ? el("span", { class: "badge" }, "daily log") : el("span", { class: "badge imp-" + e.importance }, e.importance),
    origin(e),
    e.trusted === false ? el("span", { class: "badge untrusted" }, "untrusted") : null,
    e.pinned ? el("span", { class: "badge" }, "pinned") : null,
    e.superseded_by ? el("span", { class: "badge" }, "superseded") : null,
    e.agent ? el("span", {}, e.agent) : null,
    e.topics && e.topics.length ? el("span", {}, e.topics.join(", ")) : null);
}

async function timeline(more) {
  offset = more ? offset + page : 0;
  const list = $("timeline");
  try {
    const data = await get("/api/timeline", { ...filters(), offset });
    if (!more) list.replaceChildren();
    page = data.page;
    for (const item of data.items) {
      const open = item.kind === "log" ? () => showLog(item.id) : () => showEntry(item.id);
      list.append(el("li", { class: "item", "data-id": item.id, "data-kind": item.kind, onclick: open },
        badges(item), el("div", { class: "summary" }, item.kind === "log" ? "Daily log " + item.day : item.summary)));
    }
    $("timeline-count").textContent = data.total + " items" + (data.problems.length ? " · skipped: " + data.problems.join("; ") : "");
    $("more").hidden = data.offset + data.items.length >= data.total;
    $("topics").replaceChildren(...data.topics.map((t) => el("option", { value: t })));
    const agent = $("f-agent"), chosen = agent.value;
    agent.replaceChildren(el("option", { value: "" }, "any"), ...data.agents.map((a) => el("option", { value: a }, a)));
    agent.value = chosen;
  } catch (err) { fail(list, err); }
}
$("f-apply").addEventListener("click", () => timeline(false));
$("more").addEventListener("click", () => timeline(true));

// -- search and context -------------------------------------------------------------------------
function marked(runs) {
  const span = el("span");
  for (const [piece, hit] of runs) span.append(hit ? el("mark", {}, piece) : piece);
  return span;
}

async function search() {
  const hits = $("hits");
  $("search-note").textContent = "searching…";
  try {
    const data = await get("/api/search", { q: $("q").value, kind: $("s-kind").value, trusted_only: $("s-trusted").checked, archive: $("s-archive").checked });
    hits.replaceChildren();
    data.hits.forEach((h, i) => {
      const isEntry = h.kind === "entry" || h.kind === "transcript";
      const open = isEntry ? () => showEntry(h.id) : () => showText(h.kind + " · " + h.ref, h.text);
      hits.append(el("li", { class: "item hit", "data-id": h.id, "data-kind": h.kind, onclick: open },
        el("span", { class: "meta" }, el("span", {}, h.score.toFixed(3)), el("span", { class: "badge" }, h.kind), origin(h),
          el("span", {}, h.timestamp.slice(0, 10)), h.trusted ? null : el("span", { class: "badge untrusted" }, "untrusted"), el("span", {}, h.id)),
        el("div", { class: "summary" }, marked(data.marks[i].text)),
        h.passage ? el("pre", { class: "passage" }, marked(data.marks[i].passage)) : null));
    });
    const fixes = Object.entries(data.typo_fixes).map(([w, f]) => w + " → " + f.join(", "));
    $("search-note").textContent = data.hits.length + " hits" + (fixes.length ? " · also searched " + fixes.join("; ") : "") + (data.warnings.length ? " · " + data.warnings.join("; ") : "");
  } catch (err) { fail(hits, err); }
}
$("s-go").addEventListener("click", search);
$("q").addEventListener("keydown", (ev) => { if (ev.key === "Enter") search(); });

async function context() {
  try {
    const res = await get("/api/context", { q: $("c-q").value, budget: $("c-budget").value });
    $("c-text").textContent = res.text;
    $("c-meter").textContent = res.tokens + " / " + res.budget + " tokens (" + res.counter + ", template " + res.template + ")" + (res.dropped.length ? " · dropped to fit: " + res.dropped.join("; ") : "");
    const bar = $("c-bar");
    bar.setAttribute("data-share", String(res.tokens / Math.max(res.budget, 1)));
    bar.classList.toggle("over", res.tokens > res.budget);
    bar.style.width = Math.min(100, (100 * res.tokens) / Math.max(res.budget, 1)).toFixed(1) + "%";
  } catch (err) { fail($("c-text"), err); }
}
$("c-go").addEventListener("click", context);

// -- one entry -----------------------------------------------------------------------------------
let shown = null;
function field(label, input) { return el("label", { class: "field" }, el("span", {}, label), input); }
function lines(text) { return text.split("\n").map((s) => s.trim()).filter(Boolean); }

function link(l) {
  return el("li", {}, el("button", { type: "button", class: "link", onclick: () => showEntry(l.id) }, l.id), " ", l.day || "", " ", l.live ? l.summary : "(not stored)");
}

async function showEntry(id) {
  const box = $("entry");
  $("detail").hidden = false;
  try {
    const d = await get("/api/entry/" + encodeURIComponent(id));
    shown = d;
    const e = d.entry;
    const summary = el("textarea", { id: "e-summary", rows: "4" }); summary.value = e.summary;
    const decisions = el("textarea", { id: "e-decisions", rows: "3" }); decisions.value = e.decisions.join("\n");
    const actions = el("textarea", { id: "e-actions", rows: "3" }); actions.value = e.action_items.join("\n");
    const importance = el("select", { id: "e-importance" }, ...["low", "medium", "high", "critical"].map((v) => el("option", { value: v }, v)));
    importance.value = e.importance;
    const pinned = el("input", { id: "e-pinned", type: "checkbox" }); pinned.checked = e.pinned;
    const status = el("p", { id: "e-status", class: "muted" });
    const act = (label, run, cls) => el("button", { type: "button", id: "e-" + label.toLowerCase(), class: cls || "", onclick: run }, label);
    const save = async () => {
      const changes = {};
      if (summary.value.trim() !== e.summary) changes.summary = summary.value;
      if (lines(decisions.value).join("\n") !== e.decisions.join("\n")) changes.decisions = lines(decisions.value);
      if (lines(actions.value).join("\n") !== e.action_items.join("\n")) changes.action_items = lines(actions.value);
      if (importance.value !== e.importance) changes.importance = importance.value;
      if (pinned.checked !== e.pinned) changes.pinned = pinned.checked;
      try {
        const done = await post("/api/entry/" + encodeURIComponent(e.id) + "/edit", changes);
        status.textContent = done.changed.length ? "saved " + done.changed.join(", ") + " in " + done.day_file : "nothing changed";
        await showEntry(e.id);
        $("e-status").textContent = status.textContent;
      } catch (err) { status.textContent = err.message; }
    };
    const forget = async () => {
      if (!confirm("Forget " + e.id + " for good (entry, transcript, vector)?")) return;
      try { await post("/api/entry/" + encodeURIComponent(e.id) + "/forget"); box.replaceChildren(el("p", { id: "e-status" }, "forgot " + e.id)); $("transcript").textContent = ""; timeline(false); }
      catch (err) { status.textContent = err.message; }
    };
    const archive = async () => {
      try { await post("/api/entry/" + encodeURIComponent(e.id) + "/archive"); await showEntry(e.id); $("e-status").textContent = "archived to memory/archive/"; timeline(false); }
      catch (err) { status.textContent = err.message; }
    };
    const promote = async () => {
      try { const p = await post("/api/entry/" + encodeURIComponent(e.id) + "/promote", {}); status.textContent = (p.added ? "added to " : "already in ") + p.path + " under " + p.section + ": " + p.bullet; }
      catch (err) { status.textContent = err.message; }
    };
    const editable = !d.archived;
    box.replaceChildren(...[
      el("h2", { id: "e-id" }, e.id),
      el("p", { class: "meta" }, el("span", {}, e.timestamp), el("span", {}, "session " + e.source_session), el("span", {}, e.source + (e.agent ? " · " + e.agent : "")),
        el("span", { class: e.trusted ? "" : "untrusted" }, e.trusted ? "trusted" : "untrusted input"), el("span", {}, e.compression_ratio + " (" + e.tokens_original + " → " + e.tokens_compressed + " tokens)"),
        el("span", {}, d.day_file), d.archived ? el("span", { class: "badge" }, "archived") : null,
        d.origin !== "project" || d.private ? el("span", { class: "badge from" }, "from " + origin(d).textContent + " memory") : null),
      field("summary", summary), field("decisions (one a line)", decisions), field("action items (one a line)", actions),
      el("div", { class: "actions" }, field("importance", importance), el("label", { class: "field" }, pinned, " pinned")),
      editable ? el("div", { class: "actions" }, act("Save", save), act("Promote", promote), act("Archive", archive), act("Forget", forget, "danger")) : el("p", { class: "muted" }, "archived: read only"),
      status,
      el("p", { class: "meta" }, "keywords: " + e.keywords.join(", "), " · topics: " + e.topics.join(", ")),
      el("p", { class: "meta" }, "people: " + e.entities.people.join(", "), " · systems: " + e.entities.systems.join(", ")),
      d.supersedes.length ? el("div", {}, el("h3", {}, "Supersedes"), el("ul", { id: "e-supersedes" }, ...d.supersedes.map(link))) : null,
      d.superseded_by.length ? el("div", {}, el("h3", {}, "Superseded by"), el("ul", { id: "e-superseded-by" }, ...d.superseded_by.map(link))) : null,
      d.problems.length ? el("p", { class: "error" }, d.problems.join("; ")) : null,
    ].filter(Boolean));
    for (const input of [summary, decisions, actions, importance, pinned]) input.disabled = !editable;
    $("transcript").textContent = d.transcript === null ? "(no transcript kept)" : d.transcript + (d.transcript_cut ? "\n[… cut]" : "");
  } catch (err) { fail(box, err); }
}

function showText(title, text) {
  $("detail").hidden = false;
  $("entry").replaceChildren(el("h2", {}, title));
  $("transcript").textContent = text;
}

async function showLog(ref) {
  $("detail").hidden = false;
  try {
    const d = await get("/api/log/" + encodeURIComponent(ref));
    const from = origin(d);
    $("entry").replaceChildren(el("h2", {}, "Daily log " + d.day),
      el("p", { class: "meta" }, d.path, from ? el("span", { class: "badge from" }, "from " + from.textContent + " memory") : null));
    $("transcript").textContent = d.text;
  } catch (err) { fail($("entry"), err); }
}

// -- pictures ------------------------------------------------------------------------------------
function columns(box, series, unit) {
  box.replaceChildren();
  if (!series.length) { box.append(el("p", { class: "muted" }, "nothing yet")); return; }
  const W = 720, H = 170, top = 14, bottom = 26, left = 30, plotH = H - top - bottom, plotW = W - left - 10;
  const peak = Math.max(1, ...series.map((s) => s[1])), step = plotW / series.length, every = Math.max(1, Math.ceil((series.length * 70) / plotW));
  const svg = sv("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" });
  svg.append(sv("line", { class: "axis", x1: left, y1: top + plotH, x2: W - 10, y2: top + plotH }), sv("text", { x: 2, y: top + 4 }, peak));
  series.forEach(([label, v], i) => {
    const h = (plotH * v) / peak, x = left + i * step;
    const r = sv("rect", { class: "bar", x: x + step * 0.1, y: top + plotH - h, width: Math.max(step * 0.8, 1), height: h, "data-label": label, "data-value": v });
    r.append(sv("title", {}, label + ": " + v + " " + unit));
    svg.append(r);
    if (i % every === 0) svg.append(sv("text", { x: x + step / 2, y: H - 8, "text-anchor": "middle" }, label));
  });
  box.append(svg);
}

function lines_over_time(box, data) {
  box.replaceChildren();
  const names = Object.keys(data.series), n = data.weeks.length;
  if (!names.length || !n) { box.append(el("p", { class: "muted" }, "nothing yet")); return; }
  const W = 720, H = 170, top = 10, bottom = 24, left = 30, plotH = H - top - bottom, plotW = W - left - 10;
  const peak = Math.max(1, ...names.flatMap((t) => data.series[t]));
  const x = (i) => left + (n === 1 ? plotW / 2 : (plotW * i) / (n - 1)), y = (v) => top + plotH - (plotH * v) / peak;
  const svg = sv("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" });
  svg.append(sv("line", { class: "axis", x1: left, y1: top + plotH, x2: W - 10, y2: top + plotH }), sv("text", { x: 2, y: top + 4 }, peak));
  names.forEach((t, k) => {
    const pts = data.series[t].map((v, i) => x(i).toFixed(1) + "," + y(v).toFixed(1)).join(" ");
    const line = sv("polyline", { class: "line s" + k, points: pts, "data-label": t });
    line.append(sv("title", {}, t));
    svg.append(line);
  });
  svg.append(sv("text", { x: left, y: H - 6 }, data.weeks[0]), sv("text", { x: W - 10, y: H - 6, "text-anchor": "end" }, data.weeks[n - 1]));
  box.append(svg, el("p", { class: "key" }, ...names.map((t, k) => el("span", { class: "k" + k }, "— " + t))));
}

function graph(box, g) {
  box.replaceChildren();
  if (!g.nodes.length) { box.append(el("p", { class: "muted" }, "no people or systems named yet")); return; }
  const W = 720, H = 460, cx = W / 2, cy = H / 2, R = 180, peak = Math.max(...g.nodes.map((n) => n.count));
  const pos = g.nodes.map((_, i) => [cx + R * Math.cos((2 * Math.PI * i) / g.nodes.length), cy + R * Math.sin((2 * Math.PI * i) / g.nodes.length)]);
  const svg = sv("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" });
  const most = Math.max(1, ...g.links.map((l) => l.n));
  for (const l of g.links) svg.append(sv("line", { class: "edge", x1: pos[l.a][0], y1: pos[l.a][1], x2: pos[l.b][0], y2: pos[l.b][1], "stroke-width": 1 + (3 * l.n) / most }));
  g.nodes.forEach((n, i) => {
    const c = sv("circle", { class: n.kind, cx: pos[i][0], cy: pos[i][1], r: 4 + (10 * n.count) / peak, "data-label": n.name, "data-value": n.count });
    c.append(sv("title", {}, n.name + " (" + n.kind + "): " + n.count + " entries"));
    const right = pos[i][0] >= cx;
    svg.append(c, sv("text", { x: pos[i][0] + (right ? 16 : -16), y: pos[i][1] + 4, "text-anchor": right ? "start" : "end" }, n.name));
  });
  box.append(svg, el("p", { class: "key" }, el("span", { class: "k1" }, "● people"), el("span", { class: "k0" }, "● systems")));
}

async function pictures() {
  try {
    const p = await get("/api/pictures");
    columns($("p-weeks"), p.weeks, "sessions");
    lines_over_time($("p-topics"), p.topics);
    columns($("p-ratios"), p.ratios, "entries");
    graph($("p-graph"), p.graph);
  } catch (err) { fail($("p-weeks"), err); }
}

// -- live updates --------------------------------------------------------------------------------
function listen() {
  const events = new EventSource("/api/events");
  events.onmessage = (msg) => {
    const ev = JSON.parse(msg.data);
    if (ev.type === "rebuilding") note("files changed: the cache is being rebuilt…");
    if (ev.type === "synced" || ev.type === "changed") {
      note("");
      if (current === "timeline") timeline(false);
      if (current === "pictures") pictures();
    }
  };
}

(async () => {
  try {
    const s = await get("/api/status");
    $("root").textContent = s.root + " · memtool " + s.version;
    if (s.rebuilding) note("the cache is being rebuilt…");
  } catch (err) { note(err.message); }
  await timeline(false);
  performance.mark("memtool-timeline");  // the first paint of the timeline, which the browser test measures
  listen();
})();
