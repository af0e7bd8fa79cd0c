// The dashboard page: reads /api/summary and one page of /api/hosts, and reads
// them again each time /api/events says the snapshot changed. No framework:
// every value goes into the DOM as text (never as HTML).
"use strict";

const view = { q: "", only: "all", order: "name", page: 1 };
let reading = null;   // the read in flight, if any
let readAgain = false; // an event came while it was in flight
let streamOpen = false;
let lastSummary = null;
let unreachable = null; // why the dashboard itself did not answer, if it did not

const $ = (id) => document.getElementById(id);
const fmt = new Intl.NumberFormat("en");
const fmt1 = new Intl.NumberFormat("en", { maximumFractionDigits: 1 });
const SVG = "http://www.w3.org/2000/svg";
// Placement's amounts of these classes are MiB and GiB: shown in the largest unit that fits.
const UNITS = { MEMORY_MB: ["MiB", "GiB", "TiB", "PiB"], DISK_GB: ["GiB", "TiB", "PiB"] };

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function amount(rc, value) {
  const units = UNITS[rc];
  if (!units) return fmt.format(value);
  let scaled = value, unit = 0;
  while (Math.abs(scaled) >= 1024 && unit < units.length - 1) { scaled /= 1024; unit += 1; }
  return `${unit ? fmt1.format(scaled) : fmt.format(scaled)} ${units[unit]}`;
}

// RFC 3339 to the second, in UTC: "2026-11-24 00:01:02 UTC".
function when(text) {
  if (!text) return "–";
  return String(text).replace("T", " ").replace(/\.\d+/, "").replace(/(Z|\+00:00)$/, " UTC");
}

function number(value, rc) {
  const cell = el("td", value === null || value === undefined ? "–" : (rc ? amount(rc, value) : fmt.format(value)), "num");
  if (value < 0) cell.classList.add("negative");
  return cell;
}

async function getJSON(path) {
  const response = await fetch(path, { headers: { accept: "application/json" } });
  if (!response.ok) throw new Error(`the dashboard answered ${path} with ${response.status}`);
  return response.json();
}

// One read at a time; events that arrive meanwhile cause exactly one more.
async function readAll() {
  if (reading) { readAgain = true; return reading; }
  reading = (async () => {
    do {
      readAgain = false;
      const params = new URLSearchParams({ ...view, page: String(view.page) });
      const [summary, hosts] = await Promise.all([
        getJSON("/api/summary"), getJSON(`/api/hosts?${params}`),
      ]);
      unreachable = null;
      showSummary(summary);
      showHosts(hosts);
    } while (readAgain);
  })();
  try { await reading; } catch (error) { unreachable = String(error.message || error); showState(); }
  finally { reading = null; }
}

// The badge says "live" only while the event stream is open, the last read of the
// API succeeded and liveness could be read; any failure is named, in red or amber.
function showState() {
  const s = lastSummary;
  const badge = $("connection");
  let text = "live", kind = "live", banner = null;
  if (unreachable) {
    [text, kind, banner] = ["dashboard unreachable", "failing", unreachable];
  } else if (s && s.error) {
    [text, kind, banner] = ["failing: reads refused or failed", "failing",
      `The dashboard cannot read the Placement API: ${s.error}`];
  } else if (!s || !s.read_at) {
    [text, kind] = ["loading…", ""];
  } else if (!streamOpen) {
    [text, kind] = ["reconnecting…", "lost"];
  } else if (s.liveness && !s.liveness.available && s.liveness.reason !== "not read yet") {
    [text, kind] = ["degraded: no liveness", "degraded"];
  } else if (s.host_detail && !s.host_detail.available) {
    [text, kind] = ["degraded: no host detail", "degraded"];
  }
  badge.textContent = text;
  badge.className = `pill ${kind}`.trim();
  $("error").hidden = !banner;
  $("error").textContent = banner || "";
  const hasData = Boolean(s && s.read_at);
  $("main").hidden = !hasData;
  $("loading").hidden = hasData;
  if (!hasData) {
    $("loading").textContent = banner
      ? "No data yet: the first read of the Placement API failed (see above); retrying."
      : "Loading: waiting for the dashboard's first read of the Placement API…";
  }
}

