// Hermes dashboard: a small page over the API server. No framework, no build step.
// The token lives in sessionStorage and goes out as an Authorization header only; text from the
// server is always set as textContent, never parsed as HTML.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
let TOKEN = sessionStorage.getItem("hermes_token") || "";
let current = { session: null, run: null };

function el(tag, attrs = {}, ...kids) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
    else if (k === "class") node.className = v;
    else if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return node;
}

function when(iso) {
  if (!iso) return "-";
  const d = typeof iso === "number" ? new Date(iso * 1000) : new Date(iso);
  return isNaN(d) ? String(iso) : d.toLocaleString();
}

class ApiError extends Error {}

async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + TOKEN };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers,
    body: body === undefined ? undefined : JSON.stringify(body) });
  if (resp.status === 401) { logout("The server refused the token; log in again."); }
  const data = await resp.json().catch(() => null);
  if (!resp.ok) throw new ApiError((data && data.error && data.error.message) || resp.statusText);
  return data;
}

function page(title, ...kids) {
  const main = $("#main");
  main.replaceChildren(el("h2", {}, title), ...kids);
  return main;
}

function failure(err) { return el("p", { class: "error", role: "alert" }, String(err.message || err)); }

// ---- login -----------------------------------------------------------------------------------
function logout(message) {
  TOKEN = "";
  sessionStorage.removeItem("hermes_token");
  $("#app").hidden = true;
  $("#login").hidden = false;
  $("#login-error").textContent = message || "";
}

async function login(token) {
  const resp = await fetch("/v1/capabilities", { headers: { Authorization: "Bearer " + token } });
  if (!resp.ok) {
    $("#login-error").textContent = resp.status === 401
      ? "Wrong token: the server refused it." : "The server answered " + resp.status + ".";
    return false;
  }
  TOKEN = token;
  sessionStorage.setItem("hermes_token", token);
  $("#login").hidden = true;
  $("#app").hidden = false;
  route();
  return true;
}

// ---- server-sent events over fetch (EventSource cannot send a header) ---------------------------
async function follow(runId, onEvent) {
  const resp = await fetch(`/v1/runs/${runId}/events`, { headers: { Authorization: "Bearer " + TOKEN } });
  if (!resp.ok) throw new ApiError("events: " + resp.status);
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data += line.slice(5).trim();
      }
      if (data) onEvent(name, JSON.parse(data));
    }
  }
}

// ---- chat ------------------------------------------------------------------------------------
function bubble(role, text, inactive) {
  return el("div", { class: `msg ${role}${inactive ? " inactive" : ""}` },
    inactive ? el("span", { class: "tag" }, "compacted") : null, inactive ? " " : null, text || "");
}

function renderMessages(box, rows) {
  box.replaceChildren();
  for (const m of rows) {
    if (m.role === "tool") box.append(bubble("tool", `↳ ${m.tool_name || "tool"}: ` +
      String(m.content || "").slice(0, 300), !m.active));
    else if (m.role === "assistant" && !m.content && m.tool_calls) {
      const names = (Array.isArray(m.tool_calls) ? m.tool_calls : []).map(
        (c) => (c.function || {}).name).join(", ");
      box.append(bubble("tool", `⚙ calls ${names}`, !m.active));
    } else if (m.role === "user" || m.role === "assistant") box.append(bubble(m.role, m.content, !m.active));
  }
  box.scrollTop = box.scrollHeight;
}

