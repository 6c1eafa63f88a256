// Headrace status page: plain JavaScript over this worker's Kafka Connect REST API (same origin).
// Every piece of connector data goes into the page as text (textContent / attribute values), never
// as markup: connector names and configs are user input.
"use strict";

(function () {
  const REFRESH_MS = 2000;
  const HISTORY_POINTS = 60;
  // tasks whose counters one refresh asks their workers for (distributed mode); beyond it cells stay blank
  const TASK_METRICS_MAX = 200;
  const REQUEST_TIMEOUT_MS = 15000;
  const SECRET_KEY = /(password|passwd|secret|token|credential|api[._-]?key|private[._-]?key|jaas)/i;
  const REFERENCE = /\$\{[^}]*\}/;
  const MASK = "********";

  // ---------- small helpers ----------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const SVG_NS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, String(value));
    }
    return node;
  }

  class ApiError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }

  async function api(method, path, body) {
    // a worker that stops answering must not stall the refresh loop for good
    const init = { method, credentials: "same-origin", headers: { Accept: "application/json" },
                   signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    const text = await response.text();
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch (e) { data = null; }
    }
    if (!response.ok) {
      const message = data && data.message ? data.message : `HTTP ${response.status}`;
      throw new ApiError(response.status, message);
    }
    return data;
  }

  const enc = encodeURIComponent;

  let keepMessage = false; // a message set just before navigating survives the hash change

  function showMessage(text, kind) {
    const box = document.getElementById("message");
    box.textContent = text;
    box.className = kind || "info";
    box.hidden = !text;
  }

  function shortClass(name) {
    const parts = String(name || "").split(".");
    return parts[parts.length - 1];
  }

  function isSecret(key, value) {
    return SECRET_KEY.test(key) || REFERENCE.test(String(value));
  }

  // ---------- state shared by the views: one batched status call per refresh ----------

  const store = {
    connectors: {},   // name -> {status, info}
    samples: {},      // name -> {t, total}
    history: {},      // name -> [{t, rate}]
    loaded: false,
  };

  function taskTotal(status) {
    // source: records polled (before transforms); sink: records read; null when the worker reports none
    let total = null;
    for (const task of status.tasks || []) {
      const m = task.metrics;
      if (!m) continue;
      const value = status.type === "sink" ? m.records_read : m.records_polled;
      if (typeof value === "number") total = (total || 0) + value;
    }
    return total;
  }

  function recordSample(name, status, now) {
    const total = taskTotal(status);
    const previous = store.samples[name];
    if (total === null) { delete store.samples[name]; return; }
    store.samples[name] = { t: now, total };
    if (!previous || total < previous.total || now <= previous.t) return; // first sample or a restart
    const rate = (total - previous.total) / ((now - previous.t) / 1000);
    const history = store.history[name] || (store.history[name] = []);
    history.push({ t: now, rate });
    if (history.length > HISTORY_POINTS) history.shift();
  }

  function currentRate(name) {
    const history = store.history[name];
    return history && history.length ? history[history.length - 1].rate : null;
  }

  async function refreshAll() {
    const data = await api("GET", "/connectors?expand=status&expand=info");
    const now = Date.now();
    store.connectors = data || {};
    for (const name of Object.keys(store.samples)) {
      if (!(name in store.connectors)) { delete store.samples[name]; delete store.history[name]; }
    }
    await addTaskMetrics(store.connectors);
    for (const [name, entry] of Object.entries(store.connectors)) {
      if (entry.status) recordSample(name, entry.status, now);
    }
    store.loaded = true;
  }

  async function addTaskMetrics(connectors) {
    // In distributed mode status holds only what the status topic says, the same on every worker; the
    // counters (and auto-restart keys) come from each task's metrics endpoint, which asks the task's worker.
    // Standalone status already carries them. A task whose worker does not answer shows blank cells.
    const wanted = [];
    for (const [name, entry] of Object.entries(connectors)) {
      for (const task of (entry.status && entry.status.tasks) || []) {
        if (!task.metrics && task.state !== "UNASSIGNED") wanted.push([name, task]);
      }
    }
    if (wanted.length > TASK_METRICS_MAX) wanted.length = TASK_METRICS_MAX;
    await Promise.all(wanted.map(async ([name, task]) => {
      try {
        const shown = await api("GET", `/connectors/${enc(name)}/tasks/${task.id}/metrics`);
        if (shown && shown.worker_id === task.worker_id) {
          for (const key of ["metrics", "restart_tries", "restart_max_tries", "next_restart_ms"]) {
            if (key in shown) task[key] = shown[key];
          }
        }
      } catch (e) { /* left blank: the task's worker did not answer */ }
    }));
  }

  function sumOfTasks(status, pick) {
    // a sum over the tasks that report the figure; null (shown blank) when none does
    let total = null;
    for (const task of (status && status.tasks) || []) {
      const value = pick(task);
      if (typeof value === "number") total = (total || 0) + value;
    }
    return total;
  }

  function lagOf(status) {
    // sinks: records in their partitions not yet committed (Headrace's task metrics "lag")
    return status && status.type === "sink" ? sumOfTasks(status, (t) => t.metrics && t.metrics.lag) : null;
  }

  function dlqOf(status) {
    return sumOfTasks(status, (t) => t.metrics && t.metrics.dlq_produce_requests);
  }

  function timeText(ms) {
    return new Date(ms).toLocaleTimeString([], { hour12: false });
  }

  function restartText(task) {
    // Headrace's auto-restart keys; absent when the worker made no plan for this task
    if (typeof task.restart_tries !== "number") return "";
    const tries = `${task.restart_tries}/${task.restart_max_tries} tries`;
    return typeof task.next_restart_ms === "number" ? `${tries}, next ${timeText(task.next_restart_ms)}` : tries;
  }

  function restartSummary(status) {
    // the list's cell: the task furthest along in its automatic restarts
    let worst = null;
    for (const task of (status && status.tasks) || []) {
      if (typeof task.restart_tries !== "number") continue;
      if (!worst || task.restart_tries > worst.restart_tries ||
          (task.restart_tries === worst.restart_tries && typeof task.next_restart_ms === "number")) worst = task;
    }
    return worst ? restartText(worst) : "";
  }

  function numberText(value) {
    return value === null ? "" : String(value);
  }

  function taskCounts(status) {
    const tasks = (status && status.tasks) || [];
    return {
      running: tasks.filter((t) => t.state === "RUNNING").length,
      failed: tasks.filter((t) => t.state === "FAILED").length,
      total: tasks.length,
    };
  }

  function hasFailure(status) {
    return !!status && (status.connector.state === "FAILED" || taskCounts(status).failed > 0);
  }

  function stateCell(state) {
    return el("span", { class: `state state-${state}`, text: state });
  }

  function rateText(name) {
    const rate = currentRate(name);
    return rate === null ? "" : rate.toFixed(1);
  }

  // ---------- views ----------

  const filters = { state: "", cls: "" };
  let view = null; // {render(), leave?()}

  function listView() {
    const stateSelect = el("select", { id: "filter-state", "aria-label": "Filter by state" });
    const classSelect = el("select", { id: "filter-class", "aria-label": "Filter by class" });
    stateSelect.addEventListener("change", () => { filters.state = stateSelect.value; render(); });
    classSelect.addEventListener("change", () => { filters.cls = classSelect.value; render(); });
    const tbody = el("tbody");
    const summary = el("p", { class: "muted", id: "list-summary" });
    const root = el("section", {},
      el("h2", { text: "Connectors" }),
      el("div", { class: "filters" },
        el("label", {}, "State ", stateSelect),
        el("label", {}, "Class ", classSelect)),
      el("table", { id: "connectors" },
        el("thead", {}, el("tr", {},
          el("th", { text: "Name" }), el("th", { text: "Type" }), el("th", { text: "Class" }),
          el("th", { text: "State" }), el("th", { class: "num", text: "Running tasks" }),
          el("th", { class: "num", text: "Failed tasks" }), el("th", { class: "num", text: "Records/s" }),
          el("th", { class: "num", text: "Lag" }), el("th", { class: "num", text: "DLQ" }),
          el("th", { text: "Auto-restart" }))),
        tbody),
      summary);

    function fillSelect(select, values, current) {
      const wanted = ["", ...values];
      const have = Array.from(select.options).map((o) => o.value);
      if (have.join("\n") !== wanted.join("\n")) {
        select.replaceChildren(...wanted.map((v) => el("option", { value: v, text: v || "all" })));
      }
      select.value = wanted.includes(current) ? current : "";
    }

    function render() {
      const entries = Object.entries(store.connectors);
      const states = [...new Set(entries.map(([, e]) => e.status && e.status.connector.state).filter(Boolean))].sort();
      const classes = [...new Set(entries.map(([, e]) => e.info && e.info.config["connector.class"]).filter(Boolean))].sort();
      if (filters.state && !states.includes(filters.state)) states.push(filters.state);
      if (filters.cls && !classes.includes(filters.cls)) classes.push(filters.cls);
      fillSelect(stateSelect, states, filters.state);
      fillSelect(classSelect, classes, filters.cls);
      const shown = entries.filter(([, e]) => {
        const state = e.status && e.status.connector.state;
        const cls = e.info && e.info.config["connector.class"];
        return (!filters.state || state === filters.state) && (!filters.cls || cls === filters.cls);
      });
      // failed connectors (or those with failed tasks) first, then by name
      shown.sort(([a, ea], [b, eb]) => (hasFailure(eb.status) - hasFailure(ea.status)) || (a < b ? -1 : a > b ? 1 : 0));
      tbody.replaceChildren(...shown.map(([name, e]) => {
        const status = e.status || { connector: { state: "UNKNOWN" }, tasks: [] };
        const counts = taskCounts(status);
        const cls = (e.info && e.info.config["connector.class"]) || "";
        return el("tr", { class: hasFailure(status) ? "failed" : "", "data-name": name },
          el("td", {}, el("a", { href: `#/connector/${enc(name)}`, class: "connector-link", text: name })),
          el("td", { text: status.type || (e.info && e.info.type) || "" }),
          el("td", { title: cls, text: shortClass(cls) }),
          el("td", { class: "state-cell" }, stateCell(status.connector.state)),
          el("td", { class: "num running-tasks", text: String(counts.running) }),
          el("td", { class: "num failed-tasks", text: String(counts.failed) }),
          el("td", { class: "num rate", text: rateText(name) }),
          el("td", { class: "num lag", text: numberText(lagOf(status)) }),
          el("td", { class: "num dlq", text: numberText(dlqOf(status)) }),
          el("td", { class: "auto-restart", text: restartSummary(status) }));
      }));
      summary.textContent = store.loaded
        ? `${shown.length} of ${entries.length} connectors shown` + (shown.length ? "" : " — none match")
        : "Loading…";
    }
    return { root, render };
  }

  function chart(name) {
    const width = 480, height = 120, pad = 28;
    const history = store.history[name] || [];
    const box = svg("svg", { class: "chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
                             "aria-label": "Records per second" });
    box.append(svg("line", { class: "axis", x1: pad, y1: height - pad, x2: width - 4, y2: height - pad }));
    if (history.length < 2) {
      box.append(svg("text", { x: pad + 4, y: height / 2, text: "throughput appears after two refreshes" }));
      return box;
    }
    const max = Math.max(1, ...history.map((p) => p.rate));
    const t0 = history[0].t, t1 = history[history.length - 1].t;
    const x = (t) => pad + ((t - t0) / Math.max(1, t1 - t0)) * (width - pad - 8);
    const y = (r) => height - pad - (r / max) * (height - pad - 10);
    box.append(svg("polyline", { points: history.map((p) => `${x(p.t).toFixed(1)},${y(p.rate).toFixed(1)}`).join(" ") }));
    box.append(svg("text", { x: 2, y: 14, text: `${max.toFixed(0)}/s` }));
    box.append(svg("text", { x: 2, y: height - pad, text: "0" }));
    box.append(svg("text", { x: pad, y: height - 8, text: `last ${Math.round((t1 - t0) / 1000)} s` }));
    return box;
  }

  function connectorView(name) {
    const root = el("section", { id: "connector" });
    const heading = el("h2", { id: "connector-name", text: name });
    const stateLine = el("p", {});
    const actions = el("div", { class: "actions" });
    const tasksBody = el("tbody");
    const configBody = el("tbody");
    const offsetsBody = el("tbody");
    const offsetsNote = el("p", { class: "muted" });
    const chartBox = el("div", { id: "chart" });
    let offsetsLoaded = false;
    let busy = false;
    let gone = false;

    const buttons = {};
    async function run(key, label, fn) {
      busy = true;
      Object.values(buttons).forEach((b) => { b.disabled = true; });
      try {
        await fn();
        // the time tells a restart that worked from one whose tasks failed again at once
        showMessage(`${label}: done for ${name} at ${new Date().toLocaleTimeString()}`, "info");
        if (key === "delete") { gone = true; keepMessage = true; location.hash = "#/"; return; }
        await refreshAll();
        if (key === "reset-offsets") await loadOffsets();
      } catch (e) {
        showMessage(`${label} failed for ${name}: ${e.message}`, "error");
      } finally {
        busy = false;
        render();
      }
    }
    function action(key, label, fn, opts) {
      const button = el("button", { type: "button", id: `action-${key}`, class: (opts && opts.danger) ? "danger" : "" }, label);
      button.addEventListener("click", async () => {
        if (opts && opts.confirm && !window.confirm(opts.confirm)) return;
        await run(key, label, fn);
      });
      buttons[key] = button;
      actions.append(button);
    }
    const base = `/connectors/${enc(name)}`;
    action("pause", "Pause", () => api("PUT", `${base}/pause`));
    action("resume", "Resume", () => api("PUT", `${base}/resume`));
    action("stop", "Stop", () => api("PUT", `${base}/stop`));
    action("restart", "Restart", () => api("POST", `${base}/restart?includeTasks=true&onlyFailed=false`));
    action("restart-failed", "Restart failed tasks", () => api("POST", `${base}/restart?includeTasks=true&onlyFailed=true`));
    action("reset-offsets", "Reset offsets", () => api("DELETE", `${base}/offsets`),
           { danger: true, confirm: `Reset all committed offsets of ${name}? It will start from the beginning.` });
    const editButton = el("button", { type: "button", id: "action-edit" }, "Edit config");
    editButton.addEventListener("click", () => { gone = true; location.hash = `#/edit/${enc(name)}`; });
    buttons.edit = editButton;
    actions.append(editButton);
    action("delete", "Delete", () => api("DELETE", base), { danger: true, confirm: `Delete connector ${name}?` });

    async function loadOffsets() {
      try {
        const data = await api("GET", `${base}/offsets`);
        const offsets = (data && data.offsets) || [];
        offsetsBody.replaceChildren(...offsets.map((o) => el("tr", {},
          el("td", { text: JSON.stringify(o.partition) }), el("td", { text: JSON.stringify(o.offset) }))));
        offsetsNote.textContent = offsets.length ? "" : "No committed offsets.";
        offsetsLoaded = true;
      } catch (e) {
        offsetsNote.textContent = `Offsets unavailable: ${e.message}`;
      }
    }

    root.append(
      el("p", {}, el("a", { href: "#/", text: "← all connectors" })),
      heading, stateLine, actions,
      el("h3", { text: "Throughput (records/s)" }), chartBox,
      el("h3", { text: "Tasks" }),
      el("table", { id: "tasks" }, el("thead", {}, el("tr", {},
        el("th", { text: "Task" }), el("th", { text: "State" }), el("th", { text: "Worker" }),
        el("th", { text: "Auto-restart" }), el("th", { text: "" }),
        el("th", { text: "Trace" }))), tasksBody),
      el("h3", { text: "Offsets" }),
      el("table", { id: "offsets" }, el("thead", {}, el("tr", {},
        el("th", { text: "Partition" }), el("th", { text: "Offset" }))), offsetsBody),
      offsetsNote,
      el("h3", { text: "Configuration" }),
      el("table", { id: "config" }, el("thead", {}, el("tr", {}, el("th", { text: "Key" }), el("th", { text: "Value" }))), configBody));

    let tick = 0;
    function render() {
      if (gone) return;
      const entry = store.connectors[name];
      if (!entry) {
        stateLine.textContent = store.loaded ? "This connector does not exist (any more)." : "Loading…";
        Object.values(buttons).forEach((b) => { b.disabled = true; });
        return;
      }
      const status = entry.status || { connector: { state: "UNKNOWN" }, tasks: [] };
      const state = status.connector.state;
      const counts = taskCounts(status);
      const cls = (entry.info && entry.info.config["connector.class"]) || "";
      stateLine.replaceChildren(
        "State ", el("span", { id: "connector-state", class: `state state-${state}`, text: state }),
        ` · ${status.type || ""} · ${cls} · worker ${status.connector.worker_id || "?"}`,
        ` · tasks ${counts.running}/${counts.total} running, ${counts.failed} failed`,
        rateText(name) ? ` · ${rateText(name)} records/s` : "",
        lagOf(status) !== null ? ` · lag ${lagOf(status)}` : "",
        dlqOf(status) ? ` · ${dlqOf(status)} to the DLQ` : "");
      if (status.connector.trace) {
        stateLine.append(el("pre", { class: "trace", text: status.connector.trace }));
      }
      if (!busy) {
        buttons.pause.disabled = state === "PAUSED" || state === "STOPPED";
        buttons.resume.disabled = state === "RUNNING";
        buttons.stop.disabled = state === "STOPPED";
        buttons.restart.disabled = false;
        buttons["restart-failed"].disabled = counts.failed === 0;
        buttons["reset-offsets"].disabled = state !== "STOPPED";
        buttons["reset-offsets"].title = state === "STOPPED" ? "" : "Stop the connector first";
        buttons.edit.disabled = false;
        buttons.delete.disabled = false;
      }
      tasksBody.replaceChildren(...(status.tasks || []).map((t) => el("tr", { "data-task": t.id },
        el("td", { text: String(t.id) }),
        el("td", {}, stateCell(t.state)),
        el("td", { text: t.worker_id || "" }),
        el("td", { class: "auto-restart", text: restartText(t) }),
        el("td", {}, el("button", { type: "button", class: "task-restart", disabled: busy,
                                    onclick: () => run("restart-task", `Restart task ${t.id}`,
                                                       () => api("POST", `${base}/tasks/${t.id}/restart`)) }, "Restart")),
        el("td", {}, t.trace ? el("pre", { class: "trace", text: t.trace }) : ""))));
      const config = (entry.info && entry.info.config) || {};
      configBody.replaceChildren(...Object.keys(config).sort().map((key) => {
        const value = config[key];
        const cell = isSecret(key, value)
          ? el("td", { class: "masked", title: "hidden: a secret or a ${...} reference", text: MASK })
          : el("td", { text: String(value) });
        return el("tr", { "data-key": key }, el("td", { text: key }), cell);
      }));
      chartBox.replaceChildren(chart(name));
      // offsets change slowly and cost a call of their own: every fifth refresh, and at once when stopped
      if (!offsetsLoaded || tick++ % 5 === 0) loadOffsets();
    }
    return { root, render };
  }

  // ---- create / edit form, built from PUT /connector-plugins/{class}/config/validate ----

  function formView(editName) {
    const root = el("section", { id: "connector-form" });
    const title = el("h2", { text: editName ? `Edit ${editName}` : "New connector" });
    const classSelect = el("select", { id: "plugin-class", "aria-label": "Connector class" });
    const nameInput = el("input", { type: "text", id: "connector-name-input", name: "name", value: editName || "",
                                   "aria-label": "Connector name" });
    if (editName) nameInput.readOnly = true;
    const fieldsBox = el("div", { id: "fields" });
    const formError = el("p", { class: "form-error", id: "form-error", role: "alert" });
    const validateButton = el("button", { type: "button", id: "validate" }, "Validate");
    const submitButton = el("button", { type: "submit", id: "submit" }, editName ? "Save" : "Create");
    const form = el("form", { novalidate: true },
      el("div", { class: "field" }, el("label", { for: "plugin-class", text: "Connector class" }), classSelect),
      el("div", { class: "field" }, el("label", { for: "connector-name-input", text: "Name" }), nameInput),
      fieldsBox, formError, el("div", { class: "actions" }, validateButton, submitButton));
    root.append(title, form);

    const fields = {}; // key -> {input, error, wrapper, definition}
    let original = {};

    function currentConfig() {
      const config = { ...original };
      for (const [key, field] of Object.entries(fields)) {
        // an empty field means "the default" (shown as its placeholder); what was typed is kept as typed
        const value = field.input.value;
        if (value === "") delete config[key];
        else config[key] = value;
      }
      config["connector.class"] = classSelect.value;
      config.name = nameInput.value.trim();
      return config;
    }

    function fieldInput(definition, value) {
      const id = `field-${definition.name}`;
      if (definition.type === "BOOLEAN") {
        const select = el("select", { id, name: definition.name },
          el("option", { value: "", text: "(default)" }), el("option", { value: "true", text: "true" }),
          el("option", { value: "false", text: "false" }));
        select.value = value === null || value === undefined ? "" : String(value);
        return select;
      }
      const secret = definition.type === "PASSWORD" || SECRET_KEY.test(definition.name);
      const input = el("input", { type: secret ? "password" : "text", id, name: definition.name,
                                  autocomplete: "off", placeholder: definition.default_value ?? "" });
      input.value = value === null || value === undefined ? "" : String(value);
      return input;
    }

    function renderFields(result) {
      const groups = new Map();
      for (const item of result.configs || []) {
        const d = item.definition;
        if (d.name === "name" || d.name === "connector.class") continue;
        if (item.value && item.value.visible === false) continue;
        const group = d.group || "Other";
        if (!groups.has(group)) groups.set(group, []);
        groups.get(group).push(item);
      }
      const previous = Object.fromEntries(Object.entries(fields).map(([k, f]) => [k, f.input.value]));
      for (const key of Object.keys(fields)) delete fields[key];
      const nodes = [];
      for (const [group, items] of groups) {
        nodes.push(el("h3", { text: group }));
        for (const item of items) {
          const d = item.definition;
          const value = d.name in previous ? previous[d.name] : (d.name in original ? original[d.name] : "");
          const input = fieldInput(d, value);
          const error = el("div", { class: "field-error", id: `error-${d.name}`, "data-key": d.name });
          const wrapper = el("div", { class: "field", "data-key": d.name },
            el("label", { for: input.id, text: (d.display_name || d.name) + (d.required ? " *" : "") }),
            input,
            el("div", { class: "doc", text: `${d.name} (${d.type}${d.required ? ", required" : ""})` + (d.documentation ? ` — ${d.documentation}` : "") }),
            error);
          fields[d.name] = { input, error, wrapper, definition: d };
          nodes.push(wrapper);
        }
      }
      fieldsBox.replaceChildren(...nodes);
    }

    function showErrors(result) {
      let top = [];
      for (const item of result.configs || []) {
        const key = item.definition.name;
        const errors = (item.value && item.value.errors) || [];
        const field = fields[key];
        if (field) {
          field.error.textContent = errors.join("; ");
          field.wrapper.classList.toggle("invalid", errors.length > 0);
        } else if (errors.length) {
          top = top.concat(errors.map((e) => `${key}: ${e}`));
        }
      }
      formError.textContent = top.length ? top.join("; ")
        : (result.error_count ? `${result.error_count} setting(s) need attention` : "");
    }

    async function validate(rebuild) {
      formError.textContent = "";
      const config = currentConfig();
      if (!config["connector.class"]) { formError.textContent = "Choose a connector class"; return null; }
      try {
        const result = await api("PUT", `/connector-plugins/${enc(config["connector.class"])}/config/validate`, config);
        if (rebuild) renderFields(result);
        showErrors(result);
        return result;
      } catch (e) {
        formError.textContent = e.message;
        return null;
      }
    }

    classSelect.addEventListener("change", () => validate(true));
    validateButton.addEventListener("click", () => validate(false));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const result = await validate(false);
      if (!result || result.error_count > 0) return;
      const config = currentConfig();
      if (!config.name) { formError.textContent = "Give the connector a name"; return; }
      try {
        if (editName) await api("PUT", `/connectors/${enc(editName)}/config`, config);
        else await api("POST", "/connectors", { name: config.name, config });
        showMessage(`${editName ? "Saved" : "Created"} connector ${config.name}`, "info");
        await refreshAll();
        keepMessage = true;
        location.hash = `#/connector/${enc(config.name)}`;
      } catch (e) {
        formError.textContent = e.message;
      }
    });

    (async () => {
      try {
        const plugins = await api("GET", "/connector-plugins");
        classSelect.replaceChildren(el("option", { value: "", text: "(choose a class)" }),
          ...plugins.map((p) => el("option", { value: p.class, text: `${p.class} (${p.type})` })));
        if (editName) {
          original = await api("GET", `/connectors/${enc(editName)}/config`);
          const cls = original["connector.class"] || "";
          if (!plugins.some((p) => p.class === cls)) classSelect.append(el("option", { value: cls, text: cls }));
          classSelect.value = cls;
          classSelect.disabled = true;
          await validate(true);
        }
      } catch (e) {
        formError.textContent = e.message;
      }
    })();
    return { root, render() {} };
  }

  // ---------- routing and refresh loop ----------

  function route() {
    const hash = location.hash || "#/";
    let next;
    let match;
    if ((match = hash.match(/^#\/connector\/(.+)$/))) next = connectorView(decodeURIComponent(match[1]));
    else if ((match = hash.match(/^#\/edit\/(.+)$/))) next = formView(decodeURIComponent(match[1]));
    else if (hash === "#/new") next = formView(null);
    else next = listView();
    view = next;
    document.getElementById("view").replaceChildren(next.root);
    next.render();
  }

  async function loop() {
    const indicator = document.getElementById("refresh-state");
    if (document.hidden && store.loaded) { // a tab nobody looks at does not poll the worker
      setTimeout(loop, REFRESH_MS);
      return;
    }
    try {
      await refreshAll();
      indicator.textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (e) {
      indicator.textContent = `refresh failed: ${e.message}`;
    }
    if (view) view.render();
    setTimeout(loop, REFRESH_MS);
  }

  window.addEventListener("hashchange", () => {
    if (!keepMessage) showMessage("");
    keepMessage = false;
    route();
  });
  window.addEventListener("DOMContentLoaded", () => { route(); loop(); });
})();
