// The lab page's script: it polls the API once a second and draws what it
// reads; every control calls an endpoint the command line can call too, and
// prints that command. Plain JavaScript, no build step.
"use strict";

const pollMs = 1000;
let selected = new URLSearchParams(location.hash.slice(1)).get("order") || "";
let switchable = false;

const $ = (id) => document.getElementById(id);

// --- projector mode ---------------------------------------------------------

// Projector mode makes the page legible from the back of a room (lab.css:
// html.projector). The header's button switches it; ?projector=1 or
// ?projector=0 in the address sets it; either choice is remembered in this
// browser's localStorage for the next visit. A browser that keeps no storage
// (a private window may refuse it) still switches, for this visit.
const projectorKey = "orderpaid-lab-projector";

function rememberedProjector() {
  try { return localStorage.getItem(projectorKey) === "1"; } catch { return false; }
}

function setProjector(on, remember) {
  document.documentElement.classList.toggle("projector", on);
  $("projector").setAttribute("aria-pressed", String(on));
  if (!remember) return;
  try { localStorage.setItem(projectorKey, on ? "1" : "0"); } catch { /* this visit only */ }
}

function initProjector() {
  const asked = new URLSearchParams(location.search).get("projector");
  if (asked === null) setProjector(rememberedProjector(), false);
  else setProjector(asked !== "0" && asked !== "false" && asked !== "off", true);
  $("projector").addEventListener("click", () => setProjector(!document.documentElement.classList.contains("projector"), true));
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else if (k === "onclick") e.addEventListener("click", v);
    else e[k] = v;
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// api does one request and returns the decoded answer; a problem detail
// (4xx, 5xx) is thrown as an Error carrying its detail.
async function api(method, path, body, headers) {
  const init = { method, headers: Object.assign({}, headers) };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (!resp.ok) {
    const p = data && typeof data === "object" ? data : {};
    throw new Error(`${method} ${path}: ${resp.status} ${p.title || ""}${p.detail ? ": " + p.detail : ""}`);
  }
  return data;
}

function showCommand(lines) {
  $("last-command").textContent = lines.filter(Boolean).join("\n");
}

function showError(err) {
  const box = $("error");
  box.hidden = !err;
  box.textContent = err ? String(err.message || err) : "";
}

// act runs one control and prints what it did; errors go to the error line.
async function act(fn) {
  try {
    showError(null);
    await fn();
    await refresh();
  } catch (err) {
    showError(err);
  }
}

function select(id) {
  selected = id;
  location.hash = id ? "order=" + id : "";
  $("selected-order").textContent = id || "none";
  $("selected-order").setAttribute("data-order", id || "");
  for (const b of ["pay", "pay-new-key", "replay-order", "redeliver", "refund", "refund-new-key"]) $(b).disabled = !id;
}

// --- controls -------------------------------------------------------------

// curl prints the command line of one request to the API the page made.
function curl(method, path, body, headers) {
  let line = `curl -X ${method} $API_URL${path} -H 'Content-Type: application/json'`;
  for (const [k, v] of Object.entries(headers || {})) line += ` -H '${k}: ${v}'`;
  return line + ` -d '${JSON.stringify(body)}'`;
}

async function createOrder() {
  const body = { customer_id: $("customer").value, amount_cents: Number($("amount").value), currency: "BRL" };
  if ($("affiliate").value) body.affiliate_id = $("affiliate").value;
  const units = Number($("quantity").value);
  if (units > 0) body.items = [{ sku: $("sku").value, quantity: units }];
  const o = await api("POST", "/orders", body);
  select(o.id);
  return [o, curl("POST", "/orders", body)];
}

async function pay(key) {
  const p = await api("POST", `/orders/${selected}/payments`, {}, { "Idempotency-Key": key });
  return `${curl("POST", `/orders/${selected}/payments`, {}, { "Idempotency-Key": key })}\n→ ${JSON.stringify(p)}`;
}

// refund asks the API to refund the selected order (exercise 11): the
// worker then asks the gateway, and gives back the stock and the commission.
async function refund(key) {
  const body = $("refund-note").value ? { note: $("refund-note").value } : {};
  const path = `/orders/${selected}/refunds`;
  const r = await api("POST", path, body, { "Idempotency-Key": key });
  return `${curl("POST", path, body, { "Idempotency-Key": key })}\n→ ${JSON.stringify(r)}`;
}

// setStock sets the SKU's stock to an absolute value (exercise 9).
async function setStock() {
  const sku = $("sku").value, body = { available: Number($("stock-available").value) };
  const path = `/stock/${encodeURIComponent(sku)}`;
  const level = await api("PUT", path, body);
  return `${curl("PUT", path, body)}\n→ ${JSON.stringify(level)}`;
}

function printDone(d) {
  showCommand([d.cli, d.ok ? "" : "FAILED", d.output, d.result ? JSON.stringify(d.result) : ""]);
  if (!d.ok) throw new Error(d.output || "the command failed");
}

$("create").onclick = () => act(async () => { const [, cli] = await createOrder(); showCommand([cli]); });
$("create-pay").onclick = () => act(async () => {
  const [, cli] = await createOrder();
  showCommand([cli, await pay("lab-" + selected)]);
});
$("pay").onclick = () => act(async () => showCommand([await pay("lab-" + selected)]));
$("pay-new-key").onclick = () => act(async () => showCommand([await pay("lab-" + crypto.randomUUID())]));
$("replay-order").onclick = () => act(async () => printDone(await api("POST", "/lab/replay", { order_id: selected })));
$("replay-poison").onclick = () => act(async () => printDone(await api("POST", "/lab/replay", { poison: true })));
$("redeliver").onclick = () => act(async () => printDone(await api("POST", `/lab/orders/${selected}/redeliver`, {
  count: Number($("redeliver-count").value),
  new_event_id: $("redeliver-new-event").checked,
  concurrent: $("redeliver-concurrent").checked,
  refund: $("redeliver-refund").checked,
})));
$("refund").onclick = () => act(async () => showCommand([await refund("lab-refund-" + selected)]));
$("refund-new-key").onclick = () => act(async () => showCommand([await refund("lab-refund-" + crypto.randomUUID())]));
$("set-stock").onclick = () => act(async () => showCommand([await setStock()]));

function replayMessage(id) {
  act(async () => printDone(await api("POST", "/lab/replay", { message_id: id })));
}

function switchGuard(name, off) {
  act(async () => printDone(await api("POST", `/lab/guards/${name}`, { off })));
}

// The provider forms are drawn once, so polling never wipes what is typed;
// only their "now" line follows the fakes.
function drawProviderForms() {
  const box = $("providers");
  for (const name of ["gateway", "notifications"]) {
    const field = (f, v, min, max) => el("label", {}, f.replace("_", " ") + " ",
      el("input", { id: `${name}-${f.replaceAll("_", "-")}`, type: "number", value: v, min, max }));
    const apply = (body) => act(async () => printDone(await api("POST", `/lab/providers/${name}`, body)));
    box.append(el("div", { class: "provider" },
      el("strong", {}, name === "gateway" ? "payment gateway" : "notification provider"),
      el("div", { class: "now", id: `${name}-now` }, "…"),
      el("div", { class: "row" }, field("fail_next", 3, 0), field("fail_status", 503, 400, 599), field("delay_ms", 0, 0)),
      el("div", { class: "row" },
        el("button", { type: "button", id: `${name}-apply`, onclick: () => apply({
          fail_next: Number($(`${name}-fail-next`).value),
          fail_status: Number($(`${name}-fail-status`).value),
          delay_ms: Number($(`${name}-delay-ms`).value),
        }) }, "Apply"),
        el("button", { type: "button", class: "secondary", id: `${name}-reset`, onclick: () => apply({}) }, "Well-behaved again"))));
  }
}

// --- drawing --------------------------------------------------------------

function drawHeader(st) {
  $("process").textContent = `orderpaid ${st.process} · broker ${st.broker} · fakes ${st.fakes_url}`;
  const off = st.guards.filter((g) => g.off).map((g) => g.name);
  const banner = $("banner");
  banner.hidden = off.length === 0;
  banner.textContent = off.length ? `⚠ Guards switched off: ${off.join(", ")}. Effects may happen twice; this is a workshop run, never production.` : "";
}

function drawGuards(st) {
  switchable = st.switchable;
  $("guards-note").textContent = st.switchable
    ? "Switching a guard applies to the api and the worker of this process from their next step."
    : st.guards_note;
  const list = $("guards");
  list.replaceChildren(...st.guards.map((g) => el("li", { class: g.off ? "off" : "", "data-guard": g.name, "data-off": String(g.off) },
    el("span", {}, g.name + (g.off ? " — OFF" : "") + (g.fixed ? " (--without)" : "")),
    el("button", {
      type: "button", class: "small" + (g.off ? "" : " secondary"), id: "guard-" + g.name,
      disabled: !switchable || g.fixed, onclick: () => switchGuard(g.name, !g.off),
    }, g.off ? "switch on" : "switch off"))));
}

// drawFaults offers the fault points this process lets the page arm: the
// worker fails there as a crash there would leave it, and is redelivered.
function drawFaults(st) {
  const points = st.fault_points || [];
  $("faults-note").textContent = points.length
    ? "Arms a fault point in error mode: the handler stops there as a crash would leave it (what committed stays, the rest has not happened, the message is not acknowledged), and the broker redelivers."
    : "Only where the page shares a process with the worker (orderpaid all). A separate worker takes --faults POINT=crash:1 at its start, which kills it for real.";
  const sel = $("fault-point");
  if (sel.options.length !== points.length) {
    sel.replaceChildren(...points.map((p) => el("option", { value: p }, p)));
  }
  $("arm-fault").disabled = points.length === 0;
}

function armFault() {
  const times = Number($("fault-times").value) || 1;
  act(async () => printDone(await api("POST", `/lab/faults/${$("fault-point").value}`, { times })));
}

function drawProviders(st) {
  for (const name of ["gateway", "notifications"]) {
    const now = st.providers[name];
    $(`${name}-now`).textContent = now
      ? "now: " + Object.entries(now).map(([k, v]) => `${k} ${v}`).join(", ")
      : st.providers_error || "not reachable";
  }
}

function drawPoison(st) {
  const c = $("poison-count");
  c.textContent = st.poison.length;
  c.className = "count" + (st.poison.length ? " some" : "");
  $("poison").replaceChildren(...st.poison.map((p) => el("li", { class: "hint" },
    `#${p.id} ${p.topic} (${p.handler}) order ${p.order_id || "-"}: ${p.reason}`)));
}

// drawOrders draws a row per order with every key the audit returns: a new
// effect appears as a new column without a change here.
function drawOrders(orders, audits) {
  const keys = (field) => [...new Set(audits.flatMap((a) => Object.keys((a && a[field]) || {})))].sort();
  // A handler that ran for none of these orders (a refund handler, say)
  // gets no column; every effect does, a 0 there is information.
  const execKeys = keys("executions").filter((k) => audits.some((a) => a && a.executions[k] > 0));
  const effectKeys = keys("effects");
  // Long names wrap at their underscores; in projector mode (lab.css) they
  // stand on end, one line each, so every column fits across the screen.
  const label = (k, kind) => {
    const name = el("span", { class: "k" });
    k.split("_").forEach((part, i) => { if (i) name.append("_", el("wbr")); name.append(part); });
    return el("th", { class: "key", title: k, [kind === "executions" ? "data-execution" : "data-effect"]: k }, name);
  };
  const thead = $("orders").tHead;
  thead.replaceChildren(
    el("tr", {}, el("th", { colSpan: 3 }), el("th", { class: "group", colSpan: execKeys.length || 1 }, "executions"),
      el("th", { class: "group", colSpan: effectKeys.length || 1 }, "effects"), el("th", {})),
    el("tr", {}, el("th", {}, "order"), el("th", {}, "status"), el("th", {}, "amount"),
      ...execKeys.map((k) => label(k, "executions")), ...effectKeys.map((k) => label(k, "effects")), el("th", { title: "what orderpaid reconcile settled" }, "reconciled")));
  const rows = orders.map((o, i) => {
    const a = audits[i] || { executions: {}, effects: {}, cleaned: [] };
    const cell = (kind, k) => {
      const n = (a[kind] || {})[k] ?? 0;
      const cls = "n" + (kind === "executions" ? " exec" : n > 1 ? " twice" : "") + (n === 0 ? " zero" : "");
      const attrs = { class: cls, title: (a.cleaned || []).includes(k) ? "evidence cleaned by retention" : "" };
      attrs[kind === "executions" ? "data-execution" : "data-effect"] = k;
      return el("td", attrs, n);
    };
    return el("tr", { class: o.id === selected ? "selected" : "", "data-order": o.id, onclick: () => { select(o.id); refresh(); } },
      el("td", { class: "id", title: o.id }, o.id.slice(0, 8)), el("td", {}, o.status),
      el("td", {}, (o.amount_cents / 100).toFixed(2) + " " + o.currency),
      ...execKeys.map((k) => cell("executions", k)), ...effectKeys.map((k) => cell("effects", k)),
      el("td", { class: "reconciled" }, (a.reconciled || []).join(", ") || "-"));
  });
  $("orders").tBodies[0].replaceChildren(...rows);
}

function drawTimeline(tl) {
  const list = $("timeline");
  if (!tl) { list.replaceChildren(el("li", { class: "hint" }, "select an order")); return; }
  const items = tl.events.slice().reverse().map((e) => {
    const body = el("div", {}, e.title);
    if (e.detail) body.append(el("div", { class: "detail" }, e.detail));
    if (e.outcomes) {
      const answers = el("div", {});
      for (const r of e.outcomes) answers.append(el("span", { class: "outcome " + r.outcome, title: r.technique }, `${r.effect}: ${r.outcome}`));
      if (e.error) answers.append(el("span", { class: "outcome failed" }, "error: " + e.error));
      body.append(answers);
    }
    if (e.kind === "execution" && e.message_id) {
      body.append(el("button", { type: "button", class: "small secondary", onclick: () => replayMessage(e.message_id) }, "re-enqueue this message"));
    }
    return el("li", { "data-kind": e.kind },
      el("span", { class: "at" }, new Date(e.at).toLocaleTimeString()), el("span", { class: "kind " + e.kind }, e.kind), body);
  });
  for (const n of tl.notes) items.push(el("li", { class: "hint" }, n));
  list.replaceChildren(...items);
}

// drawStock shows the SKU's stock, GET /stock/{sku}, or why it has none.
function drawStock(level, err) {
  const now = $("stock-now");
  if (level) {
    now.textContent = `now: ${level.sku} available ${level.available}, reserved ${level.reserved}`;
    now.setAttribute("data-available", String(level.available));
  } else {
    now.textContent = err && /: 404 /.test(err.message) ? "no stock for this SKU yet: set it (an order of it is short and gets refunded)" : "stock not readable: " + (err ? err.message : "");
    now.setAttribute("data-available", "");
  }
}

// refresh reads everything once and draws it.
async function refresh() {
  const st = await api("GET", "/lab/state");
  const audits = await Promise.all(st.orders.map((o) => api("GET", `/orders/${o.id}/audit`).catch(() => null)));
  const tl = selected ? await api("GET", `/lab/orders/${selected}/timeline`).catch(() => null) : null;
  const sku = $("sku").value;
  let level = null, stockErr = null;
  if (sku) {
    try { level = await api("GET", `/stock/${encodeURIComponent(sku)}`); } catch (err) { stockErr = err; }
  }
  drawStock(level, stockErr);
  drawHeader(st);
  drawGuards(st);
  drawFaults(st);
  drawProviders(st);
  drawPoison(st);
  drawOrders(st.orders, audits);
  drawTimeline(tl);
  document.body.setAttribute("data-refreshed", String(Date.now()));
}

async function loop() {
  try {
    await refresh();
    if ($("error").textContent.startsWith("lost the API")) showError(null);
  } catch (err) {
    showError(new Error("lost the API: " + err.message));
  }
  setTimeout(loop, pollMs);
}

initProjector();
drawProviderForms();
$("arm-fault").addEventListener("click", armFault);
select(selected);
loop();
