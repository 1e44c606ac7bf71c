// The admin UI: plain DOM, no framework, no CDN (docs/admin-ui.md). Every view reads the admin API under /ui/api.
import { lineChart, parseMetrics, Rates } from './charts.js';

/** Where each policy is documented (docs/ of the project; /ui/docs/ serves it from a checkout). */
const DOCS = {
  a2a: 'a2a.md', ai: 'ai-policy.md', virtualKeys: 'llm-economics.md', mcpAuthentication: 'mcp.md', mcpAuthorization: 'mcp.md',
  healthCheck: 'backends-health.md', outlierDetection: 'backends-health.md', transformations: 'cel.md', authorization: 'cel.md',
  backendAuth: 'security.md', backendTLS: 'security.md', basicAuth: 'security.md', apiKey: 'security.md', jwtAuth: 'security.md', extAuthz: 'security.md',
};
const docFor = (key) => `/ui/docs/${DOCS[key] ?? 'phases.md'}`;

const view = document.getElementById('view');
let stopView = () => {};

/**
 * Bidi controls and invisible characters (RLO, zero-width space, BOM, ...): a name holding them could pass for another
 * (`admin<RLO>gnp.exe` reads `adminexe.png`), so every text the page shows spells them as `<U+202E>`.
 */
const HIDDEN = /[\u061C\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/g;
const visible = (text) => String(text ?? '').replace(HIDDEN, (c) => `<U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}>`);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'on') for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
    else if (v !== undefined && v !== false) node.setAttribute(k, v === true ? '' : String(v));
  }
  // A textarea's text is a value to edit and send: it keeps its characters.
  const text = tag === 'textarea' ? (c) => String(c ?? '') : visible;
  for (const c of children.flat()) node.append(c instanceof Node ? c : document.createTextNode(text(c)));
  return node;
}

/** The live config's dump; the header's generation follows it (a reload shows on the next view opened). */
async function liveConfig() {
  const dump = await getJson('/ui/api/config');
  document.getElementById('generation').textContent = `config generation ${dump.generation}`;
  return dump;
}

async function getJson(path) {
  const res = await fetch(path, { cache: 'no-store' });
  if (!res.ok) throw new Error(`${path}: ${res.status}`);
  return res.json();
}
async function postJson(path, body, signal) {
  return fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal });
}

/** Every route of the live config with its bind, listener, matches, policies and backends. */
function routesOf(config) {
  const out = [];
  for (const bind of config.binds ?? [])
    for (const [index, listener] of (bind.listeners ?? []).entries())
      for (const route of listener.routes ?? []) out.push({ port: bind.port, listener: listener.name ?? '', listenerIndex: index, route });
  return out;
}

const isMcp = (r) => (r.route.backends ?? []).some((b) => b.mcp);
const isAi = (r) => (r.route.backends ?? []).some((b) => b.ai);
function routePath(route) {
  const m = (route.matches ?? [])[0]?.path;
  return m?.exact ?? m?.pathPrefix ?? '/';
}

/**
 * The whole config, folded: its text is built and laid out when opened. A large config's text (2,000 routes and
 * 10,000 keys: 3 million characters) took most of the routes view's seconds to lay out, shown or not read.
 */
function dumpView(config) {
  const pre = el('pre', { id: 'config-json' });
  const details = el('details', { id: 'config-dump' }, el('summary', {}, 'Config (redacted)'), pre);
  details.addEventListener('toggle', () => {
    if (details.open && !pre.firstChild) pre.textContent = visible(JSON.stringify(config, null, 2));
  });
  return details;
}

