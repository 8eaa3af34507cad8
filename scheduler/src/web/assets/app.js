// Berth's web view: renders the JSON of /api/stream (server-sent events) into the page.
// Every piece of cluster data goes into the DOM as text (textContent), never as HTML.
"use strict";

(function () {
  const MIB = 1024 * 1024;
  const GIB = 1024 * MIB;

  /** An element with a class and text content. */
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  /** An amount of a resource, in its usual unit. */
  function amount(resource, value) {
    if (resource === "cpu") {
      const cores = value / 1000;
      return Number.isInteger(cores) ? String(cores) : cores.toFixed(2).replace(/0$/, "");
    }
    if (resource === "memory" || resource === "ephemeral-storage" || resource.startsWith("hugepages-")) {
      if (value >= GIB) return (value / GIB).toFixed(1).replace(/\.0$/, "") + "Gi";
      if (value >= MIB) return (value / MIB).toFixed(0) + "Mi";
      return String(value);
    }
    return String(value);
  }

  function percent(allocated, allocatable) {
    return allocatable > 0 ? (allocated * 100) / allocatable : 0;
  }

  /** How long ago a time in ms was, as kubectl prints ages. */
  function age(ms, now) {
    if (ms === null || ms === undefined) return "<unknown>";
    const s = Math.max(0, Math.floor((now - ms) / 1000));
    if (s < 120) return s + "s";
    const m = Math.floor(s / 60);
    if (m < 120) return m + "m";
    const h = Math.floor(m / 60);
    if (h < 48) return h + "h";
    return Math.floor(h / 24) + "d";
  }

  function bar(b) {
    const row = el("div", "bar");
    row.dataset.resource = b.resource;
    row.append(el("span", "name", b.resource));
    const track = el("div", "track");
    const share = percent(b.allocated, b.allocatable);
    const known = ["cpu", "memory", "pods"].includes(b.resource) ? b.resource : "device";
    const fill = el("div", "fill " + known + (share >= 100 ? " full" : ""));
    fill.style.width = Math.min(100, share).toFixed(1) + "%";
    track.append(fill);
    row.append(track);
    row.append(el("span", "amount", amount(b.resource, b.allocated) + " / " + amount(b.resource, b.allocatable)));
    row.title = b.resource + ": " + share.toFixed(0) + "% requested";
    return row;
  }

  function stat(label, value, detail) {
    const box = el("div", "stat");
    box.append(el("div", "label", label), el("div", "value", value));
    if (detail) box.append(el("div", "detail", detail));
    return box;
  }

  function renderSummary(s) {
    const phases = s.phases.filter(([, n]) => n > 0).map(([p, n]) => n + " " + p).join(", ");
    const boxes = [
      stat("Nodes", s.readyNodes + " / " + s.nodes, "ready"),
      stat("Pods", s.pods, phases || "none"),
      stat("Unscheduled", s.unscheduled, "waiting for a node"),
    ];
    const labels = { cpu: "CPU requested", memory: "Memory requested", pods: "Pod slots used" };
    for (const b of s.allocation) {
      const share = percent(b.allocated, b.allocatable).toFixed(0) + "%";
      boxes.push(stat(labels[b.resource] || b.resource + " allocated", share, amount(b.resource, b.allocated) + " of " + amount(b.resource, b.allocatable)));
    }
    document.getElementById("summary").replaceChildren(...boxes);
  }

  function renderNodes(nodes, total) {
    document.getElementById("nodes-count").textContent =
      nodes.length < total ? "(" + nodes.length + " of " + total + ")" : "(" + total + ")";
    const cards = nodes.map((n) => {
      const card = el("article", "node");
      card.dataset.node = n.name;
      const head = el("div", "node-head");
      const badge = el("span", "badge" + (n.ready ? (n.status === "Ready" ? "" : " warn") : " bad"), n.status);
      head.append(el("span", "node-name", n.name), badge);
      card.append(head);
      for (const b of n.bars) card.append(bar(b));
      const chips = el("div", "chips");
      for (const t of n.taints) chips.append(el("span", "chip taint", t));
      for (const c of n.conditions) {
        const healthy = c.type === "Ready" ? c.status === "True" : c.status === "False";
        const chip = el("span", "chip" + (healthy ? "" : " cond-bad"), c.type + "=" + c.status);
        chip.title = [c.reason, c.message].filter(Boolean).join(": ");
        chips.append(chip);
      }
      if (chips.childElementCount) card.append(chips);
      // Conditions that are not healthy say why, in the node's own words.
      for (const c of n.conditions) {
        const healthy = c.type === "Ready" ? c.status === "True" : c.status === "False";
        if (!healthy && (c.reason || c.message)) {
          card.append(el("p", "condition-message", c.type + ": " + [c.reason, c.message].filter(Boolean).join(": ")));
        }
      }
      return card;
    });
    const box = document.getElementById("nodes");
    if (cards.length === 0) box.replaceChildren(el("p", "empty", "No nodes yet."));
    else box.replaceChildren(...cards);
  }

  /** Puts `rows` into a table body, or one row saying `empty` when there are none. */
  function fillTable(selector, rows, empty) {
    const body = document.querySelector(selector);
    if (rows.length === 0) {
      const td = el("td", "empty", empty);
      td.colSpan = body.parentElement.querySelectorAll("th").length;
      const tr = el("tr");
      tr.append(td);
      rows = [tr];
    }
    body.replaceChildren(...rows);
  }

  function renderPods(pods, total, now) {
    document.getElementById("pods-count").textContent =
      pods.length < total ? "(" + pods.length + " of " + total + ")" : "(" + total + ")";
    const rows = pods.map((p) => {
      const tr = el("tr");
      tr.dataset.pod = p.namespace + "/" + p.name;
      tr.append(
        el("td", "", p.namespace),
        el("td", "name", p.name),
        el("td", "status-" + p.status, p.status),
        el("td", "", p.node || "<none>"),
        el("td", "", age(p.createdMs, now)),
        el("td", "message", p.message || ""),
      );
      return tr;
    });
    fillTable("#pods tbody", rows, "No pods.");
  }

  function renderEvents(events, now) {
    const rows = events.map((e) => {
      const tr = el("tr");
      tr.append(
        el("td", "", age(e.timeMs, now)),
        el("td", "type-" + e.type, e.type),
        el("td", "", e.reason + (e.count > 1 ? " (x" + e.count + ")" : "")),
        el("td", "", e.object),
        el("td", "", e.from),
        el("td", "message", e.message),
      );
      return tr;
    });
    fillTable("#events tbody", rows, "No events.");
  }

  // Charts (uPlot): made on the first view, fed new data after.
  const charts = {};
  function chartWidth(id) {
    return Math.max(200, document.getElementById(id).clientWidth);
  }
  function timeRange(u, min, max) {
    if (min === null || max === null) {
      const now = Date.now() / 1000;
      return [now - 60, now];
    }
    return [Math.min(min, max - 60), max];
  }
  function makeChart(id, series, yRange) {
    if (typeof uPlot === "undefined") return null;
    const opts = {
      width: chartWidth(id),
      height: 160,
      legend: { show: true },
      // At least the last minute, at most the last ten, however few samples there are.
      scales: { x: { time: true, range: timeRange }, y: yRange ? { range: yRange } : { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [{}, { size: 40 }],
      series: [{}].concat(series.map(([label, stroke]) => ({ label, stroke, width: 2, points: { show: false } }))),
    };
    return new uPlot(opts, [[], ...series.map(() => [])], document.getElementById(id));
  }
  function renderCharts(history) {
    if (!charts.allocation) {
      charts.allocation = makeChart("chart-allocation", [["cpu", "#3d6fd8"], ["memory", "#8e44ad"], ["pods", "#16a085"]], [0, 100]);
      charts.pending = makeChart("chart-pending", [["unscheduled", "#b25e09"]]);
      charts.rate = makeChart("chart-rate", [["pods/s", "#1a7f4b"]]);
    }
    if (!charts.allocation) return;
    const t = history.map((s) => s.atMs / 1000);
    charts.allocation.setData([t, history.map((s) => s.cpu), history.map((s) => s.memory), history.map((s) => s.pods)]);
    charts.pending.setData([t, history.map((s) => s.unscheduled)]);
    charts.rate.setData([t, history.map((s) => s.scheduledPerSecond)]);
    document.body.dataset.samples = String(history.length);
  }
  window.addEventListener("resize", () => {
    for (const [name, id] of [["allocation", "chart-allocation"], ["pending", "chart-pending"], ["rate", "chart-rate"]]) {
      if (charts[name]) charts[name].setSize({ width: chartWidth(id), height: 160 });
    }
  });

  function render(view) {
    const now = view.generatedMs;
    renderSummary(view.summary);
    renderNodes(view.nodes, view.summary.nodes);
    renderPods(view.pods, view.summary.pods, now);
    renderEvents(view.events, now);
    renderCharts(view.history);
    document.body.dataset.updated = String(now);
  }

  function connection(state, text) {
    const badge = document.getElementById("connection");
    badge.dataset.state = state;
    badge.textContent = text;
  }

  // The stream sends the whole view now and after every change; EventSource reconnects by
  // itself when the connection drops (the server restarting, say).
  const source = new EventSource("api/stream");
  source.addEventListener("view", (message) => {
    const view = JSON.parse(message.data);
    if (view === null) return;
    render(view);
    connection("live", "live · " + new Date(view.generatedMs).toLocaleTimeString());
  });
  source.addEventListener("error", () => connection("lost", "disconnected, retrying…"));
})();
