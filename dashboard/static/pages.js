// Hermes dashboard: the pages besides the chat (sessions, cron, skills, memory, config, status).
// Uses el(), api(), page(), when(), failure() and renderMessages() from app.js (loaded first).
"use strict";

const card = (...kids) => el("div", { class: "card" }, ...kids);
const ghost = (label, click, id) => el("button", { class: "ghost", id, on: { click } }, label);
const ok = (text) => el("span", { class: "ok" }, text);

// ---- sessions --------------------------------------------------------------------------------
async function sessionsPage() {
  const results = el("div", { class: "list" });
  const reader = el("div", {});
  const q = el("input", { id: "search", class: "grow", placeholder: "Search every conversation" });
  const search = async (e) => {
    e.preventDefault();
    const hits = await api("GET", "/api/dashboard/search?q=" + encodeURIComponent(q.value));
    showList(results, reader, hits.data.map((h) => ({
      id: h.session_id, label: h.title || h.session_id, note: h.snippet })));
  };
  const form = el("form", { class: "row", on: { submit: search } }, q, el("button", {}, "Search"));
  page("Sessions", card(form), el("div", { class: "cols" }, card(results), card(reader)));
  const data = await api("GET", "/api/sessions?limit=50");
  showList(results, reader, data.data.map((s) => ({
    id: s.id, label: s.title || s.preview || s.id,
    note: `${s.source} · ${s.message_count} messages · ${when(s.updated_at)}` })));
}

function showList(results, reader, items) {
  results.replaceChildren();
  if (!items.length) results.append(el("p", { class: "muted" }, "Nothing found."));
  for (const item of items) {
    const open = async () => {
      const path = `/api/sessions/${item.id}/messages?limit=1000&include_inactive=true`;
      const rows = await api("GET", path);
      const box = el("div", {});
      renderMessages(box, rows.data);
      reader.replaceChildren(el("div", { class: "muted" }, item.id), box);
    };
    results.append(el("a", { on: { click: open } }, String(item.label).slice(0, 60),
      el("div", { class: "muted" }, item.note || "")));
  }
}