async function chatPage() {
  const list = el("div", { class: "list" });
  const box = el("div", { id: "transcript" });
  const input = el("textarea", { id: "chat-input", rows: 3, placeholder: "Message Hermes…" });
  const stop = el("button", { class: "danger", hidden: true, on: { click: () => current.run &&
    api("POST", `/v1/runs/${current.run}/stop`, {}) } }, "Stop");
  const send = el("button", { type: "submit" }, "Send");
  const form = el("form", { class: "row", on: { submit: (e) => { e.preventDefault();
    sendMessage(input, box, send, stop).catch((err) => box.append(failure(err))); } } },
    el("div", { class: "grow" }, input), send, stop);
  const fresh = el("button", { class: "ghost", on: { click: () => { current.session = null;
    box.replaceChildren(el("p", { class: "muted" }, "A new conversation.")); } } }, "New chat");
  page("Chat", el("div", { class: "cols" },
    el("div", { class: "card" }, fresh, list),
    el("div", { class: "card" }, box, form)));
  try {
    const data = await api("GET", "/api/sessions?limit=30");
    for (const s of data.data) {
      const link = el("a", { on: { click: () => openSession(s.id, box, list, link) } },
        s.title || (s.preview || s.id).slice(0, 40), " ", el("span", { class: "tag" }, s.source));
      list.append(link);
      if (s.id === current.session) link.classList.add("on");
    }
    if (!current.session && data.data.length) current.session = data.data[0].id;
    if (current.session) await openSession(current.session, box, list, list.querySelector("a"));
    else box.append(el("p", { class: "muted" }, "Start a conversation: type below."));
  } catch (err) { list.append(failure(err)); }
}

async function openSession(id, box, list, link) {
  current.session = id;
  for (const a of list.querySelectorAll("a")) a.classList.remove("on");
  if (link) link.classList.add("on");
  const rows = await api("GET", `/api/sessions/${id}/messages?limit=1000`);
  renderMessages(box, rows.data);
}

async function sendMessage(input, box, send, stop) {
  const text = input.value.trim();
  if (!text) return;
  if (!current.session) current.session = (await api("POST", "/api/sessions", {})).id;
  input.value = "";
  box.querySelector("p.muted")?.remove();
  box.append(bubble("user", text));
  const answer = bubble("assistant", "");
  answer.classList.add("streaming");
  box.append(answer);
  const run = await api("POST", "/v1/runs", { input: text, session_id: current.session });
  current.run = run.id;
  send.disabled = true;
  stop.hidden = false;
  const tools = {};
  let streamed = "";
  try {
    await follow(run.id, (name, ev) => {
      if (name === "message.delta") { streamed += ev.delta; answer.lastChild.textContent = streamed; }
      else if (name === "tool.started") {
        const args = ev.args && (ev.args.command || ev.args.path || ev.args.query);
        tools[ev.tool_call_id] = el("div", { class: "tool-line" },
          `⚙ ${ev.tool}${args ? ": " + String(args).slice(0, 120) : ""} …`);
        box.insertBefore(tools[ev.tool_call_id], answer);
      } else if (name === "tool.completed") {
        const line = tools[ev.tool_call_id];
        if (line) line.textContent = line.textContent.replace(/ …$/, "") + (ev.ok ? " ✓" : " ✗ failed");
      } else if (name === "approval.requested") box.insertBefore(approvalCard(run.id, ev), answer);
      else if (name === "approval.resolved") {
        document.getElementById("apr-" + ev.approval_id)?.remove();
        box.insertBefore(el("div", { class: "tool-line" }, `approval: ${ev.choice} (${ev.how})`), answer);
      } else if (name === "run.completed" || name === "run.cancelled") {
        if (!streamed && ev.output) answer.lastChild.textContent = ev.output;
        if (name === "run.cancelled") answer.append(el("div", { class: "muted" }, "(stopped)"));
      } else if (name === "run.failed") answer.replaceChildren(failure(ev.error || "failed"));
      box.scrollTop = box.scrollHeight;
    });
  } finally {
    answer.classList.remove("streaming");
    answer.classList.add("done");
    current.run = null;
    send.disabled = false;
    stop.hidden = true;
  }
}

