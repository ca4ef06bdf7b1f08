// The dashboard page: polls the admin API, keeps the last minutes of figures in
// a ring for the charts, draws the supervision tree, fills the tables.

import { ApiError, get, post, setToken, Unauthorized } from "./api.js";
import { LineChart } from "./chart.js";
import { Ring } from "./ring.js";
import { SearchTable } from "./table.js";
import { TreeView } from "./tree.js";
import { figures } from "./figures.js";

const WINDOW_SECONDS = 300;
const STATS_MS = 1000;
const TREE_MS = 1000;
const TABLES_MS = 3000;

const $ = (selector) => document.querySelector(selector);

const ring = new Ring(WINDOW_SECONDS + 10);
const charts = [
  new LineChart($("#chart-rates"), [
    { key: "in", label: "in", color: "#2b7bb9" },
    { key: "out", label: "out", color: "#d9822b", dash: [5, 4] },   // often equal to in
    { key: "dropped", label: "dropped", color: "#c23030" },
  ], WINDOW_SECONDS),
  new LineChart($("#chart-connections"), [
    { key: "connected", label: "connected", color: "#0f9960" },
    { key: "offline", label: "offline sessions", color: "#8a9ba8" },
  ], WINDOW_SECONDS),
  new LineChart($("#chart-queues"), [
    { key: "queued", label: "queued", color: "#7157d9" },
    { key: "inflight", label: "in flight", color: "#d13913" },
    { key: "stored", label: "stored offline", color: "#8a9ba8" },
  ], WINDOW_SECONDS),
  new LineChart($("#chart-fsync"), [
    { key: "fsync_mean", label: "mean", color: "#29a634" },
    { key: "fsync_p99", label: "p99 (bucket)", color: "#a66321" },
  ], WINDOW_SECONDS),
];

const tree = new TreeView($("#tree"), showActor, () => pollTree().catch(failed));
const pick = (row) => showClient(row.client_id);
const clients = new SearchTable($("#clients-panel"), ["client_id", "peer", "protocol_level"], pick);
const sessions = new SearchTable($("#sessions-panel"),
  ["client_id", "state", "clean_session", "queued", "inflight", "hibernated"], pick);
const busiest = new SearchTable($("#top-panel"),
  ["client_id", "packets_in", "packets_out", "bytes_in", "bytes_out"]);
const busiestTopics = new SearchTable($("#top-topics-panel"), ["topic", "messages_per_s"]);
const retained = new SearchTable($("#retained-panel"), ["topic", "qos", "payload_bytes", "payload"]);

let pickedClient = null;   // the client whose session is shown, refreshed with the tables
let retainedFilter = "#";  // the filter last submitted (the timer does not browse half-typed ones)
let waitingForToken = false;

function status(state, text) {
  const node = $("#status");
  node.dataset.state = state;
  node.textContent = text;
}

function failed(error) {
  if (error instanceof Unauthorized) {
    waitingForToken = true;
    $("#auth").hidden = false;
    $("#auth-token").value = "";
    $("#auth-token").focus();
    status("auth", "token needed");
  } else {
    status("error", String(error.message || error));
  }
}

function drawCharts() {
  const now = Date.now();
  for (const chart of charts) chart.draw(ring, now);
}

async function pollStats() {
  const stats = await get("stats");
  ring.push(Date.now(), figures(stats));
  busiest.set(stats.top || [], (stats.top || []).length);
  busiestTopics.set(stats.top_topics || [], (stats.top_topics || []).length);
  if (stats.node) $("#node-name").textContent = stats.node;
  if (Number.isFinite(stats.uptime)) $("#uptime").textContent = `up ${formatUptime(stats.uptime)}`;
  drawCharts();
  status("live", "live");
}

function formatUptime(seconds) {
  const d = Math.floor(seconds / 86400);
  const h = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  return d ? `${d}d ${h}h` : h ? `${h}h ${m}m` : `${m}m ${Math.floor(seconds % 60)}s`;
}

// The timer, a kill and an expansion all poll the tree: an answer older than the one
// drawn is dropped.
let treeAsked = 0;
let treeDrawn = 0;

async function pollTree() {
  const asked = ++treeAsked;
  const root = await get(`tree?limit=${tree.limit()}`);
  if (asked < treeDrawn) return;
  treeDrawn = asked;
  tree.update(root, Date.now());
}

// Clients: the connected ones; sessions: every one the broker keeps, online or not.
async function pollTables() {
  const [online, kept] = await Promise.all([get("clients?state=online"), get("sessions")]);
  clients.set(online.clients, online.total);
  sessions.set(kept.sessions, kept.total);
  if (pickedClient !== null) await loadClient();
}

function showClient(clientId) {
  pickedClient = clientId;
  $("#client-panel").hidden = false;
  $("#client-id").textContent = clientId;
  loadClient().catch(failed);
}

function describe(key, value) {
  if (key === "last_seen") return new Date(value * 1000).toLocaleString();
  if (key === "will") return value ? `${value.topic} (QoS ${value.qos}${value.retain ? ", retained" : ""}, ${value.payload_bytes} bytes)` : "none";
  if (typeof value === "boolean") return value ? "yes" : "no";
  return String(value);
}

