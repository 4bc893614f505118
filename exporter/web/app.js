// The live allocation map: on load draws the samples the exporter kept
// (/api/history), then polls /api/state once a second and redraws the way
// grids, the bandwidth controls and the monitoring plots. No libraries, no
// network access beyond this exporter.
'use strict';

const WINDOW_S = 300;
// Group colours. The legend's colours (style.css) mean a state: blue
// shareable, red exclusive, purple pseudo-locked, lilac pseudo-locksetup,
// orange io_alloc, grey hardware, white unused. A group's own colour must
// never be read as one of them, so the palette keeps away from all of them
// (and its colours from one another); past its size it starts again.
const PALETTE = ['#212121', '#2e7d32', '#00acc1', '#880e4f', '#9e9d24', '#1a237e',
                 '#6d4c41', '#00897b', '#64dd17'];
const history = new Map();  // group label -> [{t, occ, bw}]
const last = new Map();     // group label -> {t, total}
const colours = new Map();

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c) e.append(c);
  return e;
}

// A group's colour: the palette's next one when the page first sees the
// group (the default group first, then by name, as the exporter lists them).
function colour(label) {
  if (!colours.has(label)) colours.set(label, PALETTE[colours.size % PALETTE.length]);
  return colours.get(label);
}
window.allocationMap = {palette: PALETTE, colour};

function parseMask(hex) {
  const v = BigInt('0x' + hex);
  return v;
}

// The mask a group holds on (schema, domain): its schemata line of that
// schema; a pseudo-locked group's single line names the resource (L3 for
// L3CODE/L3DATA as well).
function groupMask(g, schema, domain) {
  let line = g.schemata[schema];
  if (line === undefined && g.mode === 'pseudo-locked') {
    line = g.schemata[schema.replace(/(CODE|DATA)$/, '')];
  }
  if (line === undefined || line === 'uninitialized') return null;
  const v = line[String(domain)];
  return v === undefined ? null : parseMask(v);
}

function drawMaps(state) {
  const root = document.getElementById('maps');
  const parts = [el('h2', {text: 'Cache ways'})];
  for (const c of state.caches) {
    const sec = el('div', {class: 'schema', 'data-schema': c.schema});
    sec.append(el('h3', {text: c.schema + ' — ' + c.cbm_len + ' ways, ' + c.num_closids +
                              ' CLOSIDs' + (c.io_alloc ? ', io_alloc ' + c.io_alloc : '')}));
    const doms = el('div', {class: 'domains'});
    for (const d of c.domains) {
      const t = el('table', {class: 'map', 'data-schema': c.schema, 'data-domain': String(d.id)});
      const head = el('tr', {}, el('th', {text: 'domain ' + d.id}));
      for (let w = c.cbm_len - 1; w >= 0; w--) head.append(el('th', {text: String(w)}));
      t.append(el('thead', {}, head));
      const body = el('tbody');
      for (const g of state.groups) {
        const m = groupMask(g, c.schema, d.id);
        const tr = el('tr', {'data-group': g.label});
        tr.append(el('th', {text: g.label + (g.mode && g.mode !== 'shareable' ? ' (' + g.mode + ')' : ''),
                             style: 'border-left: 6px solid ' + colour(g.label)}));
        for (let w = c.cbm_len - 1; w >= 0; w--) {
          const on = m !== null && ((m >> BigInt(w)) & 1n) === 1n;
          const cls = 'cell' + (on ? ' on ' + (g.mode || 'shareable') : '');
          tr.append(el('td', {class: cls, 'data-group': g.label, 'data-way': String(w),
                              title: g.label + ' way ' + w + (on ? ' (' + g.mode + ')' : '')}));
        }
        body.append(tr);
      }
      // Ways the hardware shares (shareable_bits) and, from bit_usage, the
      // io_alloc CLOSID's ways (the rest of the H/X bits).
      const usage = d.bit_usage || '';
      const hw = el('tr', {'data-group': ':hardware'}, el('th', {text: 'hardware'}));
      const io = el('tr', {'data-group': ':io_alloc'}, el('th', {text: 'io_alloc'}));
      const sum = el('tr', {'data-group': ':bit_usage'}, el('th', {text: 'bit_usage'}));
      for (let w = c.cbm_len - 1; w >= 0; w--) {
        const ch = usage[c.cbm_len - 1 - w] || '?';
        const shared = ((BigInt(c.shareable_bits) >> BigInt(w)) & 1n) === 1n;
        const ioOn = c.io_alloc === 'enabled' && (ch === 'H' || ch === 'X') && !shared;
        hw.append(el('td', {class: 'cell' + (shared ? ' on hardware' : ''), 'data-way': String(w)}));
        io.append(el('td', {class: 'cell' + (ioOn ? ' on io_alloc' : ''), 'data-way': String(w)}));
        sum.append(el('td', {class: 'cell usage', 'data-way': String(w), text: ch}));
      }
      body.append(hw);
      if (c.io_alloc === 'enabled' || c.io_alloc === 'disabled') body.append(io);
      body.append(sum);
      t.append(body);
      doms.append(t);
    }
    sec.append(doms);
    parts.push(sec);
  }
  root.replaceChildren(...parts);
}