function approvalCard(runId, ev) {
  const answer = (choice) => api("POST", `/v1/runs/${runId}/approval`,
    { choice, approval_id: ev.approval_id }).catch((err) => card.append(failure(err)));
  const card = el("div", { class: "card approval", id: "apr-" + ev.approval_id, role: "alertdialog" },
    el("strong", {}, "Approval needed: "), ev.reason, el("pre", {}, ev.command),
    el("div", { class: "row" },
      el("button", { on: { click: () => answer("once") } }, "Allow once"),
      el("button", { class: "ghost", on: { click: () => answer("always") } }, "Always (this session)"),
      el("button", { class: "danger", on: { click: () => answer("deny") } }, "Deny")));
  return card;
}

// ---- sessions --------------------------------------------------------------------------------
async function sessionsPage() {
  const results = el("div", { class: "list" });
  const reader = el("div", {});
  const q = el("input", { id: "search", class: "grow", placeholder: "Search every conversation" });
  const form = el("form", { class: "row", on: { submit: async (e) => { e.preventDefault();
    const hits = await api("GET", "/api/dashboard/search?q=" + encodeURIComponent(q.value));
    showList(results, reader, hits.data.map((h) => ({ id: h.session_id, label: h.title || h.session_id,
      note: h.snippet }))); } } }, q, el("button", {}, "Search"));
  page("Sessions", el("div", { class: "card" }, form),
    el("div", { class: "cols" }, el("div", { class: "card" }, results), el("div", { class: "card" }, reader)));
  const data = await api("GET", "/api/sessions?limit=50");
  showList(results, reader, data.data.map((s) => ({ id: s.id, label: s.title || s.preview || s.id,
    note: `${s.source} · ${s.message_count} messages · ${when(s.updated_at)}` })));
}

function showList(results, reader, items) {
  results.replaceChildren();
  if (!items.length) results.append(el("p", { class: "muted" }, "Nothing found."));
  for (const item of items) {
    results.append(el("a", { on: { click: async () => {
      const rows = await api("GET", `/api/sessions/${item.id}/messages?limit=1000&include_inactive=true`);
      const box = el("div", {});
      renderMessages(box, rows.data);
      reader.replaceChildren(el("div", { class: "muted" }, item.id), box);
    } } }, String(item.label).slice(0, 60), el("div", { class: "muted" }, item.note || "")));
  }
}