// ---- cron ------------------------------------------------------------------------------------
async function cronPage() {
  const table = el("tbody", {});
  const detail = el("div", {});
  const note = el("p", {});
  const f = {
    schedule: el("input", { id: "cron-schedule", placeholder: "every 1h" }),
    prompt: el("input", { id: "cron-prompt", class: "grow", placeholder: "what to do" }),
    name: el("input", { id: "cron-name", placeholder: "name (optional)" }),
  };
  const create = async (e) => {
    e.preventDefault();
    try {
      const body = { schedule: f.schedule.value, prompt: f.prompt.value };
      if (f.name.value) body.name = f.name.value;
      const job = await api("POST", "/api/jobs", body);
      note.replaceChildren(ok(`Created ${job.name || job.id}.`));
      await fill();
    } catch (err) { note.replaceChildren(failure(err)); }
  };
  const form = el("form", { class: "row", on: { submit: create } },
    f.schedule, f.prompt, f.name, el("button", {}, "Create"));
  const heads = ["Name", "Schedule", "Next run", "State", "Last", ""].map((h) => el("th", {}, h));
  page("Cron jobs", card(form, note),
    card(el("table", {}, el("thead", {}, el("tr", {}, ...heads)), table)), detail);

  async function act(path) {
    try {
      await api("POST", path, {});
      await fill();
    } catch (err) { note.replaceChildren(failure(err)); }
  }
  async function runs(job) {
    const data = await api("GET", `/api/jobs/${job.id}`);
    const out = el("div", {});
    const show = async (r) => {
      const o = await api("GET", `/api/dashboard/cron/runs/${r.id}`);
      out.replaceChildren(el("pre", {}, o.output || o.error || "(no output yet)"));
    };
    const rows = data.recent_runs.map((r) => el("tr", {}, el("td", {}, r.id),
      el("td", {}, r.status), el("td", {}, when(r.started_at)),
      el("td", {}, ghost("Output", () => show(r)))));
    const body = rows.length ? el("table", {}, el("tbody", {}, rows))
      : el("p", { class: "muted" }, "No runs yet.");
    detail.replaceChildren(card(el("strong", {}, `Runs of ${job.name || job.id}`), body, out));
  }
  async function fill() {
    const data = await api("GET", "/api/jobs");
    table.replaceChildren(...data.data.map((j) => {
      const base = `/api/jobs/${j.id}`;
      const toggle = j.state === "paused" ? ghost("Resume", () => act(base + "/resume"))
        : ghost("Pause", () => act(base + "/pause"));
      return el("tr", {}, el("td", {}, j.name || j.id), el("td", {}, j.schedule_display),
        el("td", {}, when(j.next_run_at)), el("td", {}, j.state),
        el("td", {}, j.last_status || "-"),
        el("td", { class: "row" }, toggle, ghost("Run", () => act(base + "/run")),
          ghost("Runs", () => runs(j))));
    }));
    if (!data.data.length) {
      table.append(el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No jobs.")));
    }
  }
  await fill();
}

// ---- skills ----------------------------------------------------------------------------------
async function skillsPage() {
  const list = el("div", { class: "list" });
  const view = el("div", {});
  page("Skills", el("div", { class: "cols" }, card(list), card(view)));
  const data = await api("GET", "/v1/skills");
  for (const s of data.data) {
    list.append(el("a", { on: { click: () => showSkill(s.name, view) } }, s.name,
      el("div", { class: "muted" }, s.description.slice(0, 90))));
  }
}

async function showSkill(name, view) {
  const path = `/api/dashboard/skills/${encodeURIComponent(name)}`;
  const s = await api("GET", path);
  const note = el("p", {});
  const revert = async (version) => {
    try {
      const after = await api("POST", path + "/revert", { version });
      await showSkill(name, view);
      view.prepend(el("p", { class: "ok" }, `Reverted ${name} to version ${after.reverted_to}.`));
    } catch (err) { note.replaceChildren(failure(err)); }
  };
  const rows = s.history.slice().reverse().map((v) => el("tr", {}, el("td", {}, v.version),
    el("td", {}, when(v.time)), el("td", {}, `${v.action} by ${v.by}`),
    el("td", {}, ghost("Revert to this", () => revert(v.version)))));
  const undo = s.history.length
    ? el("button", { id: "revert-latest", on: { click: () => revert(null) } },
      "Undo the last change")
    : el("p", { class: "muted" }, "No saved versions.");
  view.replaceChildren(el("h3", {}, name), note, undo,
    rows.length ? el("table", {}, el("tbody", {}, rows)) : null,
    el("pre", { class: "card", id: "skill-text" }, s.text || "(deleted)"));
}

// ---- memory, config, status ------------------------------------------------------------------
function memoryCard(target, m) {
  const area = el("textarea", { id: "memory-" + target }, m.text);
  const usage = `${m.entries} entries, ${m.used}/${m.limit} chars · ${m.path}`;
  const note = el("p", { class: "muted" }, usage);
  let expected = m.text;
  const save = async () => {
    try {
      const after = await api("PUT", `/api/dashboard/memory/${target}`,
        { text: area.value, expected });
      expected = after[target].text;
      note.replaceChildren(ok(`Saved: ${after[target].entries} entries.`));
    } catch (err) { note.replaceChildren(failure(err)); }
  };
  return card(el("strong", {}, target === "user" ? "USER.md" : "MEMORY.md"), area,
    el("div", { class: "row" }, el("button", { on: { click: save } }, "Save"), note));
}

async function memoryPage() {
  const data = await api("GET", "/api/dashboard/memory");
  const cards = Object.entries(data).map(([target, m]) => memoryCard(target, m));
  page("Memory", el("p", { class: "muted" }, "Entries are separated by a line holding only §."),
    ...cards);
}

async function configPage() {
  const data = await api("GET", "/api/dashboard/config");
  const key = el("input", { id: "config-key", placeholder: "model.default" });
  const value = el("input", { id: "config-value", class: "grow", placeholder: "value" });
  const note = el("p", {});
  const yaml = el("pre", { id: "config-yaml" }, data.yaml || "(no config.yaml: built-in defaults)");
  const set = async (e) => {
    e.preventDefault();
    try {
      const after = await api("POST", "/api/dashboard/config",
        { key: key.value, value: value.value });
      note.replaceChildren(ok(after.message));
      yaml.textContent = after.yaml;
    } catch (err) { note.replaceChildren(failure(err)); }
  };
  const form = el("form", { class: "row", on: { submit: set } }, key, value,
    el("button", {}, "Set"));
  const env = Object.entries(data.env).map(([k, v]) => el("div", {}, `${k}=${v}`));
  page("Config", card(form, note), card(el("div", { class: "muted" }, data.path), yaml),
    card(el("div", { class: "muted" }, data.env_path), env.length ? env : "(empty)"));
}

async function statusPage() {
  const [s, logs] = await Promise.all([api("GET", "/api/dashboard/status"),
    api("GET", "/api/dashboard/logs")]);
  const g = s.gateway;
  const here = s.this_process;
  const t = here.turns;
  const logCards = Object.entries(logs.logs).map(([name, text]) =>
    card(el("strong", {}, name), el("pre", { class: "log" }, text)));
  const gateway = g
    ? el("div", {}, `${g.state} (pid ${g.pid}), platforms: ${(g.platforms || []).join(", ")}, ` +
      `updated ${when(g.updated_at)}`)
    : el("p", { class: "muted" }, "No gateway has run here.");
  page("Status",
    card(el("div", {}, `Served by: ${s.served_by}`),
      el("div", {}, `Turns in flight: ${t.in_flight}, queued: ${t.queued}, limit: ${t.limit}; ` +
        `completed: ${here.turns_completed}; sessions: ${here.sessions}`)),
    card(el("strong", {}, "Gateway"), gateway),
    ...(logCards.length ? logCards : [el("p", { class: "muted" }, "No log files yet.")]));
}