async function routesView() {
  const dump = await liveConfig();
  const rows = routesOf(dump.config).map(({ port, listener, route }, i) =>
    el('tr', { 'data-route': route.name ?? `#${i}` },
      el('td', {}, String(port)), el('td', {}, listener), el('td', {}, el('strong', {}, route.name ?? '(unnamed)')),
      el('td', {}, el('code', {}, JSON.stringify(route.matches ?? 'any'))),
      el('td', {}, Object.keys(route.policies ?? {}).map((key) => el('a', { class: 'policy', href: docFor(key), target: '_blank', title: JSON.stringify(route.policies[key]) }, key))),
      el('td', {}, (route.backends ?? []).map((b) => el('div', {}, el('code', {}, Object.keys(b).filter((k) => k !== 'weight' && k !== 'policies').join(', '))))),
    ));
  view.replaceChildren(
    el('h2', {}, 'Routes and policies'),
    el('p', {}, `Generation ${dump.generation}, loaded ${dump.loadedAt}. Secrets are redacted as in /config_dump.`),
    el('table', { id: 'routes', class: 'fixed' }, el('tr', {}, ...['Port', 'Listener', 'Route', 'Matches', 'Policies (docs)', 'Backends'].map((h) => el('th', {}, h))), rows),
    dumpView(dump.config),
  );
}

function validateView() {
  const text = el('textarea', { id: 'config-text', spellcheck: 'false', placeholder: 'Paste a config (YAML or JSON)' });
  const out = el('div', { id: 'validate-result' });
  const run = async () => {
    out.replaceChildren('Checking…');
    const res = await postJson('/ui/api/validate', { text: text.value }).catch((err) => err);
    const result = res instanceof Response ? await res.json().catch(() => undefined) : undefined;
    // Refused before any check (413 over 1 MiB, 429 while 5 run or wait) or not answered: say so.
    if (!res.ok || !result || typeof result.ok !== 'boolean') {
      const why = result?.error?.message ?? (res instanceof Response ? `HTTP ${res.status}` : String(res));
      return out.replaceChildren(el('p', { class: 'error' }, `Not checked: ${why}${res.status === 429 ? ' (try again in a moment)' : ''}`));
    }
    const issue = (cls) => (e) =>
      el('div', { class: cls },
        el('div', {}, el('strong', {}, e.line ? `line ${e.line}, column ${e.col}` : ''), e.path ? ` at ${e.path}` : '', e.code ? ` [${e.code}]` : ''),
        el('div', {}, e.message), e.frame ? el('pre', {}, e.frame) : '');
    // Plugins' load warnings, and the files, stores and URLs the validator does not touch (ADR 0131): never hidden.
    // The answer holds the first 100 of each kind; `more` counts the rest.
    const warnings = result.warnings ?? [];
    const more = result.more ?? { errors: 0, warnings: 0 };
    const notShown = (n) => (n ? [el('p', { class: 'more' }, `${n} more not shown: fix these first.`)] : []);
    const warningCount = warnings.length + more.warnings;
    const unchecked = warnings.length
      ? [el('p', { class: 'warning-head' }, `${warningCount} warning${warningCount === 1 ? '' : 's'} (files, stores and URLs the config names are checked by switchyard --validate-only on the gateway's host):`), ...warnings.map(issue('warning')), ...notShown(more.warnings)]
      : [];
    if (result.ok) return out.replaceChildren(el('p', { class: 'ok' }, 'Valid: this config would load.'), ...unchecked);
    out.replaceChildren(el('p', { class: 'error' }, `${(result.errors.length + more.errors) || 1} problem(s)`),
      ...(result.errors.length ? result.errors : [{ message: result.error }]).map(issue('issue')), ...notShown(more.errors), ...unchecked);
  };
  const loadLive = async () => {
    const dump = await liveConfig();
    text.value = JSON.stringify(dump.config, null, 2);
  };
  view.replaceChildren(el('h2', {}, 'Validate a config'),
    el('p', {}, 'Checked as a reload would check it (parse, schema, every plugin\'s compile) without the gateway\'s environment, files, stores or network; nothing is applied.'),
    text, el('div', {}, el('button', { id: 'validate', on: { click: run } }, 'Validate'), el('button', { on: { click: loadLive } }, 'Start from the live config (secrets redacted)')), out);
}

