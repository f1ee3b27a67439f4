// The dashboard's page and script, kept as strings so the build (tsc) ships them with no copy step.

export const dashboardHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>berth</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d232a; background: #f6f7f9; }
  header { background: #14324a; color: #fff; padding: 10px 20px; display: flex; gap: 16px; align-items: center; }
  header h1 { font-size: 18px; margin: 0; }
  header input { flex: 1; max-width: 420px; padding: 4px 6px; }
  main { display: grid; grid-template-columns: minmax(320px, 1fr) minmax(320px, 1fr); gap: 16px; padding: 16px 20px; }
  section { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 12px 16px; }
  h2 { font-size: 15px; margin: 0 0 8px; }
  ul { list-style: none; padding-left: 16px; margin: 4px 0; }
  .state { display: inline-block; padding: 0 6px; border-radius: 3px; font-size: 12px; background: #e3e7ec; }
  .stable, .RUNNING, .Running, .Complete, .succeeded { background: #cdebd3; }
  .pending, .updating, .scaling, .CLAIMED, .UNCLAIMED, .running, .Created { background: #fbeec4; }
  .failed, .degraded, .CRASHED, .Failed, .Killed { background: #f6cfcf; }
  .unit { cursor: pointer; text-decoration: underline dotted; }
  .muted { color: #68737d; }
  table { border-collapse: collapse; width: 100%; }
  td, th { text-align: left; padding: 2px 6px; border-bottom: 1px solid #eef0f2; font-size: 13px; }
  #error { color: #a31f1f; }
  #live-log { max-height: 320px; overflow: auto; background: #14181c; color: #d7dde3; padding: 8px; font-size: 12px; margin: 0; white-space: pre-wrap; }
</style>
</head>
<body>
<header><h1>berth</h1><input id="token" type="password" placeholder="API token (berth up prints it)"><span id="error"></span></header>
<main>
  <section><h2>Systems</h2><div id="systems" class="muted">loading…</div></section>
  <section><h2 id="timeline-title">Container history</h2><div id="timeline" class="muted">Pick a unit to see its container's history.</div></section>
  <section style="grid-column: 1 / -1"><h2 id="log-title">Live log</h2><pre id="live-log">Pick a unit to follow its log.</pre></section>
</main>
<script src="/dashboard.js"></script>
</body>
</html>
`;

export const dashboardScript = `'use strict';
const tokenInput = document.getElementById('token');
// The token lives in sessionStorage: an admin token should not outlive the tab. \`berth up\` prints
// the URL with it in the fragment, which browsers never send; it is dropped from the address bar.
const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
if (fromHash) { sessionStorage.setItem('berth-token', fromHash); history.replaceState(null, '', '/'); }
tokenInput.value = sessionStorage.getItem('berth-token') || '';
tokenInput.addEventListener('change', () => { sessionStorage.setItem('berth-token', tokenInput.value.trim()); refresh(); });
let selected = null;

/** A refusal for want of a (valid) token: the page asks for one rather than showing a status. */
class SignInNeeded extends Error {}

async function api(path) {
  const token = tokenInput.value.trim();
  const response = await fetch(path, { headers: token ? { authorization: 'Bearer ' + token } : {} });
  if (response.status === 401) throw new SignInNeeded(token ? 'This token is invalid or revoked.' : 'This server needs an API token.');
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    throw new Error(path + ': HTTP ' + response.status + (body.message ? ' — ' + body.message : ''));
  }
  return response.json();
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'onclick') node.addEventListener('click', v); else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

const badge = (state) => el('span', { class: 'state ' + state, 'data-state': state }, state);

/** Services nested by path segment: /web/api sits under /web, as the system's tree. */
function serviceTree(services, renderService) {
  const root = { children: new Map(), service: null };
  for (const service of services) {
    let node = root;
    for (const segment of service.path.split('/').filter(Boolean)) {
      if (!node.children.has(segment)) node.children.set(segment, { children: new Map(), service: null });
      node = node.children.get(segment);
    }
    node.service = service;
  }
  const render = (node, prefix) => {
    const list = el('ul');
    for (const [segment, child] of [...node.children].sort(([a], [b]) => a.localeCompare(b))) {
      const path = prefix + '/' + segment;
      const item = child.service ? renderService(child.service) : el('li', { 'data-path': path }, el('strong', { class: 'muted' }, path));
      if (child.children.size > 0) item.append(render(child, path));
      list.append(item);
    }
    return list;
  };
  return render(root, '');
}

async function renderSystems() {
  const { systems } = await api('/v1/systems?limit=1000');
  const root = el('ul', { id: 'system-list' });
  for (const summary of systems) {
    const system = await api('/v1/systems/' + encodeURIComponent(summary.name));
    const services = serviceTree(system.services, (service) => {
      const units = el('ul');
      for (const unit of service.units || []) {
        // Keep the selection on this refresh's copy of the unit: its container changes on restarts.
        if (selected && selected.service.path === service.path && selected.unit.name === unit.name) selected = { system: system.name, service, unit };
        const label = 'unit ' + unit.index + (unit.principal ? ' (sidecar of ' + unit.principal + ')' : '');
        units.append(el('li', { 'data-unit': unit.name || String(unit.index) }, el('span', { class: 'unit', onclick: () => { selected = { system: system.name, service, unit }; renderTimeline(); followLog(); } }, label), ' ',
          badge(unit.state || unit.life), unit.cell_id ? el('span', { class: 'cell' }, ' on ' + unit.cell_id) : ''));
      }
      const kind = service.kind === 'job' ? ' job' : service.sidecar_of ? ' sidecar of ' + service.sidecar_of : '';
      return el('li', { 'data-path': service.path }, el('strong', {}, service.path), ' ', badge(service.state), ' ', el('span', { class: 'muted' }, service.life + kind), units);
    });
    const relations = el('ul');
    for (const relation of system.relations || []) {
      relations.append(el('li', { class: 'muted' }, 'relation ' + relation.endpoints.join(' ↔ ') + ' (' + relation.kind + ', ' + relation.life + ', ' + relation.scope.length + ' in scope)'));
    }
    root.append(el('li', { 'data-system': system.name }, el('strong', {}, system.name), ' ', badge(system.state), system.reason ? el('span', { class: 'muted' }, ' ' + system.reason) : '', services, relations));
  }
  const target = document.getElementById('systems');
  target.replaceChildren(systems.length ? root : 'No systems yet: berth deploy FILE');
  target.className = '';
}

async function renderTimeline() {
  if (!selected) return;
  const { service, unit } = selected;
  const title = document.getElementById('timeline-title');
  const target = document.getElementById('timeline');
  title.textContent = 'History of ' + service.path + ' unit ' + unit.index;
  if (!service.process_guid || service.kind === 'job') { target.textContent = 'This unit has no container (yet).'; return; }
  if (!unit.instance_guid) { target.textContent = 'Not placed yet.'; return; }
  let record;
  try { record = await api('/v1/containers/' + encodeURIComponent(unit.instance_guid)); }
  catch { target.textContent = 'No history recorded yet for container ' + unit.instance_guid + '.'; return; }
  const rows = record.history.map((h) => el('tr', {}, el('td', {}, h.time_recorded), el('td', {}, badge(h.status)), el('td', {}, h.entity_type), el('td', {}, h.exit_code ?? ''), el('td', {}, h.message || '')));
  target.className = '';
  target.replaceChildren(el('p', {}, 'container ', el('code', {}, record.id), ' ', badge(record.status)),
    el('table', { id: 'timeline-table' }, el('tr', {}, el('th', {}, 'time'), el('th', {}, 'status'), el('th', {}, 'by'), el('th', {}, 'exit'), el('th', {}, 'message')), ...rows));
}

// The selected unit's live log: GET /v1/logs (NDJSON) for its instance, following restarts and
// moves, the last 500 lines kept. A new selection ends the previous stream.
let logStream = null;
async function followLog() {
  if (logStream) logStream.abort();
  const { system, service, unit } = selected;
  const target = document.getElementById('live-log');
  document.getElementById('log-title').textContent = 'Live log of ' + service.path + ' unit ' + unit.index;
  target.textContent = '';
  if (!service.process_guid || service.kind === 'job') { target.textContent = 'This unit has no container (yet).'; return; }
  const controller = new AbortController();
  logStream = controller;
  const token = tokenInput.value.trim();
  // SYSTEM/SERVICE: the service across its versions, so a rolling update keeps the panel going.
  const query = new URLSearchParams({ app: system + service.path, index: String(unit.index), follow: 'true', tail: '100' });
  try {
    const response = await fetch('/v1/logs?' + query, { headers: token ? { authorization: 'Bearer ' + token } : {}, signal: controller.signal });
    if (!response.ok) { target.textContent = 'Cannot read the log: HTTP ' + response.status; return; }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let partial = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const lines = (partial + value).split('\\n');
      partial = lines.pop();
      for (const text of lines.filter(Boolean)) {
        const line = JSON.parse(text);
        target.append(el('div', { class: 'log-line' }, line.ts.slice(11, 23) + ' [' + line.source + '] ' + (line.error !== undefined ? '(' + line.error + ')' : line.line)));
      }
      while (target.childElementCount > 500) target.firstElementChild.remove();
      target.scrollTop = target.scrollHeight;
    }
  } catch (err) {
    if (!controller.signal.aborted) target.append(el('div', {}, 'The log stream ended: ' + String(err.message || err)));
  }
}

async function refresh() {
  try {
    await renderSystems();
    await renderTimeline();
    document.getElementById('error').textContent = '';
  } catch (err) {
    if (err instanceof SignInNeeded) {
      const target = document.getElementById('systems');
      target.className = 'muted';
      target.replaceChildren(el('p', { id: 'sign-in' }, err.message + ' Paste one above: ', el('code', {}, 'berth up'),
        ' prints the dashboard’s URL with the admin token, and ', el('code', {}, 'berth token create'), ' makes others.'));
      tokenInput.focus();
    }
    document.getElementById('error').textContent = String(err.message || err);
  }
}
refresh();
setInterval(refresh, 2000);
`;
