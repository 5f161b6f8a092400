// The inbox page: the pending requests (GET /api/requests), the decision buttons (POST
// /api/requests/ID/decide, with the page's CSRF token), the live stream of changes
// (GET /api/events, server-sent events) and the per-rule counters (GET /api/counters).
// Everything an agent wrote (arguments, reasons, claims) is put in as text, never HTML.
"use strict";

let csrf = document.querySelector('meta[name="csrf"]').content;
const pendingList = document.getElementById("pending");
const template = document.getElementById("request-template");
const filters = {
  agent: document.getElementById("filter-agent"),
  tool: document.getElementById("filter-tool"),
};
let refreshing = null;
let again = false;

function clock(seconds) {
  return seconds ? new Date(seconds * 1000).toISOString().slice(11, 19) + "Z" : "";
}

async function api(path, body, retried = false) {
  const init = { headers: { accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["content-type"] = "application/json";
    init.headers["x-interpose-csrf"] = csrf;
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({}));
  if (response.status === 403 && body !== undefined && !retried) {
    // the inbox restarted since this page was served: its CSRF token is stale
    csrf = (await api("/api/csrf")).csrf;
    return api(path, body, true);
  }
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

function showError(where, error) {
  where.textContent = error ? String(error.message || error) : "";
  where.hidden = !error;
}

function renderRequest(request) {
  const item = template.content.firstElementChild.cloneNode(true);
  item.dataset.id = request.id;
  item.querySelector(".tool").textContent = request.tool_name;
  item.querySelector(".who").textContent =
    `${request.agent_id || "?"} · ${request.session_key || "-"}`;
  const created = item.querySelector(".created");
  created.textContent = clock(request.created);
  created.dateTime = new Date(request.created * 1000).toISOString();
  const rule = request.rule ? `${request.rule}: ` : "";
  item.querySelector(".reason").textContent = rule + (request.reason || "asked");
  const args = JSON.stringify(request.args, null, 2);
  item.querySelector(".args").textContent = args;
  item.querySelector(".edited").value = args;
  const claims = item.querySelector(".principal");
  if (request.principal && Object.keys(request.principal).length) {
    for (const [key, value] of Object.entries(request.principal)) {
      const term = document.createElement("dt");
      term.textContent = key;
      const detail = document.createElement("dd");
      detail.textContent = typeof value === "string" ? value : JSON.stringify(value);
      claims.append(term, detail);
    }
    claims.hidden = false;
  }
  const problem = item.querySelector(".problem");
  const decide = async (body) => {
    showError(problem, null);
    try {
      await api(`/api/requests/${encodeURIComponent(request.id)}/decide`, body);
      refresh();
    } catch (error) {
      showError(problem, error);
    }
  };
  item.querySelector(".approve").onclick = () => decide({ decision: "approve" });
  item.querySelector(".deny").onclick = () =>
    decide({ decision: "deny", reason: item.querySelector(".deny-reason").value });
  item.querySelector(".edit").onclick = () => {
    const editor = item.querySelector(".editor");
    editor.hidden = !editor.hidden;
  };
  item.querySelector(".approve-edited").onclick = () => {
    let edited;
    try {
      edited = JSON.parse(item.querySelector(".edited").value);
    } catch (error) {
      showError(problem, new Error(`the arguments are not JSON: ${error.message}`));
      return;
    }
    decide({ decision: "edit", args: edited });
  };
  if (!request.rule) item.querySelector('.grant-match option[value="rule"]').remove();
  item.querySelector(".grant").onclick = () => {
    const ttl = item.querySelector(".grant-ttl").value;
    decide({
      decision: "approve",
      grant: {
        match: item.querySelector(".grant-match").value,
        scope: item.querySelector(".grant-scope").value,
        ttl: ttl ? Number(ttl) : null,
      },
    });
  };
  return item;
}

// one load at a time; a refresh asked for during a load loads again after it (the
// change that asked may have come after the load read the list)
function refresh() {
  if (refreshing) {
    again = true;
    return refreshing;
  }
  refreshing = (async () => {
    try {
      do {
        again = false;
        await load();
      } while (again);
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

async function load() {
  const query = new URLSearchParams({ state: "pending" });
  for (const [name, input] of Object.entries(filters)) {
    if (input.value.trim()) query.set(name, input.value.trim());
  }
  try {
    const [listed, counted, granted] = await Promise.all([
      api(`/api/requests?${query}`),
      api("/api/counters"),
      api("/api/grants"),
    ]);
    // a request shown already keeps its element (and what the person typed in it)
    const shown = new Map([...pendingList.children].map((item) => [item.dataset.id, item]));
    pendingList.replaceChildren(
      ...listed.requests.map((request) => shown.get(request.id) || renderRequest(request)),
    );
    document.getElementById("pending-count").textContent = listed.requests.length;
    document.getElementById("empty").hidden = listed.requests.length > 0;
    renderCounters(counted.rules);
    renderGrants(granted.grants);
    showError(document.getElementById("error"), null);
  } catch (error) {
    showError(document.getElementById("error"), error);
  }
}

function renderCounters(rules) {
  const body = document.querySelector("#counters tbody");
  const columns = ["asked", "approved", "denied", "edited", "expired", "granted"];
  body.replaceChildren(
    ...Object.entries(rules).map(([rule, counts]) => {
      const row = document.createElement("tr");
      row.dataset.rule = rule;
      for (const value of [rule, ...columns.map((name) => counts[name] || 0)]) {
        const cell = document.createElement("td");
        cell.textContent = value;
        if (value !== rule) cell.className = "n";
        row.append(cell);
      }
      return row;
    }),
  );
}

// the live grants: what each lets through without asking, for whom, until when
function renderGrants(grants) {
  document.getElementById("no-grants").hidden = grants.length > 0;
  const list = document.getElementById("grants");
  const shown = new Map([...list.children].map((item) => [item.dataset.id, item]));
  list.replaceChildren(
    ...grants.map((grant) => {
      if (shown.has(grant.id)) return shown.get(grant.id); // (a live grant does not change)
      const item = document.createElement("li");
      item.dataset.id = grant.id;
      const what = grant.match === "rule" ? grant.rule : `${grant.tool_name} with these arguments`;
      const where = grant.scope === "session"
        ? `${grant.agent_id} · ${grant.session_key}` : `${grant.agent_id}, every session`;
      const until = grant.expires ? `until ${clock(grant.expires)}` : "until revoked";
      const text = document.createElement("span");
      text.textContent = `${what} (${where}) by ${grant.granted_by}, ${until} `;
      const revoke = document.createElement("button");
      revoke.type = "button";
      revoke.className = "revoke";
      revoke.textContent = "Revoke";
      revoke.onclick = async () => {
        try {
          await api(`/api/grants/${encodeURIComponent(grant.id)}/revoke`, {});
          refresh();
        } catch (error) {
          showError(document.getElementById("error"), error);
        }
      };
      item.append(text, revoke);
      return item;
    }),
  );
}

// one line per change of the store that a person wants to see go by
function showChange(change) {
  const request = change.request;
  const grant = change.grant;
  let state, text;
  if (change.kind === "request_decided" || change.kind === "request_expired") {
    state = request.state;
    const by = request.decided_by ? ` by ${request.decided_by}` : "";
    const why = request.state === "denied" && request.decision_reason
      ? `: ${request.decision_reason}` : "";
    text = ` ${request.tool_name} (${request.agent_id})${by}${why}`;
  } else if (change.kind === "grant_used") {
    state = "granted";
    text = ` ${request.tool_name} (${request.agent_id}) by the grant of ${grant.granted_by}`;
  } else if (change.kind === "grant_added" || change.kind === "grant_revoked") {
    state = change.kind === "grant_added" ? "grant" : "revoked";
    const by = change.kind === "grant_added" ? grant.granted_by : grant.revoked_by;
    text = ` ${grant.rule || grant.tool_name} for this ${grant.scope} by ${by}`;
  } else {
    return;
  }
  const item = document.createElement("li");
  item.dataset.kind = change.kind;
  item.dataset.state = state;
  if (request) item.dataset.id = request.id;
  const label = document.createElement("span");
  label.className = `state ${state}`;
  label.textContent = state;
  const when = document.createElement("time");
  when.textContent = ` ${clock(change.ts)}`;
  item.append(label, text, when);
  document.getElementById("decisions").prepend(item);
}

function listen() {
  const live = document.getElementById("live");
  const events = new EventSource("/api/events");
  events.onopen = () => {
    live.textContent = "live";
    live.className = "online";
    refresh();
  };
  events.onmessage = (event) => {
    showChange(JSON.parse(event.data));
    refresh();
  };
  events.onerror = () => {
    live.textContent = "reconnecting…";
    live.className = "offline";
  };
}

for (const input of Object.values(filters)) input.addEventListener("input", () => refresh());
document.getElementById("filters").addEventListener("submit", (event) => event.preventDefault());
refresh();
listen();