// ---- cron ------------------------------------------------------------------------------------
async function cronPage() {
  const table = el("tbody", {});
  const detail = el("div", {});
  const f = { schedule: el("input", { id: "cron-schedule", placeholder: "every 1h" }),
    prompt: el("input", { id: "cron-prompt", class: "grow", placeholder: "what to do" }),
    name: el("input", { id: "cron-name", placeholder: "name (optional)" }) };
  const note = el("p", {});
  const form = el("form", { class: "row", on: { submit: async (e) => { e.preventDefault();
    try {
      const body = { schedule: f.schedule.value, prompt: f.prompt.value };
      if (f.name.value) body.name = f.name.value;
      const job = await api("POST", "/api/jobs", body);
      note.replaceChildren(el("span", { class: "ok" }, `Created ${job.name || job.id}.`));
      await fill();
    } catch (err) { note.replaceChildren(failure(err)); } } } },
    f.schedule, f.prompt, f.name, el("button", {}, "Create"));
  page("Cron jobs", el("div", { class: "card" }, form, note), el("div", { class: "card" },
    el("table", {}, el("thead", {}, el("tr", {}, ...["Name", "Schedule", "Next run", "State", "Last", ""]
      .map((h) => el("th", {}, h)))), table)), detail);
  async function act(path) {
    try { await api("POST", path, {}); await fill(); } catch (err) { note.replaceChildren(failure(err)); }
  }
  async function runs(job) {
    const data = await api("GET", `/api/jobs/${job.id}`);
    const rows = data.recent_runs.map((r) => el("tr", {}, el("td", {}, r.id), el("td", {}, r.status),
      el("td", {}, when(r.started_at)), el("td", {}, el("button", { class: "ghost", on: { click:
        async () => { const o = await api("GET", `/api/dashboard/cron/runs/${r.id}`);
          out.replaceChildren(el("pre", {}, o.output || o.error || "(no output yet)")); } } }, "Output"))));
    const out = el("div", {});
    detail.replaceChildren(el("div", { class: "card" }, el("strong", {}, `Runs of ${job.name || job.id}`),
      rows.length ? el("table", {}, el("tbody", {}, rows)) : el("p", { class: "muted" }, "No runs yet."), out));
  }
  async function fill() {
    const data = await api("GET", "/api/jobs");
    table.replaceChildren(...data.data.map((j) => el("tr", {}, el("td", {}, j.name || j.id),
      el("td", {}, j.schedule_display), el("td", {}, when(j.next_run_at)), el("td", {}, j.state),
      el("td", {}, j.last_status || "-"), el("td", { class: "row" },
        j.state === "paused"
          ? el("button", { class: "ghost", on: { click: () => act(`/api/jobs/${j.id}/resume`) } }, "Resume")
          : el("button", { class: "ghost", on: { click: () => act(`/api/jobs/${j.id}/pause`) } }, "Pause"),
        el("button", { class: "ghost", on: { click: () => act(`/api/jobs/${j.id}/run`) } }, "Run"),
        el("button", { class: "ghost", on: { click: () => runs(j) } }, "Runs")))));
    if (!data.data.length) table.append(el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No jobs.")));
  }
  await fill();
}

// ---- skills ----------------------------------------------------------------------------------
async function skillsPage() {
  const list = el("div", { class: "list" });
  const view = el("div", {});
  page("Skills", el("div", { class: "cols" }, el("div", { class: "card" }, list), el("div", { class: "card" }, view)));
  const data = await api("GET", "/v1/skills");
  for (const s of data.data) {
    list.append(el("a", { on: { click: () => showSkill(s.name, view) } }, s.name,
      el("div", { class: "muted" }, s.description.slice(0, 90))));
  }
}

async function showSkill(name, view) {
  const s = await api("GET", `/api/dashboard/skills/${encodeURIComponent(name)}`);
  const note = el("p", {});
  const revert = async (version) => {
    try {
      const after = await api("POST", `/api/dashboard/skills/${encodeURIComponent(name)}/revert`, { version });
      await showSkill(name, view);
      view.prepend(el("p", { class: "ok" }, `Reverted ${name} to version ${after.reverted_to}.`));
    } catch (err) { note.replaceChildren(failure(err)); }
  };
  const rows = s.history.slice().reverse().map((v) => el("tr", {}, el("td", {}, v.version),
    el("td", {}, when(v.time)), el("td", {}, `${v.action} by ${v.by}`),
    el("td", {}, el("button", { class: "ghost", on: { click: () => revert(v.version) } }, "Revert to this"))));
  view.replaceChildren(el("h3", {}, name), note,
    s.history.length ? el("button", { id: "revert-latest", on: { click: () => revert(null) } },
      "Undo the last change") : el("p", { class: "muted" }, "No saved versions."),
    rows.length ? el("table", {}, el("tbody", {}, rows)) : null,
    el("pre", { class: "card", id: "skill-text" }, s.text || "(deleted)"));
}

// ---- memory, config, status ------------------------------------------------------------------
async function memoryPage() {
  const data = await api("GET", "/api/dashboard/memory");
  const cards = Object.entries(data).map(([target, m]) => {
    const area = el("textarea", { id: "memory-" + target }, m.text);
    const note = el("p", { class: "muted" }, `${m.entries} entries, ${m.used}/${m.limit} chars · ${m.path}`);
    let expected = m.text;
    const save = async () => {
      try {
        const after = await api("PUT", `/api/dashboard/memory/${target}`, { text: area.value, expected });
        expected = after[target].text;
        note.replaceChildren(el("span", { class: "ok" }, `Saved: ${after[target].entries} entries.`));
      } catch (err) { note.replaceChildren(failure(err)); }
    };
    return el("div", { class: "card" }, el("strong", {}, target === "user" ? "USER.md" : "MEMORY.md"),
      area, el("div", { class: "row" }, el("button", { on: { click: save } }, "Save"), note));
  });
  page("Memory", el("p", { class: "muted" }, "Entries are separated by a line holding only §."), ...cards);
}

async function configPage() {
  const data = await api("GET", "/api/dashboard/config");
  const key = el("input", { id: "config-key", placeholder: "model.default" });
  const value = el("input", { id: "config-value", class: "grow", placeholder: "value" });
  const note = el("p", {});
  const yaml = el("pre", { id: "config-yaml" }, data.yaml || "(no config.yaml: built-in defaults)");
  const form = el("form", { class: "row", on: { submit: async (e) => { e.preventDefault();
    try {
      const after = await api("POST", "/api/dashboard/config", { key: key.value, value: value.value });
      note.replaceChildren(el("span", { class: "ok" }, after.message));
      yaml.textContent = after.yaml;
    } catch (err) { note.replaceChildren(failure(err)); } } } }, key, value, el("button", {}, "Set"));
  const env = Object.entries(data.env).map(([k, v]) => el("div", {}, `${k}=${v}`));
  page("Config", el("div", { class: "card" }, form, note),
    el("div", { class: "card" }, el("div", { class: "muted" }, data.path), yaml),
    el("div", { class: "card" }, el("div", { class: "muted" }, data.env_path), env.length ? env : "(empty)"));
}

async function statusPage() {
  const [s, logs] = await Promise.all([api("GET", "/api/dashboard/status"),
    api("GET", "/api/dashboard/logs")]);
  const g = s.gateway;
  const here = s.this_process;
  const logCards = Object.entries(logs.logs).map(([name, text]) =>
    el("div", { class: "card" }, el("strong", {}, name), el("pre", { class: "log" }, text)));
  page("Status",
    el("div", { class: "card" }, el("div", {}, `Served by: ${s.served_by}`),
      el("div", {}, `Turns in flight: ${here.turns.in_flight}, queued: ${here.turns.queued}, ` +
        `limit: ${here.turns.limit}; completed: ${here.turns_completed}; sessions: ${here.sessions}`)),
    el("div", { class: "card" }, el("strong", {}, "Gateway"), g
      ? el("div", {}, `${g.state} (pid ${g.pid}), platforms: ${(g.platforms || []).join(", ")}, ` +
        `updated ${when(g.updated_at)}`) : el("p", { class: "muted" }, "No gateway has run here.")),
    ...(logCards.length ? logCards : [el("p", { class: "muted" }, "No log files yet.")]));
}

// ---- routing ---------------------------------------------------------------------------------
const PAGES = { chat: chatPage, sessions: sessionsPage, cron: cronPage, skills: skillsPage,
  memory: memoryPage, config: configPage, status: statusPage };

function route() {
  if (!TOKEN) return;
  const name = (location.hash.slice(1) || "chat").split("?")[0];
  const show = PAGES[name] || chatPage;
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("on", a.hash === "#" + name);
  show().catch((err) => $("#main").append(failure(err)));
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", () => {
  $("#login-form").addEventListener("submit", (e) => { e.preventDefault(); login($("#token").value.trim()); });
  $("#logout").addEventListener("click", () => logout(""));
  const fromLink = location.hash.match(/^#token=([^&]+)/);
  if (fromLink) {
    history.replaceState(null, "", location.pathname + "#chat");  // the token leaves the address bar
    login(decodeURIComponent(fromLink[1]));
  } else if (TOKEN) login(TOKEN).then((ok) => ok || logout("The saved token no longer works."));
  else logout("");
});
