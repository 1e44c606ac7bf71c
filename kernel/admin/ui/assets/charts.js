// Charts for the admin UI: Prometheus text parsed, counters turned into rates, drawn as SVG lines (no library).

/** `name{labels} value` lines, comments skipped: [{ name, labels: {k: v}, value }]. */
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

function sum(samples, name, keep = () => true) {
  let total = 0;
  for (const s of samples) if (s.name === name && keep(s.labels)) total += s.value;
  return total;
}

/** Totals per scrape and the per-second series between scrapes (last 5 minutes). */
export class Rates {
  constructor() {
    this.last = undefined;
    this.points = [];
  }
  add(samples, time) {
    const now = {
      time,
      requests: sum(samples, 'switchyard_requests_total'),
      errors: sum(samples, 'switchyard_requests_total', (l) => String(l.status ?? l.code ?? '').startsWith('5')),
      durSum: sum(samples, 'switchyard_request_duration_seconds_sum'),
      durCount: sum(samples, 'switchyard_request_duration_seconds_count'),
      tokens: sum(samples, 'switchyard_llm_tokens_total'),
    };
    const prev = this.last;
    this.last = now;
    if (!prev) return undefined;
    const dt = Math.max((time - prev.time) / 1000, 0.001);
    const n = now.durCount - prev.durCount;
    const point = {
      time,
      rate: Math.max(0, (now.requests - prev.requests) / dt),
      errors: Math.max(0, (now.errors - prev.errors) / dt),
      latency: n > 0 ? ((now.durSum - prev.durSum) / n) * 1000 : 0,
      tokens: Math.max(0, (now.tokens - prev.tokens) / dt),
    };
    this.points.push(point);
    while (this.points.length > 150) this.points.shift();
    return point;
  }
  series(key) {
    return this.points.map((p) => [p.time, p[key]]);
  }
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

/** Draw `points` ([time, value]) into `box` with a title and the latest value. */
export function lineChart(box, title, points) {
  const w = 400, h = 140, pad = 28;
  const max = Math.max(1e-9, ...points.map((p) => p[1]));
  const t0 = points[0]?.[0] ?? 0, t1 = points.at(-1)?.[0] ?? 1;
  const x = (t) => pad + ((t - t0) / Math.max(1, t1 - t0)) * (w - pad - 4);
  const y = (v) => h - 16 - (v / max) * (h - 30);
  const root = svg('svg', { viewBox: `0 0 ${w} ${h}`, role: 'img', 'aria-label': title });
  root.append(svg('line', { x1: pad, y1: h - 16, x2: w - 4, y2: h - 16, stroke: '#c5ccd8' }));
  const label = svg('text', { x: 2, y: 12, 'font-size': 10, fill: '#5b6678' });
  label.textContent = max >= 100 ? max.toFixed(0) : max.toPrecision(2);
  root.append(label);
  if (points.length > 1) root.append(svg('polyline', { points: points.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' '), fill: 'none', stroke: '#2f6fdb', 'stroke-width': 2 }));
  const latest = points.at(-1)?.[1] ?? 0;
  const head = document.createElement('div');
  head.innerHTML = '';
  head.append(Object.assign(document.createElement('strong'), { textContent: title }), ` — now ${latest >= 100 ? latest.toFixed(0) : latest.toFixed(2)}`);
  box.replaceChildren(head, root);
  box.dataset.points = String(points.length);
  box.dataset.latest = String(latest);
}
