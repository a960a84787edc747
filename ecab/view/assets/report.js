// ecab report: the run page, the episode list, episode pages and the compare page, rendered from the data
// embedded in this file (see ecab/view/writer.py). Plain JS, no library, no network.
"use strict";
(function () {
  const ROW = 30;                       // px per episode-list row (the --row CSS variable)
  const LONG_TEXT = 600;                // characters shown of a message before "show all"
  const LONG_RESULT = 360;              // characters shown of a tool result before "show all"
  const POLL_MS = 3000;                 // how often a live page asks the server whether the run changed
  const state = { data: null, runs: [], chunks: new Map(), lists: new Map(), shown: 0 };
  window.ecabTiming = { start: performance.now() };

  // ---------------------------------------------------------------------------------------- helpers
  function h(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "style") node.setAttribute("style", value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const fmtPct = (x) => (x === null || x === undefined ? "n/a" : (100 * x).toFixed(1) + "%");
  const fmtNum = (x, d = 2) => (x === null || x === undefined ? "" : Number(x).toFixed(d));
  const esc = (s) => String(s === null || s === undefined ? "" : s);
  function badge(text, cls) { return h("span", { class: "badge " + (cls || "") }, text); }
  function outcomeBadge(outcome) { return badge(outcome.replace("_", " "), outcome); }
  function verdictBadge(sat) {
    return sat === true ? badge("satisfied", "sat") : sat === false ? badge("failed", "unsat")
      : badge(sat === null ? "unscored" : "not judged", "unscored");
  }
  function table(headers, rows, opts) {
    opts = opts || {};
    return h("table", { class: "t" + (opts.cls ? " " + opts.cls : "") },
      h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))),
      h("tbody", {}, rows.map((row) => h("tr", {}, row.map((c) =>
        h("td", { class: /^[-+$]?[\d.,]+%?( \[.*\])?$/.test(String(c)) ? "num" : null }, c instanceof Node ? c : esc(c)))))));
  }
  function plainTable(t) {
    return h("div", { class: "tbl" }, h("h3", {}, t.title), table(t.headers, t.rows),
      t.note ? h("div", { class: "muted" }, t.note) : null);
  }
  function pretty(text) {
    if (typeof text !== "string") return JSON.stringify(text, null, 2);
    const trimmed = text.trim();
    if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
      try { return JSON.stringify(JSON.parse(trimmed), null, 2); } catch (e) { /* not JSON: as written */ }
    }
    return text;
  }
  // A long text shows its head and a button that swaps in the whole (pretty-printed when JSON).
  function collapsible(text, limit, cls) {
    const full = esc(text);
    if (full.length <= limit) return h("pre", { class: cls }, pretty(full));
    const pre = h("pre", { class: cls }, full.slice(0, limit) + " …");
    const button = h("button", { class: "more", type: "button" }, `show all (${full.length.toLocaleString()} chars)`);
    button.addEventListener("click", () => {
      const open = button.dataset.open === "1";
      pre.textContent = open ? full.slice(0, limit) + " …" : pretty(full);
      button.textContent = open ? `show all (${full.length.toLocaleString()} chars)` : "show less";
      button.dataset.open = open ? "0" : "1";
    });
    return h("div", {}, pre, button);
  }
  function longText(text, cls) {
    const full = esc(text);
    if (full.length <= LONG_TEXT) return h("div", { class: cls }, full);
    const body = h("div", { class: cls }, full.slice(0, LONG_TEXT) + " …");
    const button = h("button", { class: "more", type: "button" }, "show all");
    button.addEventListener("click", () => { body.textContent = full; button.remove(); });
    return h("div", {}, body, button);
  }

  // ---------------------------------------------------------------------------------------- decoding
  function bytesOf(base64) {
    const chars = atob(base64);
    const out = new Uint8Array(chars.length);
    for (let i = 0; i < chars.length; i++) out[i] = chars.charCodeAt(i);
    return out;
  }
  async function decode(node) {
    const text = node.textContent;
    if (node.dataset.enc === "json") return JSON.parse(text);
    const stream = new Blob([bytesOf(text)]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  // A chunk stores each repeated long string once; {"\u0001": n} refers to strings[n] (writer.shared_strings).
  function unshare(chunk) {
    const strings = chunk.strings;
    const walk = (v) => {
      if (Array.isArray(v)) { for (let k = 0; k < v.length; k++) v[k] = walk(v[k]); return v; }
      if (v && typeof v === "object") {
        if (Object.prototype.hasOwnProperty.call(v, "\u0001") && Object.keys(v).length === 1) return strings[v["\u0001"]];
        for (const key of Object.keys(v)) v[key] = walk(v[key]);
      }
      return v;
    };
    return strings.length ? walk(chunk.items) : chunk.items;
  }
  // The details of episode i of run r: decoded once per chunk, on first use.
  function detail(r, i) {
    const spans = state.runs[r].chunks;
    const c = spans.findIndex(([a, b]) => i >= a && i < b);
    if (c < 0) return Promise.reject(new Error(`episode ${i} is not in the report`));
    const key = r + ":" + c;
    if (!state.chunks.has(key)) {
      const node = document.querySelector(`script[data-run="${r}"][data-chunk="${c}"]`);
      state.chunks.set(key, decode(node).then(unshare));
    }
    return state.chunks.get(key).then((items) => items[i - spans[c][0]]);
  }

  // ---------------------------------------------------------------------------------------- navigation
  function route() {
    const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
    if (parts[0] === "compare" && state.data.compare) return { page: "compare", pair: Number(parts[1] || 0) };
    const r = parts[0] === "run" ? Math.min(Number(parts[1]) || 0, state.runs.length - 1) : 0;
    if (parts[2] === "episodes") return { page: "list", r };
    if (parts[2] === "episode") return { page: "episode", r, i: Number(parts[3]) || 0 };
    return { page: "run", r };
  }
  function nav(current) {
    const bar = document.getElementById("nav");
    bar.textContent = "";
    const r = current.r || 0;
    const link = (href, text, active) => h("a", { href, class: active ? "active" : null }, text);
    if (state.runs.length > 1) {
      const pick = h("select", { id: "run-pick", "aria-label": "run" },
        state.runs.map((run, k) => h("option", { value: k, selected: k === r ? true : null }, run.name)));
      pick.addEventListener("change", () => { location.hash = `#/run/${pick.value}`; });
      bar.appendChild(pick);
    }
    bar.appendChild(link(`#/run/${r}`, "Run", current.page === "run"));
    bar.appendChild(link(`#/run/${r}/episodes`, "Episodes", current.page === "list" || current.page === "episode"));
    if (state.data.compare) bar.appendChild(link("#/compare", "Compare", current.page === "compare"));
  }
  async function show() {
    const started = performance.now();
    const token = ++state.shown;          // a page still decoding when another is asked for must not draw
    const current = route();
    nav(current);
    const app = document.getElementById("app");
    app.textContent = "";
    if (current.page === "run") renderRun(app, current.r);
    else if (current.page === "list") renderList(app, current.r);
    else if (current.page === "episode") await renderEpisode(app, current.r, current.i, () => token === state.shown);
    else renderCompare(app, current.pair);
    if (token !== state.shown) return;
    document.body.dataset.page = current.page;
    window.scrollTo(0, 0);
    window.ecabTiming.lastPage = { page: current.page, ms: performance.now() - started };
  }

  // ---------------------------------------------------------------------------------------- run page
  function renderRun(app, r) {
    const run = state.runs[r];
    app.appendChild(h("h1", {}, `Run ${run.name}`, h("span", { class: "muted" }, ` · model ${esc(run.model)}`)));
    const status = run.status || {};
    if (status.state && status.state !== "finished") {
      app.appendChild(h("div", { class: "box progress", id: "run-status" }, status.text,
        state.data.live ? " · this page follows the run" : " · a snapshot: python -m ecab.view <run> --serve follows it"));
    }
    app.appendChild(h("div", { class: "cards", id: "cards" }, run.cards.map((c) => h("div", { class: "card" },
      h("div", { class: "label" }, c.label), h("div", { class: "value" }, c.value),
      c.ci ? h("div", { class: "ci" }, "95% CI " + c.ci) : null, c.note ? h("div", { class: "note" }, c.note) : null))));
    if (run.audit) {
      app.appendChild(h("h2", {}, "Task set validity audit"));
      app.appendChild(h("div", { class: "box", id: "audit" }, run.audit.headline || run.audit.reason || run.audit.status));
    }
    app.appendChild(h("h2", {}, "Tables"));
    app.appendChild(h("div", { class: "grid2", id: "tables" }, run.tables.map(plainTable)));
    if (run.plots.length) {
      app.appendChild(h("h2", {}, "Plots"));
      app.appendChild(h("div", { class: "plots" }, run.plots.map((p) =>
        h("figure", {}, h("img", { src: p.src, alt: p.title, title: p.name })))));
    }
    app.appendChild(h("h2", {}, "Manifest"));
    app.appendChild(table(["what", "value"], run.provenance, { cls: "manifest" }));
    if (run.config) app.appendChild(h("details", {}, h("summary", {}, "config.yaml"), h("pre", {}, run.config)));
    app.appendChild(h("p", {}, h("a", { href: `#/run/${r}/episodes` }, `All ${run.rows.length} episodes →`)));
  }

  // ---------------------------------------------------------------------------------------- episode list
  const LIST_COLUMNS = [
    ["#", "i", "50px"], ["task", "task", "minmax(160px, 2fr)"], ["trial", "trial", "46px"], ["model", "model", "1fr"],
    ["intent", "intent", "1.3fr"], ["outcome", "outcome", "100px"], ["termination", "termination", "1.3fr"],
    ["calls", "calls", "52px"], ["asks", "asks", "46px"], ["profile", "profile_reads", "54px"],
    ["failed", "failed", "58px"], ["failed sources", "failed_sources", "1.2fr"], ["failed types", "failed_types", "1.7fr"],
    ["tokens", "tokens", "70px"], ["wall s", "wall_s", "60px"]];
  const FILTERS = [["intent", "intent"], ["outcome", "outcome"], ["termination", "termination"],
    ["failed source", "failed_sources"], ["failed type", "failed_types"], ["model", "model"]];

  function listOf(r) {
    if (state.lists.has(r)) return state.lists.get(r);
    const run = state.runs[r];
    const cols = run.columns;
    const rows = run.rows.map((values, i) => {
      const row = { i };
      cols.forEach((c, k) => { row[c] = values[k]; });
      const task = run.tasks[row.task] || {};
      row.text = [row.task, task.query, row.recommended, row.model].join(" ").toLowerCase();
      return row;
    });
    const options = {};
    for (const [, key] of FILTERS) {
      const seen = new Set();
      rows.forEach((row) => [].concat(row[key]).forEach((v) => seen.add(v)));
      options[key] = [...seen].sort();
    }
    const list = { rows, options, shown: rows, filter: { q: "", min: "", max: "", sort: "i", desc: false } };
    state.lists.set(r, list);
    return list;
  }
  function applyFilter(list) {
    const f = list.filter;
    const q = f.q.trim().toLowerCase();
    const min = f.min === "" ? -Infinity : Number(f.min), max = f.max === "" ? Infinity : Number(f.max);
    let shown = list.rows.filter((row) => {
      if (q && !row.text.includes(q)) return false;
      if (row.calls < min || row.calls > max) return false;
      for (const [, key] of FILTERS) {
        const want = f[key];
        if (want && !(Array.isArray(row[key]) ? row[key].includes(want) : String(row[key]) === want)) return false;
      }
      return true;
    });
    const key = f.sort, sign = f.desc ? -1 : 1;
    const val = (row) => (Array.isArray(row[key]) ? row[key].join(",") : row[key]);
    shown = shown.slice().sort((a, b) => {
      const x = val(a), y = val(b);
      return (x === y ? a.i - b.i : (x === null || x === undefined) ? 1 : (y === null || y === undefined) ? -1
        : x < y ? -sign : sign);
    });
    list.shown = shown;
  }
  function renderList(app, r) {
    const run = state.runs[r];
    const list = listOf(r);
    applyFilter(list);
    app.appendChild(h("h1", {}, `Episodes of ${run.name}`));
    const bar = h("div", { class: "filters" });
    const search = h("input", { id: "f-q", type: "search", placeholder: "task id or query text", value: list.filter.q });
    search.addEventListener("input", () => { list.filter.q = search.value; refresh(); });
    bar.appendChild(h("label", {}, "search", search));
    for (const [label, key] of FILTERS) {
      const select = h("select", { id: "f-" + key.replace("_", "-") }, h("option", { value: "" }, "all"),
        list.options[key].map((v) => h("option", { value: v, selected: list.filter[key] === String(v) ? true : null }, v)));
      select.addEventListener("change", () => { list.filter[key] = select.value; refresh(); });
      bar.appendChild(h("label", {}, label, select));
    }
    for (const [label, key] of [["calls ≥", "min"], ["calls ≤", "max"]]) {
      const input = h("input", { id: "f-" + key, type: "number", min: 0, value: list.filter[key] });
      input.addEventListener("input", () => { list.filter[key] = input.value; refresh(); });
      bar.appendChild(h("label", {}, label, input));
    }
    const reset = h("button", { type: "button", id: "f-reset" }, "reset");
    reset.addEventListener("click", () => {
      list.filter = { q: "", min: "", max: "", sort: "i", desc: false };
      app.textContent = "";
      renderList(app, r);
    });
    bar.appendChild(reset);
    app.appendChild(bar);
    const count = h("div", { id: "count", class: "muted" });
    app.appendChild(count);
    const template = LIST_COLUMNS.map((c) => c[2]).join(" ");
    const box = h("div", { class: "vlist", id: "episodes", style: `--cols: ${template}` });
    const head = h("div", { class: "vhead" }, LIST_COLUMNS.map(([label, key]) => {
      const cell = h("div", { "data-key": key, class: list.filter.sort === key ? "sorted" + (list.filter.desc ? " desc" : "") : null }, label);
      cell.addEventListener("click", () => {
        list.filter.desc = list.filter.sort === key ? !list.filter.desc : false;
        list.filter.sort = key;
        head.querySelectorAll("div").forEach((d) => { d.className = ""; });
        cell.className = "sorted" + (list.filter.desc ? " desc" : "");
        refresh();
      });
      return cell;
    }));
    const body = h("div", { style: "position: relative" });
    box.appendChild(head);
    box.appendChild(body);
    app.appendChild(box);

    function cell(row, key) {
      const v = row[key];
      if (key === "outcome") return outcomeBadge(v);
      if (key === "failed") return row.failed ? `${row.failed}/${row.rubrics}` : "";
      if (Array.isArray(v)) return v.join(", ");
      return esc(v);
    }
    function draw() {
      const shown = list.shown;
      const top = Math.max(0, Math.floor(box.scrollTop / ROW) - 5);
      const end = Math.min(shown.length, top + Math.ceil(box.clientHeight / ROW) + 10);
      body.textContent = "";
      for (let k = top; k < end; k++) {
        const row = shown[k];
        const line = h("div", { class: "vrow", style: `top: ${k * ROW}px`, "data-i": row.i },
          LIST_COLUMNS.map(([, key]) => h("div", { title: key === "task" ? row.task : null }, cell(row, key))));
        line.addEventListener("click", () => { location.hash = `#/run/${r}/episode/${row.i}`; });
        body.appendChild(line);
      }
    }
    function refresh() {
      applyFilter(list);
      count.textContent = `${list.shown.length} of ${list.rows.length} episodes`;
      body.style.height = `${list.shown.length * ROW}px`;
      box.scrollTop = 0;
      draw();
    }
    let pending = false;
    box.addEventListener("scroll", () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => { pending = false; draw(); });
    });
    count.textContent = `${list.shown.length} of ${list.rows.length} episodes`;
    body.style.height = `${list.shown.length * ROW}px`;
    draw();
  }

  // ---------------------------------------------------------------------------------------- episode page
  function learnText(learn, satisfied) {
    if (!learn) return "";
    if (learn.where === "query") return "in the query";
    if (learn.where === "profile") return learn.call ? `profile read at call ${learn.call}` : "profile never read";
    if (learn.where === "clarification") {
      if (!learn.slot) return "clarification (no slot)";
      return learn.call ? `slot ${learn.slot} revealed at call ${learn.call}` : `slot ${learn.slot} never revealed`;
    }
    return learn.where;
  }
  function stepView(step, task, verdicts) {
    const rubricText = (ids) => ids.map((id) => {
      const rubric = (task.rubrics || []).find((x) => x.id === id) || { id };
      const v = verdicts[id];
      return `${id} ${rubric.field || ""} = ${JSON.stringify(rubric.expected)}` +
        (v && v.satisfied === false ? " (failed)" : v && v.satisfied === true ? " (satisfied)" : "");
    }).join("; ");
    const marks = [];
    if (step.profile) marks.push(badge(`profile read: carries ${step.profile.length ? rubricText(step.profile) : "no persona rubric"}`, "mark"));
    if (step.reveal) marks.push(badge(`revealed ${step.reveal.slot}: ${rubricText(step.reveal.rubrics)}`, "mark"));
    const meta = [];
    if (step.agent_s !== undefined) meta.push(`model ${fmtNum(step.agent_s, 3)} s`);
    if (step.tool_s !== undefined) meta.push(`tool ${fmtNum(step.tool_s, 3)} s`);
    if (step.tokens) meta.push(`tokens ${step.tokens[0]}/${step.tokens[1]}` + (step.tokens[2] ? `/${step.tokens[2]}` : ""));
    if (step.retries) meta.push(`retries ${step.retries}`);
    const args = step.arguments === undefined ? null : h("div", {}, h("div", { class: "lbl" }, "arguments"),
      h("pre", { class: "args" }, typeof step.arguments === "string" ? step.arguments : JSON.stringify(step.arguments, null, 2)));
    const result = step.result === undefined ? null
      : h("div", {}, h("div", { class: "lbl" }, "result"), collapsible(step.result, LONG_RESULT, "result"));
    return h("li", { class: "step" + (step.is_error ? " error" : "") + (marks.length ? " marked" : ""), "data-call": step.call,
      id: `turn-${step.turn}` },
      h("div", { class: "head" },
        h("span", { class: "num" }, step.call ? `#${step.call}` : `turn ${step.turn}`),
        step.tool ? badge(step.tool, "tool") : badge("no tool call", "unscored"),
        marks, h("span", { class: "meta" }, meta.join(" · "))),
      step.message ? longText(step.message, "msg") : null,
      args,
      result,
      step.error ? h("div", { class: "err" }, "error: " + step.error) : null,
      (step.extra_calls || []).map((c) => h("div", { class: "note" }, `not executed (one call per turn): ${c.tool} ${esc(c.arguments)}`)),
      (step.notes || []).map((n) => h("div", { class: "note" }, "harness: " + n)),
      step.reasoning ? h("details", {}, h("summary", {}, "reasoning"), h("pre", {}, step.reasoning)) : null,
      (step.retry_log || []).length ? h("details", {}, h("summary", {}, `retry log (${step.retry_log.length})`),
        h("pre", {}, step.retry_log.map((e) => JSON.stringify(e)).join("\n"))) : null);
  }
  // One cell's text for any value: a nested object as "key: value; ..." (never "[object Object]").
  function display(v, sep) {
    if (v === undefined || v === null) return "";
    if (Array.isArray(v)) return v.map((x) => display(x, ", ")).join(sep || ", ");
    if (typeof v === "object") return Object.entries(v).map(([k, x]) => `${k}: ${display(x, ", ")}`).join("; ");
    return String(v);
  }
  function productRows(target, rec, failedFields) {
    const keys = ["product_id", "title", "store", "main_category", "price", "average_rating", "rating_number"];
    const details = new Set([...Object.keys((target || {}).details || {}), ...Object.keys((rec || {}).details || {})]);
    const value = (p, k) => {
      if (!p) return "";
      if (k.startsWith("details.")) return display((p.details || {})[k.slice(8)], ", ");
      return display(p[k], " | ");
    };
    const fields = [...keys, ...[...details].sort().map((k) => "details." + k), "features"];
    return fields.map((k) => {
      const a = value(target, k), b = value(rec, k);
      const cls = [a !== b && rec ? "diff" : "", failedFields.has(k) ? "failed" : ""].join(" ").trim();
      return h("tr", { class: cls || null }, h("td", { class: "k" }, k), h("td", { class: "v" }, a), h("td", { class: "v" }, b));
    });
  }
  // The answer first: the episode's verdict, then each failed rubric with where its source was consulted.
  function verdictBox(d, row) {
    const j = d.judgement;
    const parts = !j ? [row.outcome === "pending" ? "not judged yet (the run is in progress)" : "not judged"]
      : j.runtime_error ? ["judge error: " + esc(j.error)]
      : [j.exact ? "the target product" : "not the target product",
        j.all_satisfied === true ? "every rubric satisfied" : j.all_satisfied === false ? "some rubric failed" : "rubrics unscored",
        `judge ${esc(j.judge)}`];
    return h("div", { class: "box verdict", id: "verdict" }, h("b", {}, "Verdict: "), outcomeBadge(row.outcome), " ",
      parts.join(" · "), " · recommended ", d.recommended ? h("b", {}, d.recommended) : "nothing");
  }
  function jumpTo(turn) {
    const step = document.getElementById(`turn-${turn}`);
    if (!step) return;
    step.scrollIntoView({ block: "center" });
    step.classList.add("jumped");
    setTimeout(() => step.classList.remove("jumped"), 1500);
  }
  function consulted(learn) {
    const where = { query: "the query (first search)", profile: "the profile (get_user_profile)",
      clarification: `clarification ${learn && learn.slot ? learn.slot : ""} (ask_user)` }[learn && learn.where] || esc(learn && learn.where);
    if (!learn || learn.turn === null || learn.turn === undefined) return h("span", { class: "never" }, `${where}: never consulted`);
    const link = h("a", { href: location.hash, class: "jump", "data-turn": learn.turn }, `${where}: consulted at call #${learn.call} ↓`);
    link.addEventListener("click", (e) => { e.preventDefault(); jumpTo(learn.turn); });
    return link;
  }
  function failedRubrics(verdicts) {
    const failed = verdicts.filter((v) => v.satisfied === false);
    return h("div", { id: "failed-rubrics" }, h("h2", {}, `Failed rubrics (${failed.length})`),
      failed.length ? table(["rubric", "source", "type", "field", "expected", "evidence", "source consulted"],
        failed.map((v) => [v.id, v.source, v.type, v.field || "", JSON.stringify(v.expected),
          [v.evidence, v.reasoning].filter(Boolean).join(" — "), consulted(v.learn)]), { cls: "failed" })
        : h("p", { class: "muted" }, verdicts.some((v) => v.satisfied !== undefined) ? "none" : "not judged yet"));
  }
  async function renderEpisode(app, r, i, current) {
    const run = state.runs[r];
    const list = listOf(r);
    const row = list.rows[i];
    if (!row) { app.appendChild(h("p", { class: "err" }, `no episode ${i} in run ${run.name}`)); return; }
    const task = run.tasks[row.task] || {};
    const order = list.shown.length ? list.shown : list.rows;
    const at = order.findIndex((x) => x.i === i);
    const link = (k, text) => (k >= 0 && k < order.length ? h("a", { href: `#/run/${r}/episode/${order[k].i}`, id: text }, text) : h("span", { class: "muted" }, text));
    app.appendChild(h("div", { class: "pn" }, h("a", { href: `#/run/${r}/episodes` }, "← episodes"), link(at - 1, "previous"), link(at + 1, "next"),
      h("span", { class: "muted" }, at >= 0 ? `${at + 1} of ${order.length}` : "")));
    app.appendChild(h("h1", {}, `${row.task} · trial ${row.trial} · ${row.model} `, outcomeBadge(row.outcome), " ",
      badge(row.termination, row.termination === "recommended" ? "" : "unscored")));
    const d = await detail(r, i);
    if (!current()) return;
    const verdicts = {};
    (d.verdicts || []).forEach((v) => { verdicts[v.id] = v; });
    const usage = d.usage || {};
    app.appendChild(h("div", { class: "muted" }, [`intent ${row.intent}`, `${row.calls} tool calls`, `${row.asks} ask_user`,
      `${row.profile_reads} profile reads`, `tokens ${usage.input_tokens || 0} in / ${usage.output_tokens || 0} out`,
      usage.cost_usd === null ? "cost unknown" : `cost $${fmtNum(usage.cost_usd || 0, 6)}`, `${fmtNum(row.wall_s, 2)} s`, d.attempts > 1 ? `${d.attempts} attempts` : null]
      .filter(Boolean).join(" · ")));
    if (d.error) app.appendChild(h("div", { class: "err box" }, "episode error: " + d.error));
    app.appendChild(verdictBox(d, row));
    app.appendChild(failedRubrics(d.verdicts || []));
    app.appendChild(h("h2", {}, "Query"));
    app.appendChild(h("div", { class: "query", id: "query" }, task.query));
    const slotRows = (task.slots || []).map((s) => {
      const step = (d.steps || []).find((x) => x.reveal && x.reveal.slot === s.slot);
      return [s.slot, s.rubrics.join(", "), s.hidden_info, step ? `call ${step.call}` : "not revealed"];
    });
    app.appendChild(h("details", {}, h("summary", {}, `Hidden requirements: profile and ${slotRows.length} clarification slot(s)`),
      h("h3", {}, "Profile"), h("pre", {}, JSON.stringify(task.persona, null, 2)),
      slotRows.length ? table(["slot", "rubrics", "hidden info", "revealed"], slotRows) : null));
    if (d.system !== undefined && d.system !== null) {
      app.appendChild(h("details", {}, h("summary", {}, "System prompt"), h("pre", {}, run.system_prompts[d.system])));
    }
    app.appendChild(h("h2", {}, `Timeline (${(d.steps || []).length} turns)`));
    (d.preface || []).forEach((n) => app.appendChild(h("div", { class: "note" }, n)));
    app.appendChild(h("ol", { class: "timeline", id: "timeline" }, (d.steps || []).map((s) => stepView(s, task, verdicts))));
    app.appendChild(h("h2", {}, "Recommendation"));
    app.appendChild(h("div", { class: "box", id: "recommendation" },
      d.recommended ? h("div", {}, "recommended ", h("b", {}, d.recommended), d.predicted ? "" : " (not a valid product)",
        row.exact ? " — the target" : "") : h("div", { class: "muted" }, "no recommendation"),
      d.reasoning ? longText(d.reasoning, "msg") : null));
    app.appendChild(h("h2", {}, "Rubrics"));
    if (d.judgement && d.judgement.runtime_error) app.appendChild(h("div", { class: "err" }, "judge error: " + esc(d.judgement.error)));
    app.appendChild(h("div", { id: "verdicts" }, table(["rubric", "source", "type", "field", "expected", "verdict", "method", "evidence", "where to learn it"],
      (d.verdicts || []).map((v) => [v.id, v.source, v.type, v.field || "", JSON.stringify(v.expected), verdictBadge(v.satisfied),
        v.method || "", [v.evidence, v.reasoning].filter(Boolean).join(" — "), learnText(v.learn, v.satisfied)]))));
    document.querySelectorAll("#verdicts tbody tr").forEach((tr, n) => {
      if ((d.verdicts[n] || {}).satisfied === false) tr.className = "failed-rubric";
    });
    const failedFields = new Set((d.verdicts || []).filter((v) => v.satisfied === false).map((v) => v.field));
    app.appendChild(h("h2", {}, "Target and recommended product"));
    const rec = d.recommended_product;
    app.appendChild(h("div", { class: "muted" }, rec ? `recommended product's record from ${run.product_source}; differing values highlighted, fields of failed rubrics in red`
      : (d.recommended ? "the recommended product's record is not available" : "nothing was recommended")));
    app.appendChild(h("table", { class: "t", id: "products" }, h("thead", {}, h("tr", {}, h("th", {}, "field"), h("th", {}, "target"),
      h("th", {}, "recommended"))), h("tbody", {}, productRows(task.target, rec, failedFields))));
  }

  // ---------------------------------------------------------------------------------------- compare page
  function deltaText(d) {
    if (!d || d.delta === null || d.delta === undefined) return "n/a";
    const pp = (x) => (x > 0 ? "+" : "") + (100 * x).toFixed(1);
    return `${pp(d.delta)} pp [${pp(d.low)}, ${pp(d.high)}]`;
  }
  function deltaCell(d) {
    const cls = d && d.low > 0 ? "delta pos" : d && d.high < 0 ? "delta neg" : "delta";
    return h("span", { class: cls }, deltaText(d));
  }
  function renderCompare(app, k) {
    const cmp = state.data.compare;
    const pairs = cmp.paired;
    const p = pairs[Math.min(Math.max(k, 0), pairs.length - 1)];
    const base = cmp.labels[p.baseline], other = cmp.labels[p.other];
    app.appendChild(h("h1", {}, `Compare: ${other} against ${base}`));
    if (pairs.length > 1) {
      const pick = h("select", { id: "pair-pick" }, pairs.map((q, n) => h("option", { value: n, selected: n === k ? true : null }, `${cmp.labels[q.other]} vs ${base}`)));
      pick.addEventListener("change", () => { location.hash = `#/compare/${pick.value}`; });
      app.appendChild(h("label", {}, "pair ", pick));
    }
    app.appendChild(h("p", { class: "muted" }, `${p.pairs} episodes paired by task and trial` +
      (p.only_baseline || p.only_other ? `; ${p.only_baseline} only in ${base}, ${p.only_other} only in ${other} (left out)` : "") +
      ". Deltas are " + other + " minus " + base + " in percentage points, with a paired bootstrap 95% CI over tasks."));
    const rows = [["accuracy", p.accuracy], ["rubric satisfaction", p.rubric_satisfaction]];
    Object.entries(p.by_source).forEach(([s, d]) => rows.push([`satisfaction: ${s}`, d]));
    Object.entries(p.by_intent).forEach(([s, d]) => rows.push([`accuracy: ${s}`, d]));
    app.appendChild(h("h2", {}, "Paired deltas"));
    app.appendChild(h("div", { id: "deltas" }, table(["measure", "delta [95% CI]", "tasks", "pairs"],
      rows.map(([name, d]) => [name, deltaCell(d), d.tasks, d.pairs]))));
    app.appendChild(h("h2", {}, `Flipped tasks (${p.flips.length})`));
    const epLink = (run, idx) => idx.map((i, n) => [n ? " " : "", h("a", { href: `#/run/${run}/episode/${i}` }, `#${i}`)]);
    app.appendChild(h("div", { id: "flips" }, p.flips.length ? table(["task", "intent", base, other, "change", "episodes"],
      p.flips.map((f) => [f.task, f.intent, `${f.a[0]}/${f.a[1]} correct`, `${f.b[0]}/${f.b[1]} correct`,
        h("span", { class: f.change > 0 ? "delta pos" : "delta neg" }, (f.change > 0 ? "+" : "") + (100 * f.change).toFixed(0) + " pp"),
        h("span", {}, base + ": ", epLink(p.baseline, f.a[2]), " · " + other + ": ", epLink(p.other, f.b[2]))]))
      : h("p", { class: "muted" }, "no task changed its outcome")));
    app.appendChild(h("h2", {}, "Tables over the runs"));
    app.appendChild(h("div", { id: "compare-tables" }, cmp.tables.map(plainTable)));
    if ((cmp.plots || []).length) {
      app.appendChild(h("h2", {}, "Plots"));
      app.appendChild(h("div", { class: "plots" }, cmp.plots.map((q) => h("figure", {}, h("img", { src: q.src, alt: q.title })))));
    }
  }

  // ---------------------------------------------------------------------------------------- start
  async function start() {
    const data = await decode(document.getElementById("ecab-main"));
    window.ecabTiming.decoded = performance.now();
    state.data = data;
    state.runs = data.runs;
    const episodes = state.runs.reduce((n, run) => n + run.rows.length, 0);
    const progress = state.runs.map((run) => run.status).filter((st) => st && st.state !== "finished");
    document.getElementById("status").textContent =
      `${state.runs.length} run(s) · ${episodes} episodes · generated ${data.generated}` +
      progress.map((st) => ` · ${st.text}`).join("");
    if (data.live) follow(data.live);
    window.addEventListener("hashchange", () => { show().catch(fail); });
    await show();
    window.ecabTiming.firstRender = performance.now();
    document.body.dataset.ready = "1";
  }
  // Served live (server.py): ask status.json beside the page whether the run folder changed, and reload (the
  // route in the hash is kept) when the server rendered a newer version.
  function follow(version) {
    const poll = () => fetch("status.json", { cache: "no-store" }).then((r) => r.json()).then((st) => {
      if (st.version && st.version !== version) location.reload();
      else setTimeout(poll, POLL_MS);
    }).catch(() => setTimeout(poll, POLL_MS));
    setTimeout(poll, POLL_MS);
  }
  function fail(error) {
    const app = document.getElementById("app");
    app.textContent = "";
    app.appendChild(h("p", { class: "err" }, "The report could not be shown: " + (error && error.message ? error.message : error)));
    console.error(error);
  }
  start().catch(fail);
})();