// What a bandwidth schema's value means (the exporter's "unit" of it).
const BW_UNITS = {
  'percent': {what: 'percent of the maximum bandwidth', cell: (v) => v + ' %'},
  'MBps': {what: 'MBps targets (mba_MBps)', cell: (v) => v + ' MBps'},
  '1/8 GB/s': {what: 'in units of 1/8 GB/s',
               cell: (v) => v + ' (' + Number((Number(v) / 8).toFixed(3)) + ' GB/s)'},
};

function drawBandwidth(state) {
  const root = document.getElementById('bandwidth');
  const parts = [];
  for (const b of state.bandwidth) {
    const ids = new Set();
    for (const g of state.groups) {
      const line = g.schemata[b.schema];
      if (line && line !== 'uninitialized') Object.keys(line).forEach((k) => ids.add(k));
    }
    const doms = [...ids].sort((a, c) => Number(a) - Number(c));
    const unit = BW_UNITS[b.unit] || {what: 'unit unknown', cell: (v) => v};
    const t = el('table', {class: 'bw', 'data-schema': b.schema, 'data-unit': b.unit || ''});
    const head = el('tr', {}, el('th', {text: 'group'}));
    for (const d of doms) head.append(el('th', {text: 'domain ' + d}));
    t.append(el('thead', {}, head));
    const body = el('tbody');
    for (const g of state.groups) {
      const line = g.schemata[b.schema];
      if (!line || line === 'uninitialized') continue;
      const tr = el('tr', {'data-group': g.label}, el('th', {text: g.label}));
      for (const d of doms) {
        const v = line[d];
        tr.append(el('td', {'data-domain': d, 'data-value': v ?? '',
                            text: v === undefined ? '' : unit.cell(v)}));
      }
      body.append(tr);
    }
    t.append(body);
    parts.push(el('h2', {text: b.schema + ' (memory bandwidth control, ' + unit.what + '; min ' +
                               b.min_bandwidth + ', step ' + b.bandwidth_gran + ')'}), t);
  }
  root.replaceChildren(...parts);
}

// Adds one sample (an /api/state document, or one of /api/history's: the
// same time_ms and per-group sums) to the plots' series; returns its time.
function record(state) {
  const t = state.time_ms / 1000;
  const seen = new Set();
  for (const g of state.groups) {
    seen.add(g.label);
    colour(g.label);
    const total = g.mbm_total_bytes ?? g.mbm_local_bytes;
    let bw = null;
    const prev = last.get(g.label);
    if (total !== null && prev && t > prev.t && total >= prev.total) {
      bw = (total - prev.total) / (t - prev.t);
    }
    if (total !== null) last.set(g.label, {t, total});
    if (!history.has(g.label)) history.set(g.label, []);
    const h = history.get(g.label);
    h.push({t, occ: g.occupancy_bytes, bw});
    while (h.length && h[0].t < t - WINDOW_S) h.shift();
  }
  for (const k of [...history.keys()]) if (!seen.has(k)) { history.delete(k); last.delete(k); }
  return t;
}

// Axis scales: occupancy in bytes with binary prefixes (B, KiB, MiB, GiB),
// bandwidth in MB/s (10^6 bytes a second). scale(max) gives the divisor
// and the unit of the labels.
const UNITS = {
  bytes: (max) => {
    const steps = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (max >= 1024 && i < steps.length - 1) { max /= 1024; i++; }
    return {div: Math.pow(1024, i), unit: steps[i]};
  },
  MBps: () => ({div: 1e6, unit: 'MB/s'}),
};

// The ticks of an axis from 0 to at least `max` (in the unit's terms): a
// step of 1, 2, 2.5 or 5 times a power of ten, about four of them.
function ticks(max) {
  const raw = max / 4;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = Number(([1, 2, 2.5, 5, 10].map((m) => m * p).find((v) => v >= raw)).toPrecision(3));
  const n = Math.max(1, Math.ceil(max / step - 1e-9));
  const digits = (String(step).split('.')[1] || '').length;
  return {step, n, digits};
}

