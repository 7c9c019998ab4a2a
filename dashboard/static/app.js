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

function failure(err) {
  return el("p", { class: "error", role: "alert" }, String(err.message || err));
}

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
  const headers = { Authorization: "Bearer " + TOKEN };
  const resp = await fetch(`/v1/runs/${runId}/events`, { headers });
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
    } else if (m.role === "user" || m.role === "assistant") {
      box.append(bubble(m.role, m.content, !m.active));
    }
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
      if (name === "message.delta") {
        streamed += ev.delta;
        answer.lastChild.textContent = streamed;
      }
      else if (name === "tool.started") {
        const args = ev.args && (ev.args.command || ev.args.path || ev.args.query);
        tools[ev.tool_call_id] = el("div", { class: "tool-line" },
          `⚙ ${ev.tool}${args ? ": " + String(args).slice(0, 120) : ""} …`);
        box.insertBefore(tools[ev.tool_call_id], answer);
      } else if (name === "tool.completed") {
        const line = tools[ev.tool_call_id];
        const mark = ev.ok ? " ✓" : " ✗ failed";
        if (line) line.textContent = line.textContent.replace(/ …$/, "") + mark;
      } else if (name === "approval.requested") box.insertBefore(approvalCard(run.id, ev), answer);
      else if (name === "approval.resolved") {
        document.getElementById("apr-" + ev.approval_id)?.remove();
        const said = el("div", { class: "tool-line" }, `approval: ${ev.choice} (${ev.how})`);
        box.insertBefore(said, answer);
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
  const card = el("div", { class: "card approval", id: "apr-" + ev.approval_id,
    role: "alertdialog" },
    el("strong", {}, "Approval needed: "), ev.reason, el("pre", {}, ev.command),
    el("div", { class: "row" },
      el("button", { on: { click: () => answer("once") } }, "Allow once"),
      el("button", { class: "ghost", on: { click: () => answer("always") } },
        "Always (this session)"),
      el("button", { class: "danger", on: { click: () => answer("deny") } }, "Deny")));
  return card;
}

// ---- routing ---------------------------------------------------------------------------------
// pages.js defines the other pages; it loads after this file, so look them up when routing
const pages = () => ({ chat: chatPage, sessions: sessionsPage, cron: cronPage,
  skills: skillsPage, memory: memoryPage, config: configPage, status: statusPage });

function route() {
  if (!TOKEN) return;
  const name = (location.hash.slice(1) || "chat").split("?")[0];
  const show = pages()[name] || chatPage;
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("on", a.hash === "#" + name);
  }
  show().catch((err) => $("#main").append(failure(err)));
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", () => {
  $("#login-form").addEventListener("submit", (e) => {
    e.preventDefault();
    login($("#token").value.trim());
  });
  $("#logout").addEventListener("click", () => logout(""));
  const fromLink = location.hash.match(/^#token=([^&]+)/);
  if (fromLink) {
    history.replaceState(null, "", location.pathname + "#chat");  // the token leaves the URL bar
    login(decodeURIComponent(fromLink[1]));
  } else if (TOKEN) login(TOKEN).then((ok) => ok || logout("The saved token no longer works."));
  else logout("");
});