// One client's session (GET /api/v1/clients/{id}): its figures and subscriptions.
async function loadClient() {
  const clientId = pickedClient;
  const problem = $("#client-error");
  let detail;
  try {
    detail = await get(`clients/${encodeURIComponent(clientId)}`);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    problem.textContent = error.message;   // 404: the session ended since
    return;
  }
  if (clientId !== pickedClient) return;   // another was picked meanwhile
  problem.textContent = "";
  const fields = [];
  for (const [key, value] of Object.entries(detail)) {
    if (key === "client_id" || key === "subscriptions") continue;
    const dt = document.createElement("dt");
    dt.textContent = key.replaceAll("_", " ");
    const dd = document.createElement("dd");
    dd.textContent = describe(key, value);
    dd.dataset.key = key;
    fields.push(dt, dd);
  }
  $("#client-fields").replaceChildren(...fields);
  $("#client-subscriptions").replaceChildren(...detail.subscriptions.map((s) => {
    const li = document.createElement("li");
    li.textContent = `${s.filter} (QoS ${s.qos})`;
    return li;
  }));
}

// A filter the API refuses (not a valid filter) is said in the panel, not as the page's state.
async function browseRetained() {
  const filter = retainedFilter;
  const problem = $("#retained-error");
  try {
    const answer = await get(`retained?filter=${encodeURIComponent(filter)}`);
    if (filter !== retainedFilter) return;   // an answer overtaken by a newer filter's
    retained.set(answer.retained, answer.total);
    problem.textContent = "";
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (filter !== retainedFilter) return;
    retained.set([], 0);
    problem.textContent = error.message;
  }
  showLevels(filter);
}

function submitFilter(filter) {
  $("#retained-filter").value = filter;
  retainedFilter = filter || "#";
  browseRetained().catch(failed);
}

// The filter's levels as links: a click browses everything under that level.
function showLevels(filter) {
  const nav = $("#retained-path");
  const levels = filter.split("/").filter((level) => level !== "#" && level !== "+");
  const links = [];
  levels.forEach((level, i) => {
    const a = document.createElement("a");
    a.href = "#";
    a.textContent = level || "(empty)";
    a.addEventListener("click", (event) => {
      event.preventDefault();
      submitFilter(`${levels.slice(0, i + 1).join("/")}/#`);
    });
    links.push(a);
  });
  nav.replaceChildren(...links);
}

// node: the selected actor in the latest tree, or {path, gone: true} once it left it.
function showActor(node) {
  const panel = $("#actor");
  panel.hidden = false;
  panel.dataset.path = node.path;
  $("#actor-kill").disabled = Boolean(node.gone);
  if (node.gone) {
    $("#actor-alive").textContent = "gone from the tree";
    return;
  }
  $("#actor-name").textContent = node.path || "root";
  $("#actor-kind").textContent = `${node.actor} (${node.kind})`;
  $("#actor-mailbox").textContent = String(node.mailbox);
  $("#actor-restarts").textContent = node.restarts_total === undefined ? String(node.restarts)
    : `${node.restarts} (its children: ${node.restarts_total})`;
  $("#actor-alive").textContent = node.alive ? "yes" : "no";
}

async function killSelected() {
  const panel = $("#actor");
  const node = tree.nodes.get(panel.dataset.path);
  if (!node || !confirm(`Kill ${node.path || "root"}? Its supervisor restarts it.`)) return;
  const result = $("#actor-result");
  try {
    // The path's slashes stay: the route takes the rest of the URL as the path. The
    // root's path is empty: it goes by its name (and the broker refuses to kill it).
    const target = node.path || node.name;
    await post(`actors/${target.split("/").map(encodeURIComponent).join("/")}/kill`);
    result.textContent = "killed";
    await pollTree();
  } catch (error) {
    result.textContent = String(error.message || error);
  }
}

// Each poller runs again `interval` ms after its last answer, never two at once.
function every(interval, poll) {
  const run = async () => {
    if (!waitingForToken) {
      try {
        await poll();
      } catch (error) {
        failed(error);
      }
    }
    setTimeout(run, interval);
  };
  run();
}

$("#auth").addEventListener("submit", (event) => {
  event.preventDefault();
  setToken($("#auth-token").value);
  $("#auth").hidden = true;
  waitingForToken = false;
  status("starting", "connecting…");
});
$("#retained-form").addEventListener("submit", (event) => {
  event.preventDefault();
  submitFilter($("#retained-filter").value.trim());
});
$("#actor-kill").addEventListener("click", killSelected);
$("#client-close").addEventListener("click", () => {
  pickedClient = null;
  $("#client-panel").hidden = true;
});
$("#tree-hide-empty").addEventListener("change", (event) => {
  tree.hideEmpty = event.target.checked;
  if (tree.root) tree.update(tree.root, Date.now());
});
window.addEventListener("resize", drawCharts);

every(STATS_MS, pollStats);
every(TREE_MS, pollTree);
every(TABLES_MS, pollTables);
every(TABLES_MS * 2, browseRetained);