function showSummary(s) {
  lastSummary = s;
  showState();
  $("read-at").textContent = s.read_at
    ? `read ${when(s.read_at)} · feed index ${s.feed_index ?? "–"} · version ${s.version}`
    : "waiting for the first read";
  if (!s.read_at) return;
  showFits(s);
  showClasses(s.resource_classes || {});
  $("counting").textContent = s.counting || "";
  $("counting-details").hidden = !s.counting;
  showHistory(s.history || [], s.flavors || []);
  showDown(s.liveness, s.unavailable);
  showOver(s.over_capacity);
  showChanges(s.changes || []);
  const refused = s.host_detail && !s.host_detail.available;
  $("host-detail-note").hidden = !refused;
  $("host-detail-note").textContent = refused
    ? `No host detail: the dashboard's credentials may not read it (policy placement:capacity:hosts:read): ${s.host_detail.reason}`
    : "";
}

function showFits(s) {
  const flavors = s.flavors || [];
  $("no-flavors").hidden = flavors.length > 0;
  const head = el("tr");
  head.append(el("th", "where"), el("th", "hosts", "num"));
  for (const flavor of flavors) head.append(el("th", flavor, "num"));
  $("fits").tHead.replaceChildren(head);
  const rows = [];
  const row = (scope, label, hosts, fits, title) => {
    const tr = el("tr");
    tr.dataset.scope = scope;
    const where = el("td", label, "where-cell");
    where.title = title || label;
    tr.append(where, number(hosts));
    for (const flavor of flavors) {
      const cell = number((fits || {})[flavor] ?? 0);
      cell.dataset.flavor = flavor;
      tr.append(cell);
    }
    rows.push(tr);
  };
  row("total", "whole cloud", s.host_count, s.fits);
  for (const zone of s.availability_zones || []) {
    row(`az:${zone.name}`, `zone ${zone.name}`, zone.hosts, zone.fits);
  }
  for (const agg of s.aggregates || []) {
    const zone = agg.availability_zone ? ` (zone ${agg.availability_zone})` : "";
    const label = `aggregate ${agg.name || agg.uuid.slice(0, 8) + "…"}${zone}`;
    row(`aggregate:${agg.uuid}`, label, agg.hosts, agg.fits, agg.uuid);
  }
  const left = s.unavailable || { hosts: 0 };
  if (left.hosts) {
    row("unavailable", "more on hosts down or disabled (not counted)", left.hosts, left.fits,
      "instances that would fit in addition if the hosts down or disabled were counted");
  }
  $("fits").tBodies[0].replaceChildren(...rows);
  $("unavailable-note").textContent = left.hosts
    ? `Hosts down (${left.down}) or disabled (${left.disabled}) are not counted above, as the scheduler refuses them.`
    : "Every host is counted: none is down or disabled.";
}

function showClasses(classes) {
  const rows = Object.entries(classes).sort().map(([rc, c]) => {
    const tr = el("tr");
    tr.dataset.rc = rc;
    const share = `${((c.overcommitted_share ?? 0) * 100).toFixed(1)}%`;
    tr.append(el("td", rc), number(c.capacity, rc), number(c.used, rc), number(c.free, rc),
      number(c.reserved, rc), el("td", share, "num"));
    return tr;
  });
  $("classes").tBodies[0].replaceChildren(...rows);
}

function chart(label, now, values, top, title) {
  const box = el("div", null, "chart");
  box.title = title;
  const caption = el("div", null, "caption");
  caption.append(el("span", label), el("span", now, "muted"));
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 100 100");
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `${label}: ${now}`);
  const line = document.createElementNS(SVG, "polyline");
  const step = values.length > 1 ? 100 / (values.length - 1) : 0;
  const scale = top > 0 ? top : 1;
  line.setAttribute("points", values.map((v, i) =>
    `${(i * step).toFixed(2)},${(100 - Math.max(0, Math.min(100, (100 * v) / scale))).toFixed(2)}`).join(" "));
  svg.append(line);
  box.append(caption, svg);
  return box;
}

