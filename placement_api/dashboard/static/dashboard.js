// The dashboard page: reads /api/summary and one page of /api/hosts, and reads
// them again each time /api/events says the snapshot changed. No framework:
// every value goes into the DOM as text (never as HTML).
"use strict";

const view = { q: "", only: "all", order: "name", page: 1 };
let reading = null;   // the read in flight, if any
let readAgain = false; // an event came while it was in flight

const $ = (id) => document.getElementById(id);
const fmt = new Intl.NumberFormat("en");

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function number(value) {
  const cell = el("td", fmt.format(value), "num");
  if (value < 0) cell.classList.add("negative");
  return cell;
}

async function getJSON(path) {
  const response = await fetch(path, { headers: { accept: "application/json" } });
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
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
      showSummary(summary);
      showHosts(hosts);
    } while (readAgain);
  })();
  try { await reading; } catch (error) { showError(String(error)); } finally { reading = null; }
}

function showError(message) {
  $("error").hidden = !message;
  $("error").textContent = message || "";
}

function showSummary(s) {
  showError(s.error);
  $("read-at").textContent = s.read_at
    ? `read ${s.read_at} · feed index ${s.feed_index ?? "–"} · version ${s.version}`
    : "waiting for the first read";
  showFits(s);
  showClasses(s.resource_classes || {});
  $("counting").textContent = s.counting || "";
  $("counting-details").hidden = !s.counting;
  showDown(s.liveness);
  showOver(s.over_capacity);
  showChanges(s.changes || []);
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
    const where = el("td", label, "where");
    where.title = title || label;
    tr.append(where, number(hosts));
    for (const flavor of flavors) {
      const cell = number((fits || {})[flavor] ?? 0);
      cell.dataset.flavor = flavor;
      tr.append(cell);
    }
    rows.push(tr);
  };
  if (s.host_count !== undefined) row("total", "whole cloud", s.host_count, s.fits);
  for (const zone of s.availability_zones || []) {
    row(`az:${zone.name}`, `zone ${zone.name}`, zone.hosts, zone.fits);
  }
  for (const agg of s.aggregates || []) {
    const zone = agg.availability_zone ? ` (zone ${agg.availability_zone})` : "";
    const label = `aggregate ${agg.name || agg.uuid.slice(0, 8) + "…"}${zone}`;
    row(`aggregate:${agg.uuid}`, label, agg.hosts, agg.fits, agg.uuid);
  }
  $("fits").tBodies[0].replaceChildren(...rows);
}

function showClasses(classes) {
  const rows = Object.entries(classes).sort().map(([rc, c]) => {
    const tr = el("tr");
    tr.dataset.rc = rc;
    const share = `${((c.overcommitted_share ?? 0) * 100).toFixed(1)}%`;
    tr.append(el("td", rc), number(c.capacity), number(c.used), number(c.free),
      number(c.reserved), el("td", share, "num"));
    return tr;
  });
  $("classes").tBodies[0].replaceChildren(...rows);
}

function showDown(liveness) {
  const list = [];
  if (!liveness || !liveness.available) {
    const reason = liveness ? liveness.reason : "not read yet";
    $("liveness-note").textContent = `Liveness not available: ${reason}.`;
    $("down-count").textContent = "";
  } else {
    $("liveness-note").textContent = liveness.down_count
      ? `Server time ${liveness.now}. Hosts that never sent a heartbeat are not listed (unknown).`
      : `None (server time ${liveness.now}). Hosts that never sent a heartbeat are not listed.`;
    $("down-count").textContent = `(${liveness.down_count})`;
    for (const beat of liveness.down) {
      const li = el("li", `${beat.name || beat.resource_provider_uuid} — last seen ${beat.last_seen}`);
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
      .map(([rc, c]) => `${rc} ${fmt.format(c.used)} used of ${fmt.format(c.capacity)}`);
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
    return el("li", `#${c.index} ${c.resource} ${c.action}${where} (${c.seen_at})`);
  });
  if (!items.length) items.push(el("li", "none since the dashboard started", "muted"));
  $("changes").replaceChildren(...items);
}

function usageCell(figures) {
  const cell = el("td");
  if (!figures) return cell;
  const { total, reserved, allocation_ratio: ratio, capacity, used } = figures;
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
  const text = el("span", `${fmt.format(used)}/${fmt.format(capacity)}`, "figures");
  if (used > capacity) text.classList.add("negative");
  const wrap = el("div", null, "usage");
  wrap.title = `used ${used} of capacity ${capacity} = (total ${total} − reserved ${reserved}) × ${ratio}`;
  wrap.append(bar, text);
  cell.append(wrap);
  return cell;
}

function showHosts(page) {
  const classes = [...new Set(page.hosts.flatMap((h) => Object.keys(h.resources)))].sort();
  const head = el("tr");
  head.append(el("th", "host"));
  for (const rc of classes) head.append(el("th", `${rc} used/capacity`));
  for (const flavor of page.flavors) head.append(el("th", `fits ${flavor}`, "num"));
  $("hosts").tHead.replaceChildren(head);
  const rows = page.hosts.map((host) => {
    const tr = el("tr");
    tr.dataset.uuid = host.uuid;
    if (host.down) tr.classList.add("down");
    tr.append(el("td", host.name));
    for (const rc of classes) {
      const cell = usageCell(host.resources[rc]);
      cell.dataset.rc = rc;
      tr.append(cell);
    }
    for (const flavor of page.flavors) {
      const cell = number(host.fits[flavor] ?? 0);
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
  events.onopen = () => { $("connection").textContent = "live"; $("connection").className = "pill live"; };
  events.onerror = () => { $("connection").textContent = "reconnecting…"; $("connection").className = "pill lost"; };
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