function timeLabel(s) {
  return s >= 120 ? '-' + Math.round(s / 60) + ' min' : '-' + Math.round(s) + ' s';
}

// Draws one plot in CSS pixels (the SVG's viewBox is its size on the page),
// so that its text has the size style.css gives it at any width. The time
// axis spans the samples there are, from one minute up to WINDOW_S.
function plot(id, key, unit, title, now) {
  const svg = document.getElementById(id);
  const W = Math.max(320, Math.round(svg.getBoundingClientRect().width) || 640);
  const H = 240, L = 86, R = 12, B = 24, T = 28;
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  svg.setAttribute('height', H);
  let max = 0, oldest = now;
  for (const h of history.values()) {
    for (const p of h) {
      if (p[key] === null) continue;
      max = Math.max(max, p[key]);
      oldest = Math.min(oldest, p.t);
    }
  }
  const scale = UNITS[unit](max);
  // Nothing measured yet: an axis up to 4 B or 1 MB/s.
  const tk = ticks(Math.max(max / scale.div, unit === 'bytes' ? 4 : 1));
  const top = tk.step * tk.n * scale.div;
  const span = Math.min(WINDOW_S, Math.max(60, now - oldest));
  const ns = 'http://www.w3.org/2000/svg';
  const mk = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const parts = [mk('text', {class: 'axis-title', x: 4, y: 16}, title)];
  for (let i = 0; i <= tk.n; i++) {
    const y = T + (H - T - B) * (1 - i / tk.n);
    parts.push(mk('line', {class: 'grid', x1: L, x2: W - R, y1: y, y2: y}));
    parts.push(mk('text', {class: 'tick', x: L - 6, y: y + 4, 'text-anchor': 'end'},
                  (i * tk.step).toFixed(tk.digits) + ' ' + scale.unit));
  }
  parts.push(mk('text', {class: 'time', x: W - R, y: H - 6, 'text-anchor': 'end'}, 'now'));
  parts.push(mk('text', {class: 'time', x: L, y: H - 6}, timeLabel(span)));
  for (const [label, h] of history) {
    const pts = h.filter((p) => p[key] !== null && p.t >= now - span).map((p) => {
      const x = L + (W - R - L) * (1 - (now - p.t) / span);
      const y = T + (H - T - B) * (1 - p[key] / top);
      return x.toFixed(1) + ',' + y.toFixed(1);
    });
    if (pts.length) {
      parts.push(mk('polyline', {points: pts.join(' '), fill: 'none', stroke: colour(label),
                                 'stroke-width': 2, 'data-group': label}));
    }
  }
  svg.replaceChildren(...parts);
}

function drawPlots(now) {
  plot('plot-occupancy', 'occ', 'bytes', 'llc_occupancy, bytes', now);
  plot('plot-bandwidth', 'bw', 'MBps', 'from mbm_total_bytes, MB/s', now);
  const legend = document.getElementById('plot-legend');
  legend.replaceChildren(...[...history.keys()].map((label) =>
    el('li', {'data-group': label}, el('span', {class: 'swatch', style: 'background:' + colour(label)}), label)));
}

// The samples the exporter took before the page was opened (at every scrape
// and page poll, and every 5 s on its own), drawn before the first live
// update.
async function loadHistory() {
  let n = 0, now = null;
  try {
    const r = await fetch('/api/history', {cache: 'no-store'});
    if (r.ok) {
      const h = await r.json();
      for (const s of h.samples) { now = record(s); n++; }
    }
  } catch (e) {
    // No history: the plots start with the first live update.
  }
  if (now !== null) drawPlots(now);
  document.body.dataset.historySamples = String(n);
}

async function tick() {
  const status = document.getElementById('status');
  try {
    const r = await fetch('/api/state', {cache: 'no-store'});
    const state = await r.json();
    if (!state.ok) throw new Error(state.error || 'the tree cannot be read');
    drawMaps(state);
    drawBandwidth(state);
    drawPlots(record(state));
    status.textContent = 'updated ' + new Date(state.time_ms).toLocaleTimeString();
    status.className = 'status';
    document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
  } catch (e) {
    status.textContent = 'error: ' + e.message;
    status.className = 'status error';
  }
  setTimeout(tick, 1000);
}

loadHistory().then(tick);