function showHistory(samples, flavors) {
  const charts = [];
  if (samples.length) {
    const last = samples[samples.length - 1];
    for (const [rc, c] of Object.entries(last.classes)) {
      const shares = samples.map((s) => (s.classes[rc] && s.classes[rc].capacity > 0
        ? s.classes[rc].used / s.classes[rc].capacity : 0));
      const now = `${fmt1.format(100 * shares[shares.length - 1])}% used (${amount(rc, c.used)} of ${amount(rc, c.capacity)})`;
      charts.push(chart(rc, now, shares, 1, `${rc}: used over capacity, 0 to 100%`));
    }
    for (const flavor of flavors) {
      const fits = samples.map((s) => s.fits[flavor] ?? 0);
      const top = Math.max(...fits, 1);
      charts.push(chart(`fits ${flavor}`, fmt.format(fits[fits.length - 1]), fits, top,
        `instances of ${flavor} that still fit, 0 to ${top}`));
    }
  }
  $("history").replaceChildren(...charts);
  $("history-note").textContent = samples.length
    ? `${samples.length} sample${samples.length === 1 ? "" : "s"} since ${when(samples[0].at)}, kept in the dashboard's memory (lost on restart).`
    : "No samples yet.";
}

function showDown(liveness, unavailable) {
  const list = [];
  const disabled = unavailable && unavailable.disabled
    ? ` ${unavailable.disabled} more disabled (filter the host table by "disabled").` : "";
  if (!liveness || !liveness.available) {
    const reason = liveness ? liveness.reason : "not read yet";
    $("liveness-note").textContent = `Liveness not available: ${reason}.${disabled}`;
    $("down-count").textContent = "";
  } else {
    $("liveness-note").textContent = (liveness.down_count
      ? `Server time ${when(liveness.now)}. Hosts that never sent a heartbeat are not listed (unknown).`
      : `None (server time ${when(liveness.now)}). Hosts that never sent a heartbeat are not listed.`) + disabled;
    $("down-count").textContent = `(${liveness.down_count})`;
    for (const beat of liveness.down) {
      const li = el("li", `${beat.name || beat.resource_provider_uuid} — last seen ${when(beat.last_seen)}`);
      li.dataset.uuid = beat.resource_provider_uuid;
      list.push(li);
    }
  }
  $("down").replaceChildren(...list);
}

function showOver(over) {
  if (!over) {  // capacity not read yet: say nothing rather than "none"
    $("over-count").textContent = "";
    $("over").replaceChildren(el("li", "not read yet", "muted"));
    return;
  }
  $("over-count").textContent = `(${over.count})`;
  const items = over.hosts.map((host) => {
    const parts = Object.entries(host.classes)
      .map(([rc, c]) => `${rc} ${amount(rc, c.used)} used of ${amount(rc, c.capacity)}`);
    const li = el("li", `${host.name}: ${parts.join(", ")}`);
    li.dataset.uuid = host.uuid;
    return li;
  });
  if (over.count > over.hosts.length) items.push(el("li", `… and ${over.count - over.hosts.length} more`));
  if (!items.length) items.push(el("li", "none", "muted"));
  $("over").replaceChildren(...items);
}

function showChanges(changes) {
  const items = changes.map((c) => {
    const where = c.providers.length ? ` on ${c.providers.join(", ")}` : ` ${c.uuid}`;
    return el("li", `#${c.index} ${c.resource} ${c.action}${where} (${when(c.seen_at)})`);
  });
  if (!items.length) items.push(el("li", "none since the dashboard started", "muted"));
  $("changes").replaceChildren(...items);
}

function usageCell(rc, figures) {
  const cell = el("td");
  if (!figures) return cell;
  const { total, reserved, allocation_ratio: ratio, capacity, used } = figures;
  cell.dataset.used = String(used);
  cell.dataset.capacity = String(capacity);
  const physical = Math.max(0, total - reserved);
  const scale = Math.max(capacity, used, 1);
  const bar = el("span", null, "bar");
  const segment = (className, from, to) => {
    if (to <= from) return;
    const part = el("span", null, className);
    part.style.left = `${(100 * from) / scale}%`;
    part.style.width = `${(100 * (to - from)) / scale}%`;
    bar.append(part);
  };
  segment("headroom", physical, capacity);
  segment("used", 0, Math.min(used, physical));
  segment("overcommit", physical, Math.min(used, capacity));
  segment("over", capacity, used);
  const text = el("span", `${amount(rc, used)}/${amount(rc, capacity)}`, "figures");
  if (used > capacity) text.classList.add("negative");
  const wrap = el("div", null, "usage");
  wrap.title = `used ${amount(rc, used)} of capacity ${amount(rc, capacity)} = (total ${amount(rc, total)} − reserved ${amount(rc, reserved)}) × ${ratio}`;
  wrap.append(bar, text);
  cell.append(wrap);
  return cell;
}