function tailView() {
  const body = el('tbody', { id: 'tail-rows' });
  const status = el('p', { id: 'tail-status' }, 'Connecting…');
  let paused = false;
  let source;
  let retry;
  const onMessage = (e) => {
    if (paused) return;
    for (const r of JSON.parse(e.data).requests) {
      const s = String(r['http.status']);
      body.prepend(el('tr', {}, el('td', {}, new Date(r.time).toLocaleTimeString()), el('td', {}, r.route ?? ''), el('td', {}, r['http.method']),
        el('td', {}, r['http.path']), el('td', { class: `status-${s[0]}` }, s), el('td', {}, `${r.duration_ms} ms`), el('td', {}, r['request.id'] ?? ''), el('td', {}, r.error ?? '')));
    }
    while (body.children.length > 500) body.lastChild.remove();
  };
  // A dropped connection is retried by the EventSource itself; an answer that is not a stream (429: at most 4 tails
  // at once, or 401) closes it for good, so the view says so and tries again itself.
  const connect = () => {
    source = new EventSource('/ui/api/tail');
    source.onopen = () => (status.textContent = 'Live.');
    source.onerror = () => {
      if (source.readyState !== EventSource.CLOSED) return void (status.textContent = 'Disconnected (retrying)…');
      status.textContent = 'Refused by the gateway (at most 4 browsers tail at once, or the admin credentials changed); trying again in 5 s…';
      retry = setTimeout(connect, 5000);
    };
    source.addEventListener('dropped', (e) => (status.textContent = `Live; ${e.data} requests not shown (too many at once).`));
    source.onmessage = onMessage;
  };
  connect();
  view.replaceChildren(el('h2', {}, 'Live tail'), status,
    el('button', { on: { click: (e) => { paused = !paused; e.target.textContent = paused ? 'Resume' : 'Pause'; } } }, 'Pause'),
    el('table', { id: 'tail-table', class: 'fixed' }, el('thead', {}, el('tr', {}, ...['Time', 'Route', 'Method', 'Path', 'Status', 'Duration', 'Request id', 'Error'].map((h) => el('th', {}, h)))), body));
  return () => {
    clearTimeout(retry);
    source.close();
  };
}

function chartsView() {
  const rates = new Rates();
  const boxes = { rate: el('div', { class: 'chart', id: 'chart-rate' }), errors: el('div', { class: 'chart', id: 'chart-errors' }), latency: el('div', { class: 'chart', id: 'chart-latency' }), tokens: el('div', { class: 'chart', id: 'chart-tokens' }) };
  const tick = async () => {
    const res = await fetch('/ui/api/metrics', { cache: 'no-store' });
    if (!res.ok) return;
    const point = rates.add(parseMetrics(await res.text()), Date.now());
    if (!point) return;
    lineChart(boxes.rate, 'Requests / s', rates.series('rate'));
    lineChart(boxes.errors, 'Errors (5xx) / s', rates.series('errors'));
    lineChart(boxes.latency, 'Mean latency (ms)', rates.series('latency'));
    lineChart(boxes.tokens, 'LLM tokens / s', rates.series('tokens'));
  };
  view.replaceChildren(el('h2', {}, 'Charts'), el('p', {}, 'From the gateway\'s own /metrics, sampled every 2 s.'), el('div', { class: 'charts' }, Object.values(boxes)));
  void tick();
  const timer = setInterval(tick, 2000);
  setTimeout(tick, 500);
  return () => clearInterval(timer);
}

/** A route picker for the playgrounds: routes with the given kind of backend. */
async function pickRoute(filter) {
  const dump = await liveConfig();
  const routes = routesOf(dump.config).filter(filter);
  const select = el('select', { id: 'route' }, routes.map((r, i) => el('option', { value: String(i) }, `${r.route.name ?? '(unnamed)'} — :${r.port}${routePath(r.route)}`)));
  const path = el('input', { id: 'path', size: 30, value: routes[0] ? routePath(routes[0].route) : '/' });
  select.addEventListener('change', () => (path.value = routePath(routes[Number(select.value)].route)));
  return { routes, select, path, chosen: () => routes[Number(select.value)] };
}

/**
 * Read the JSON-RPC answer to request `id`: plain JSON, or the stream's message with that id (a server may send
 * notifications and requests of its own first: progress, log messages).
 */
async function rpcAnswer(res, id) {
  const text = await res.text();
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return text ? JSON.parse(text) : undefined;
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
    if (!data) continue;
    const message = JSON.parse(data);
    if (message?.id === id && message.method === undefined) return message;
  }
  return undefined;
}

