// The live allocation map: polls /api/state once a second and redraws the
// way grids, the bandwidth controls and the monitoring plots. No libraries,
// no network access beyond this exporter.
'use strict';

const WINDOW_S = 300;
const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b',
                 '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
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

function colour(label) {
  if (!colours.has(label)) colours.set(label, PALETTE[colours.size % PALETTE.length]);
  return colours.get(label);
}

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
                             style: 'border-left: 4px solid ' + colour(g.label)}));
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
    const t = el('table', {class: 'bw', 'data-schema': b.schema});
    const head = el('tr', {}, el('th', {text: 'group'}));
    for (const d of doms) head.append(el('th', {text: 'domain ' + d}));
    t.append(el('thead', {}, head));
    const body = el('tbody');
    for (const g of state.groups) {
      const line = g.schemata[b.schema];
      if (!line || line === 'uninitialized') continue;
      const tr = el('tr', {'data-group': g.label}, el('th', {text: g.label}));
      for (const d of doms) tr.append(el('td', {'data-domain': d, text: line[d] ?? ''}));
      body.append(tr);
    }
    t.append(body);
    parts.push(el('h2', {text: b.schema + ' (memory bandwidth control, min ' + b.min_bandwidth +
                               ', step ' + b.bandwidth_gran + ')'}), t);
  }
  root.replaceChildren(...parts);
}

function record(state) {
  const t = state.time_ms / 1000;
  const seen = new Set();
  for (const g of state.groups) {
    seen.add(g.label);
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

function human(v, unit) {
  const steps = ['', 'Ki', 'Mi', 'Gi', 'Ti'];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < steps.length - 1) { v /= 1024; i++; }
  return (v >= 100 ? v.toFixed(0) : v.toFixed(1)) + ' ' + steps[i] + unit;
}

function plot(id, key, unit, now) {
  const svg = document.getElementById(id);
  const W = 800, H = 220, L = 70, B = 20, T = 8;
  let max = 0;
  for (const h of history.values()) for (const p of h) if (p[key] !== null) max = Math.max(max, p[key]);
  if (max <= 0) max = 1;
  const ns = 'http://www.w3.org/2000/svg';
  const mk = (tag, attrs) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    return e;
  };
  const parts = [];
  for (let i = 0; i <= 4; i++) {
    const y = T + (H - T - B) * i / 4;
    parts.push(mk('line', {class: 'grid', x1: L, x2: W, y1: y, y2: y}));
    const label = mk('text', {x: L - 4, y: y + 4, 'text-anchor': 'end'});
    label.textContent = human(max * (4 - i) / 4, unit);
    parts.push(label);
  }
  const xlabel = mk('text', {x: W - 4, y: H - 4, 'text-anchor': 'end'});
  xlabel.textContent = 'now';
  const x0 = mk('text', {x: L, y: H - 4});
  x0.textContent = '-' + WINDOW_S / 60 + ' min';
  parts.push(xlabel, x0);
  for (const [label, h] of history) {
    const pts = h.filter((p) => p[key] !== null).map((p) => {
      const x = L + (W - L) * (1 - (now - p.t) / WINDOW_S);
      const y = T + (H - T - B) * (1 - p[key] / max);
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
  plot('plot-occupancy', 'occ', 'B', now);
  plot('plot-bandwidth', 'bw', 'B/s', now);
  const legend = document.getElementById('plot-legend');
  legend.replaceChildren(...[...history.keys()].map((label) =>
    el('li', {'data-group': label}, el('span', {class: 'swatch', style: 'background:' + colour(label)}), label)));
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

tick();