// An aggregate the aggregates file names is shown by name, else by its uuid's start.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const shortUuid = (text) => (UUID.test(text) ? `${text.slice(0, 8)}…` : text);

function hostCell(host) {
  const cell = el("td");
  cell.append(el("span", host.name, "host-name"));
  for (const state of ["disabled", "down"]) {
    if (host[state]) cell.append(el("span", state, `state ${state}`));
  }
  const where = [host.zones.length ? `zone ${host.zones.join(", ")}` : "",
    host.aggregates.map(shortUuid).join(", ")].filter(Boolean).join(" · ");
  if (where) cell.append(el("span", where, "where"));
  cell.title = host.uuid + (host.last_seen ? ` · last heartbeat ${when(host.last_seen)}` : "");
  return cell;
}

function utilisationCell(host) {
  const u = host.utilisation || {};
  const parts = [];
  if (u["cpu.percent"] !== undefined) parts.push(`CPU ${fmt1.format(u["cpu.percent"])}%`);
  if (u["memory.percent"] !== undefined) parts.push(`mem ${fmt1.format(u["memory.percent"])}%`);
  if (!parts.length && u["instances.cpu.percent"] !== undefined) {
    parts.push(`guests ${fmt1.format(u["instances.cpu.percent"])}% CPU`);
  }
  const cell = el("td", parts.length ? parts.join(" · ") : "–", parts.length ? "" : "muted");
  cell.dataset.col = "utilisation";
  cell.title = "what the host's agent measured at its last heartbeat";
  return cell;
}

function showHosts(page) {
  const classes = [...new Set(page.hosts.flatMap((h) => Object.keys(h.resources)))].sort();
  const head = el("tr");
  head.append(el("th", "host"), el("th", "instances", "num"), el("th", "utilisation"));
  for (const rc of classes) head.append(el("th", `${rc} used/capacity`));
  for (const flavor of page.flavors) head.append(el("th", `fits ${flavor}`, "num"));
  $("hosts").tHead.replaceChildren(head);
  const rows = page.hosts.map((host) => {
    const tr = el("tr");
    tr.dataset.uuid = host.uuid;
    tr.dataset.state = host.disabled && host.down ? "disabled,down"
      : host.disabled ? "disabled" : host.down ? "down" : "enabled";
    if (host.down || host.disabled) tr.classList.add("unavailable");
    const consumers = number(host.consumers);
    consumers.dataset.col = "consumers";
    tr.append(hostCell(host), consumers, utilisationCell(host));
    for (const rc of classes) {
      const cell = usageCell(rc, host.resources[rc]);
      cell.dataset.rc = rc;
      tr.append(cell);
    }
    for (const flavor of page.flavors) {
      const cell = number(host.fits[flavor]);
      if (host.fits[flavor] === null) cell.title = "not counted: the host is down or disabled";
      cell.dataset.flavor = flavor;
      tr.append(cell);
    }
    return tr;
  });
  $("hosts").tBodies[0].replaceChildren(...rows);
  $("hosts-count").textContent = `(${fmt.format(page.total)})`;
  $("page").textContent = `page ${page.page} of ${page.pages}`;
  view.page = page.page;
  $("prev").disabled = page.page <= 1;
  $("next").disabled = page.page >= page.pages;
}

function connect() {
  const events = new EventSource("/api/events");
  events.addEventListener("snapshot", () => readAll());
  events.onopen = () => { streamOpen = true; showState(); };
  events.onerror = () => { streamOpen = false; showState(); };
}

function controls() {
  let typing = null;
  $("search").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => { view.q = $("search").value; view.page = 1; readAll(); }, 200);
  });
  $("only").addEventListener("change", () => { view.only = $("only").value; view.page = 1; readAll(); });
  $("order").addEventListener("change", () => { view.order = $("order").value; view.page = 1; readAll(); });
  $("prev").addEventListener("click", () => { view.page -= 1; readAll(); });
  $("next").addEventListener("click", () => { view.page += 1; readAll(); });
  $("host-controls").addEventListener("submit", (event) => event.preventDefault());
}

controls();
connect();
readAll();