async function mcpView() {
  const pick = await pickRoute(isMcp);
  const out = el('pre', { id: 'mcp-result' });
  const tools = el('div', { id: 'mcp-tools' });
  // For a route whose policies ask for a credential (apiKey, jwtAuth, mcpAuthentication): sent as a bearer token.
  const key = el('input', { id: 'mcp-key', type: 'password', size: 20, placeholder: 'Bearer token (optional)' });
  const auth = () => (key.value ? { authorization: `Bearer ${key.value}` } : {});
  // The session (its id and where it lives): every call of a connection goes there, whatever is picked since.
  let session;
  let id = 0;
  /** One JSON-RPC message to `at` in session `s` (none for `initialize`; `id` absent on a server without sessions). */
  const send = async (at, s, method, params, notify) => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', ...auth() };
    if (s?.id) headers['mcp-session-id'] = s.id;
    const message = notify ? { jsonrpc: '2.0', method, params } : { jsonrpc: '2.0', id: ++id, method, params };
    const res = await postJson('/ui/api/call', { ...at, headers, body: JSON.stringify(message) });
    if (notify) return {};
    const answer = await rpcAnswer(res, message.id);
    if (!answer) throw new Error(`HTTP ${res.status}`);
    return { answer, sessionId: res.headers.get('mcp-session-id') };
  };
  const rpc = async (method, params, notify = false) => (await send(session?.at, session, method, params, notify)).answer;
  // A session holds the gateway's upstream sessions (a stdio target's processes) until it idles out (30 min by
  // default): end it when connecting again or leaving, as an MCP client should (DELETE). `keepalive`: a closing tab too.
  const endSession = (s) => {
    if (!s?.id) return;
    void fetch('/ui/api/call', { method: 'POST', keepalive: true, headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...s.at, method: 'DELETE', headers: { 'mcp-session-id': s.id, 'mcp-protocol-version': '2025-06-18', ...auth() } }) }).catch(() => {});
  };
  const end = () => {
    endSession(session);
    session = undefined;
  };
  // Connections started later, or the view left, make an earlier one's session obsolete as soon as it is made.
  let attempt = 0;
  const connect = async () => {
    end();
    const mine = ++attempt;
    out.textContent = 'Connecting…';
    try {
      const at = { port: pick.chosen().port, listener: pick.chosen().listenerIndex, path: pick.path.value };
      const { answer: init, sessionId } = await send(at, undefined, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'switchyard-admin-ui', version: '1' } });
      const made = { id: sessionId ?? undefined, at };
      if (mine !== attempt) return endSession(made);
      session = made;
      await rpc('notifications/initialized', {}, true);
      const list = await rpc('tools/list', {});
      out.textContent = visible(JSON.stringify(init.result?.serverInfo ?? init, null, 2));
      // Whatever an upstream lists: a tool that is not an object with a string name is left out, not a broken view.
      const listed = Array.isArray(list.result?.tools) ? list.result.tools.filter((t) => t && typeof t.name === 'string') : [];
      tools.replaceChildren(...listed.map((t) => {
        const args = el('textarea', { class: 'tool-args', 'data-tool': t.name }, JSON.stringify(exampleArgs(t.inputSchema), null, 2));
        return el('div', { class: 'tool' }, el('h3', {}, t.name), el('p', {}, t.description ?? ''), args,
          el('button', { 'data-call': t.name, on: { click: async () => {
            out.textContent = 'Calling…';
            try { out.textContent = visible(JSON.stringify((await rpc('tools/call', { name: t.name, arguments: JSON.parse(args.value || '{}') })), null, 2)); }
            catch (err) { out.textContent = String(err); }
          } } }, `Call ${t.name}`));
      }));
    } catch (err) {
      out.textContent = String(err);
    }
  };
  view.replaceChildren(el('h2', {}, 'MCP playground'),
    el('p', {}, 'Lists and calls the tools of an mcp route as an MCP client would (through the route\'s policies).'),
    pick.routes.length ? el('div', { class: 'row' }, 'Route', pick.select, 'Path', pick.path, key, el('button', { id: 'mcp-connect', on: { click: connect } }, 'Connect and list tools')) : el('p', {}, 'The live config has no mcp route.'),
    tools, el('h3', {}, 'Result'), out);
  window.addEventListener('pagehide', end);
  return () => {
    window.removeEventListener('pagehide', end);
    attempt++;
    end();
  };
}

/** A starting point for a tool's arguments: one value per property its input schema names (any schema, even a broken one). */
function exampleArgs(schema) {
  const args = Object.create(null); // a property named __proto__ is an argument like any other
  const properties = schema && typeof schema.properties === 'object' && schema.properties !== null ? schema.properties : {};
  for (const [k, p] of Object.entries(properties)) {
    const type = p && typeof p === 'object' ? p.type : undefined;
    args[k] = type === 'number' || type === 'integer' ? 1 : type === 'boolean' ? false : '';
  }
  return args;
}

async function llmView() {
  const pick = await pickRoute(isAi);
  const model = el('input', { id: 'model', value: 'gpt-4o-mini', size: 20 });
  const key = el('input', { id: 'api-key', type: 'password', size: 20, placeholder: 'API key (optional)' });
  const prompt = el('textarea', { id: 'prompt' }, 'Hello!');
  const answer = el('pre', { id: 'llm-answer' });
  // The stream being read: a new Send, Stop or leaving the view ends it (an unread stream still costs its tokens).
  let running;
  const stop = () => running?.abort();
  const send = async () => {
    stop();
    const mine = (running = new AbortController());
    try {
      await stream(mine.signal);
    } catch (err) {
      if (!mine.signal.aborted) throw err;
      answer.append(el('span', { class: 'more', id: 'llm-stopped' }, ' (stopped)'));
    }
  };
  const stream = async (signal) => {
    const r = pick.chosen();
    answer.textContent = '';
    const res = await postJson('/ui/api/call', { port: r.port, listener: r.listenerIndex, path: pick.path.value, headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...(key.value ? { authorization: `Bearer ${key.value}` } : {}) },
      body: JSON.stringify({ model: model.value, stream: true, messages: [{ role: 'user', content: prompt.value }] }) }, signal);
    if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return void (answer.textContent = `HTTP ${res.status}\n${await res.text()}`);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      // SSE lines end with LF, CRLF or CR: one kind here (a CR last in the buffer waits: its LF may come next).
      buffered = (buffered + value).replace(/\r\n|\r(?!$)/g, '\n');
      let cut;
      while ((cut = buffered.indexOf('\n\n')) >= 0) {
        const block = buffered.slice(0, cut);
        buffered = buffered.slice(cut + 2);
        for (const line of block.split('\n')) {
          const data = line.startsWith('data:') ? line.slice(5).trim() : '';
          if (!data || data === '[DONE]') continue;
          try { answer.textContent += JSON.parse(data).choices?.[0]?.delta?.content ?? ''; } catch { /* not a chunk */ }
        }
      }
    }
    answer.append(el('span', { class: 'ok', id: 'llm-done' }, ' ✓'));
  };
  view.replaceChildren(el('h2', {}, 'LLM playground'),
    el('p', {}, 'A streaming chat completion through an ai route (its policies, guards and limits apply).'),
    pick.routes.length ? el('div', {}, el('div', { class: 'row' }, 'Route', pick.select, 'Path', pick.path, 'Model', model, key), prompt, el('button', { id: 'llm-send', on: { click: send } }, 'Send'), el('button', { id: 'llm-stop', on: { click: stop } }, 'Stop')) : el('p', {}, 'The live config has no ai route.'),
    el('h3', {}, 'Answer'), answer);
  return stop;
}

const VIEWS = { routes: routesView, validate: validateView, tail: tailView, charts: chartsView, mcp: mcpView, llm: llmView };

async function show() {
  stopView();
  stopView = () => {};
  // Own keys only: `#constructor` is `in` every object.
  const name = Object.hasOwn(VIEWS, location.hash.slice(1)) ? location.hash.slice(1) : 'routes';
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.getAttribute('href') === `#${name}`);
  view.dataset.view = name;
  delete view.dataset.ready;
  try {
    const stop = await VIEWS[name]();
    if (typeof stop === 'function') stopView = stop;
  } catch (err) {
    view.replaceChildren(el('p', { class: 'error' }, String(err)));
  }
  view.dataset.ready = name;
}

window.addEventListener('hashchange', show);
void show();
