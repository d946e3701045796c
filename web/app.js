/* tunehub catalog page: plain JS, no build step. State lives in the URL hash
   (#view=catalog&framework=llvm&network=&state=&sort=network&dir=asc&model=llvm/resnet-18/1). */
'use strict';
(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const ORIGIN = location.origin;
  const POLL_MS = 2000;

  /* ---------- small helpers ---------- */
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    if (attrs) for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = v;
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }
  const svgNS = 'http://www.w3.org/2000/svg';
  function s(tag, attrs, ...kids) {
    const el = document.createElementNS(svgNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    for (const kid of kids.flat()) if (kid != null) el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    return el;
  }
  function fmtBytes(n) {
    if (typeof n !== 'number' || !isFinite(n)) return '—';
    const u = ['B', 'KiB', 'MiB', 'GiB'];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(n < 10 ? 2 : 1) : String(n)) + ' ' + u[i];
  }
  function fmtMs(v) { return typeof v === 'number' && isFinite(v) ? (v < 10 ? v.toFixed(3) : v.toFixed(2)) + ' ms' : '—'; }
  function fmtDate(iso) {
    if (!iso) return '—';
    const d = new Date(iso);
    if (isNaN(d)) return String(iso);
    return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z').replace(/:\d\dZ$/, 'Z');
  }
  function fmtDur(sec) {
    if (typeof sec !== 'number' || !isFinite(sec) || sec < 0) return null;
    sec = Math.round(sec);
    if (sec < 60) return sec + ' s';
    if (sec < 3600) return Math.floor(sec / 60) + ' min ' + (sec % 60) + ' s';
    return Math.floor(sec / 3600) + ' h ' + Math.floor((sec % 3600) / 60) + ' min';
  }
  function fmtGflop(f) { return typeof f === 'number' ? (f / 1e9).toFixed(2) + ' GFLOPs' : null; }
  const enc = encodeURIComponent;
  function modelPath(m) { return '/models/' + enc(m.framework) + '/' + enc(m.network) + '/' + enc(m.batch); }
  function keyOf(m) { return m.framework + '/' + m.network + '/' + m.batch; }
  function shq(s) { return "'" + String(s).replace(/'/g, "'\\''") + "'"; }

  class HttpError extends Error {
    constructor(status, body, message) { super(message); this.status = status; this.body = body; }
  }
  function errMessage(body, status) {
    if (body && body.error) {
      const e = body.error;
      return e.message || e.code || ('HTTP ' + status);
    }
    return 'HTTP ' + status;
  }
  async function api(path, opts) {
    let resp;
    try {
      resp = await fetch(path, Object.assign({ headers: { Accept: 'application/json' }, cache: 'no-store' }, opts || {}));
    } catch (e) {
      serverDown(e);
      throw new HttpError(0, null, 'server unreachable');
    }
    serverUp();
    let body = null;
    const text = await resp.text();
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
    if (!resp.ok) throw new HttpError(resp.status, body, errMessage(body, resp.status));
    return { status: resp.status, body, headers: resp.headers };
  }

  /* ---------- connection banner ---------- */
  const banner = $('#banner');
  let downSince = 0;
  function serverDown() {
    if (!downSince) downSince = Date.now();
    banner.hidden = false;
    banner.replaceChildren('Server unreachable: ' + ORIGIN + ' does not answer. Retrying every 2 s… ',
      h('button', { type: 'button', class: 'small secondary', onclick: () => refreshAll() }, 'Retry now'));
  }
  function serverUp() {
    if (downSince) { downSince = 0; banner.hidden = true; banner.replaceChildren(); }
  }

  /* ---------- URL state ---------- */
  const DEFAULTS = { view: 'catalog', framework: '', network: '', state: '', sort: 'network', dir: 'asc', model: '' };
  function readState() {
    const p = new URLSearchParams(location.hash.replace(/^#/, ''));
    const st = {};
    for (const k of Object.keys(DEFAULTS)) st[k] = p.get(k) || DEFAULTS[k];
    if (!['catalog', 'jobs', 'build'].includes(st.view)) st.view = 'catalog';
    if (!['asc', 'desc'].includes(st.dir)) st.dir = 'asc';
    return st;
  }
  function writeState(patch, replace) {
    const st = Object.assign(readState(), patch);
    const p = new URLSearchParams();
    for (const k of Object.keys(DEFAULTS)) if (st[k] && st[k] !== DEFAULTS[k]) p.set(k, st[k]);
    if (st.view !== 'catalog' || !p.toString()) p.set('view', st.view);
    const hash = '#' + p.toString();
    if (hash === location.hash) { render(); return; }
    if (replace) { history.replaceState(null, '', hash); render(); }
    else location.hash = hash; // hashchange renders
  }
  function hrefFor(patch) {
    const st = Object.assign(readState(), patch);
    const p = new URLSearchParams();
    for (const k of Object.keys(DEFAULTS)) if (st[k] && st[k] !== DEFAULTS[k]) p.set(k, st[k]);
    if (st.view !== 'catalog' || !p.toString()) p.set('view', st.view);
    return '#' + p.toString();
  }

  /* ---------- data ---------- */
  const data = { models: null, networks: null, targets: null, jobs: null, modelsErr: null, jobsErr: null };
  const manifests = new Map(); // key@version -> manifest | Error

  async function loadModels() {
    try { data.models = (await api('/models')).body.models || []; data.modelsErr = null; }
    catch (e) { data.modelsErr = e; }
  }
  async function loadJobs() {
    try { data.jobs = (await api('/jobs?limit=50')).body.jobs || []; data.jobsErr = null; }
    catch (e) { data.jobsErr = e; }
  }
  async function loadStatic() {
    try { data.networks = (await api('/networks')).body.networks || []; } catch (e) { data.networks = data.networks || null; }
    try { data.targets = (await api('/targets')).body; } catch (e) { /* keep */ }
    fillNetworks();
  }

  /* ---------- views ---------- */
  function render() {
    const st = readState();
    for (const v of ['catalog', 'jobs', 'build']) {
      $('#view-' + v).hidden = st.view !== v;
      const a = $('#nav-' + v);
      if (st.view === v) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
    $('#f-framework').value = st.framework;
    if (document.activeElement !== $('#f-network')) $('#f-network').value = st.network;
    $('#f-state').value = st.state;
    renderCatalog(st);
    renderDetail(st);
    renderJobs();
  }

  // re-rendering every 2 s must not steal keyboard focus: restore it by data-fid
  function keepFocus(fn) {
    const a = document.activeElement;
    const fid = a && a.getAttribute && a.getAttribute('data-fid');
    fn();
    if (fid && !document.contains(a)) {
      const b = document.querySelector('[data-fid="' + CSS.escape(fid) + '"]');
      if (b) b.focus({ preventScroll: true });
    }
  }
  let catalogSig = '';

  function cmp(a, b, key) {
    let x = a[key], y = b[key];
    if (key === 'tuned') { x = x ? 1 : 0; y = y ? 1 : 0; }
    const nx = x === null || x === undefined, ny = y === null || y === undefined;
    if (nx || ny) return nx && ny ? 0 : nx ? 1 : -1; // missing values last
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    return String(x).localeCompare(String(y), undefined, { numeric: true });
  }

  function renderCatalog(st) {
    const body = $('#catalog-body');
    const status = $('#catalog-status');
    const empty = $('#catalog-empty');
    for (const th of document.querySelectorAll('#catalog thead th')) {
      if (th.dataset.key === st.sort) th.setAttribute('aria-sort', st.dir === 'asc' ? 'ascending' : 'descending');
      else th.removeAttribute('aria-sort');
    }
    if (data.models === null) {
      body.replaceChildren();
      empty.hidden = true;
      status.textContent = data.modelsErr ? 'Could not load the catalog: ' + data.modelsErr.message : 'Loading the catalog…';
      return;
    }
    const net = st.network.trim().toLowerCase();
    const rows = data.models.filter(m =>
      (!st.framework || m.framework === st.framework) &&
      (!net || String(m.network).toLowerCase().includes(net)) &&
      (!st.state || m.state === st.state));
    rows.sort((a, b) => {
      const c = cmp(a, b, st.sort);
      const r = st.dir === 'desc' ? -c : c;
      return r || cmp(a, b, 'network') || cmp(a, b, 'batch');
    });
    empty.hidden = data.models.length !== 0;
    $('#empty-curl').textContent = 'curl -f --retry 100 --retry-max-time 3600 -o squeezenet.tar ' + ORIGIN + '/models/llvm/squeezenet_v1.1/1';
    $('#catalog').hidden = data.models.length === 0;
    if (data.models.length === 0) status.textContent = '';
    else if (rows.length === 0) status.textContent = 'No model matches these filters (' + data.models.length + ' in all).';
    else status.textContent = rows.length === data.models.length ? rows.length + ' model' + (rows.length === 1 ? '' : 's')
      : rows.length + ' of ' + data.models.length + ' models';
    if (data.modelsErr) status.textContent += ' (last refresh failed: ' + data.modelsErr.message + ')';
    const sig = JSON.stringify([rows, st.model]);
    if (sig === catalogSig) return;
    catalogSig = sig;
    keepFocus(() => body.replaceChildren(...rows.map(m => {
      const key = keyOf(m);
      const tr = h('tr', { class: key === st.model ? 'selected' : null, 'data-key': key },
        h('td', { 'data-label': 'Framework' }, m.framework),
        h('td', { 'data-label': 'Network' }, h('a', { href: hrefFor({ view: 'catalog', model: key }), class: 'model-link', 'data-fid': 'm:' + key }, m.network)),
        h('td', { class: 'num', 'data-label': 'Batch' }, m.batch),
        h('td', { 'data-label': 'State' }, h('span', { class: 'pill ' + m.state }, m.state)),
        h('td', { class: 'num', 'data-label': 'Version' }, m.version != null ? 'v' + m.version : '—'),
        h('td', { 'data-label': 'Tuned' }, m.state === 'ready' ? h('span', { class: 'pill ' + (m.tuned ? 'tuned' : 'untuned') }, m.tuned ? 'tuned' : 'untuned') : '—'),
        h('td', { class: 'num', 'data-label': 'Latency' }, fmtMs(m.latency_ms)),
        h('td', { class: 'num', 'data-label': 'Size' }, m.size != null ? fmtBytes(m.size) : '—'),
        h('td', { 'data-label': 'Published' }, m.published_at ? h('time', { datetime: m.published_at }, fmtDate(m.published_at)) : '—'));
      return tr;
    })));
  }

  /* ---------- detail ---------- */
  let detailKey = null;
  function renderDetail(st) {
    const sec = $('#detail');
    if (!st.model) { sec.hidden = true; detailKey = null; return; }
    sec.hidden = false;
    const m = data.models && data.models.find(x => keyOf(x) === st.model);
    const [fw, net, batch] = st.model.split('/');
    $('#detail-h').textContent = net + ' · ' + fw + ' · batch ' + batch;
    $('#detail-close').href = hrefFor({ model: '' });
    const body = $('#detail-body');
    const mkey = st.model + '@' + (m ? m.version : '');
    if (detailKey === mkey && body.dataset.state === (m ? m.state : 'none')) { updateDetailJobs(st.model); return; }
    const first = detailKey === null || !detailKey.startsWith(st.model + '@');
    detailKey = mkey;
    body.dataset.state = m ? m.state : 'none';
    if (!m) {
      body.replaceChildren(h('p', { class: 'empty' }, data.models === null ? 'Loading…' : 'This model is not in the catalog.'));
      return;
    }
    if (first) $('#detail-h').focus({ preventScroll: false });
    body.replaceChildren(detailSkeleton(m));
    if (m.state === 'ready') loadManifest(m);
    updateDetailJobs(st.model);
  }

  function copyRow(label, text, id) {
    const pre = h('pre', null, h('code', { id }, text));
    const btn = h('button', { type: 'button', class: 'small secondary copy', 'aria-label': 'Copy ' + label, onclick: () => copyText(text, btn) }, 'Copy');
    return h('div', null, h('div', { class: 'label small muted' }, label), h('div', { class: 'copyrow' }, pre, btn));
  }
  async function copyText(text, btn) {
    let ok = false;
    try { await navigator.clipboard.writeText(text); ok = true; } catch (e) {
      const ta = h('textarea', { style: 'position:fixed;left:-9999px', 'aria-hidden': 'true' });
      ta.value = text; document.body.append(ta); ta.select();
      try { ok = document.execCommand('copy'); } catch (e2) { ok = false; }
      ta.remove();
    }
    const old = btn.textContent;
    btn.textContent = ok ? 'Copied' : 'Copy failed';
    setTimeout(() => { btn.textContent = old; }, 1500);
  }

  function detailSkeleton(m) {
    const path = modelPath(m);
    const url = ORIGIN + path;
    const fname = m.network + '_' + m.framework + '_b' + m.batch;
    const kids = [];
    const summary = h('dl', { class: 'kv' },
      h('dt', null, 'State'), h('dd', null, h('span', { class: 'pill ' + m.state }, m.state)),
      m.version != null && [h('dt', null, 'Version'), h('dd', null, 'v' + m.version + (m.versions ? ' (' + m.versions + ' published)' : ''))],
      m.state === 'ready' && [h('dt', null, 'Tuned'), h('dd', null, m.tuned ? 'yes' : 'no (fallback configs)')],
      m.target && [h('dt', null, 'Target'), h('dd', null, m.target)],
      m.compiler_version && [h('dt', null, 'Compiler'), h('dd', null, m.compiler_version)],
      m.latency_ms != null && [h('dt', null, 'Latency'), h('dd', null, fmtMs(m.latency_ms))],
      m.size != null && [h('dt', null, 'Bundle size'), h('dd', null, fmtBytes(m.size))],
      m.so_size != null && [h('dt', null, '.so size'), h('dd', null, fmtBytes(m.so_size))],
      m.published_at && [h('dt', null, 'Published'), h('dd', null, fmtDate(m.published_at))]);
    kids.push(h('div', { class: 'card' }, h('h3', null, 'Summary'), summary));
    if (m.state === 'ready') {
      const dl = h('div', { class: 'card' }, h('h3', null, 'Download'),
        h('div', { class: 'actions' },
          h('a', { class: 'button', id: 'dl-tar', href: path, download: fname + '.tar' }, 'Download .tar'),
          h('a', { class: 'button secondary', id: 'dl-so', href: path + '?format=so', download: fname + '.so' }, 'Download .so'),
          h('a', { class: 'button secondary', href: path + '/manifest', target: '_blank', rel: 'noopener' }, 'Manifest JSON')),
        m.digest ? copyRow('Digest (sha256 of the .tar)', m.digest, 'digest') : null,
        m.so_digest ? copyRow('Digest of the .so', m.so_digest, 'so-digest') : null,
        copyRow('By name (newest version)', 'curl -fO -J ' + shq(url), 'curl-name'),
        m.digest ? copyRow('By digest (immutable)', 'curl -f -o ' + fname + '.tar ' + shq(ORIGIN + '/blobs/' + m.digest), 'curl-digest') : null,
        copyRow('Waiting for a build', 'curl -f --retry 100 --retry-max-time 3600 -o ' + fname + '.tar ' + shq(url), 'curl-wait'));
      kids.push(dl);
    } else {
      const job = m.job || {};
      kids.push(h('div', { class: 'card' }, h('h3', null, m.state === 'failed' ? 'Build failed' : 'Building'),
        job.error ? h('p', { class: 'error' }, job.error) : null,
        job.stage ? h('p', null, 'Stage: ' + job.stage) : null,
        job.id ? h('p', null, h('a', { href: hrefFor({ view: 'jobs' }) }, 'Job ' + job.id)) : null,
        copyRow('Wait for it from a shell', 'curl -f --retry 100 --retry-max-time 3600 -o ' + fname + '.tar ' + shq(url), 'curl-wait')));
    }
    const grid = h('div', { class: 'grid' }, kids);
    return h('div', null, grid,
      h('div', { class: 'grid' },
        h('div', { class: 'card', id: 'manifest-card' }, h('h3', null, 'Manifest'), h('p', { class: 'muted' }, m.state === 'ready' ? 'Loading the manifest…' : 'No manifest until the model is published.')),
        h('div', { class: 'card', id: 'latency-card' }, h('h3', null, 'Latency per version'), latencyChart(m, null))),
      h('div', { class: 'grid' },
        h('div', { class: 'card', id: 'layers-card', hidden: true }),
        h('div', { class: 'card', id: 'tuning-card', hidden: true })));
  }

  async function loadManifest(m) {
    const k = keyOf(m) + '@' + m.version;
    let man = manifests.get(k);
    if (!man) {
      try { man = (await api(modelPath(m) + '/manifest')).body || {}; }
      catch (e) { man = e; }
      manifests.set(k, man);
    }
    if (detailKey !== k) return; // the user moved on
    renderManifest(m, man);
  }

  function pick(obj, ...names) {
    for (const n of names) {
      const parts = n.split('.');
      let v = obj;
      for (const p of parts) v = v && typeof v === 'object' ? v[p] : undefined;
      if (v !== undefined && v !== null && v !== '') return v;
    }
    return undefined;
  }
  function show(v) {
    if (v === undefined || v === null) return '—';
    if (typeof v === 'object') return JSON.stringify(v);
    return String(v);
  }

  function renderManifest(m, man) {
    const card = $('#manifest-card');
    if (!card) return;
    if (man instanceof Error) {
      card.replaceChildren(h('h3', null, 'Manifest'), h('p', { class: 'error' }, 'Could not load the manifest: ' + man.message));
      return;
    }
    // latency: {mean_ms, median_ms, std_ms, n} under "latency", or {mean, median, std, min, n} under "latency_ms"
    let lat = pick(man, 'latency', 'latency_ms');
    const latStat = (n) => {
      if (!lat || typeof lat !== 'object') return undefined;
      const v = lat[n + '_ms'] !== undefined ? lat[n + '_ms'] : lat[n];
      return typeof v === 'number' ? v : undefined;
    };
    const rows = [];
    const add = (label, v) => { if (v !== undefined && v !== null && v !== '') rows.push(h('dt', null, label), h('dd', null, show(v))); };
    const key = pick(man, 'key');
    add('Key', key && typeof key === 'object' ? [key.framework, key.network, key.batch != null ? 'batch ' + key.batch : null].filter(v => v != null).join(' / ') : key);
    const tgt = pick(man, 'target');
    add('Target', typeof tgt === 'string' ? tgt : pick(man, 'key.target', 'target.target', 'target.triple'));
    if (tgt && typeof tgt === 'object' && tgt.triple) add('Triple', tgt.triple);
    add('CPU', pick(man, 'cpu', 'target.cpu', 'target_cpu', 'mcpu'));
    add('SIMD lanes', pick(man, 'target.simd_lanes'));
    const shape = (v) => Array.isArray(v) ? v.join('×') : v;
    const io = (o) => o && typeof o === 'object' && !Array.isArray(o) ? [shape(o.shape), o.dtype, o.layout].filter(Boolean).join(' ') : shape(o);
    add('Input', io(pick(man, 'input')));
    add('Output', io(pick(man, 'output')));
    const fl = pick(man, 'flops');
    add('FLOPs', typeof fl === 'number' ? fmtGflop(fl) : fl);
    const pr = pick(man, 'params');
    add('Params', typeof pr === 'number' ? (pr / 1e6).toFixed(2) + 'M' : pr);
    const wb = pick(man, 'weights_bytes'), ws = pick(man, 'workspace_bytes');
    add('Weights', typeof wb === 'number' ? fmtBytes(wb) : wb);
    add('Workspace', typeof ws === 'number' ? fmtBytes(ws) : ws);
    add('Kernels / calls', pick(man, 'num_kernels') !== undefined ? pick(man, 'num_kernels') + ' / ' + show(pick(man, 'num_calls')) : undefined);
    add('Compiler', pick(man, 'compiler_version', 'compiler', 'key.compiler_version'));
    const bs = pick(man, 'build_seconds');
    add('Build time', typeof bs === 'number' ? fmtDur(bs) : bs);
    add('Format', pick(man, 'format'));
    if (lat && typeof lat === 'object') {
      add('Latency mean', latStat('mean') !== undefined ? fmtMs(latStat('mean')) : undefined);
      add('Latency median', latStat('median') !== undefined ? fmtMs(latStat('median')) : undefined);
      add('Latency std', latStat('std') !== undefined ? fmtMs(latStat('std')) : undefined);
      add('Latency min', latStat('min') !== undefined ? fmtMs(latStat('min')) : undefined);
      add('Runs', lat.n != null ? lat.n : lat.repeat);
    } else if (typeof lat === 'number') add('Latency', fmtMs(lat));
    man.__latency = latStat('mean') !== undefined ? latStat('mean') : (typeof lat === 'number' ? lat : latStat('median'));
    const files = pick(man, 'files');
    const fileRows = [];
    if (files && typeof files === 'object') {
      const entries = Array.isArray(files) ? files.map(f => [f.name || f.path, f]) : Object.entries(files);
      for (const [name, f] of entries) fileRows.push(h('tr', null, h('td', null, name), h('td', { class: 'num' }, f && f.size != null ? fmtBytes(f.size) : '—'),
        h('td', null, h('code', null, f && f.sha256 ? String(f.sha256).slice(0, 16) + '…' : '—'))));
    }
    card.replaceChildren(h('h3', null, 'Manifest'),
      rows.length ? h('dl', { class: 'kv', id: 'manifest-kv' }, rows) : h('p', { class: 'muted' }, 'The manifest has no summary fields.'),
      fileRows.length ? h('div', { class: 'table-wrap', style: 'margin-top:.75rem' }, h('table', null, h('caption', { class: 'sr-only' }, 'Files in the bundle'),
        h('thead', null, h('tr', null, h('th', null, 'File'), h('th', { class: 'num' }, 'Size'), h('th', null, 'sha256'))), h('tbody', null, fileRows))) : null);

    const lc = $('#latency-card');
    if (lc) lc.replaceChildren(h('h3', null, 'Latency per version'), latencyChart(m, man));

    // layers
    const layers = pick(man, 'layers', 'tasks', 'kernels');
    const layersCard = $('#layers-card');
    if (Array.isArray(layers) && layers.length && layersCard) {
      let counts = {};
      const cs = pick(man, 'config_sources');
      if (cs && typeof cs === 'object' && !Array.isArray(cs)) counts = Object.assign({}, cs);
      else for (const l of layers) { const src = (l && (l.source || l.config_source)) || 'unknown'; counts[src] = (counts[src] || 0) + 1; }
      layersCard.hidden = false;
      layersCard.replaceChildren(h('h3', null, 'Layers and config sources'),
        h('div', { class: 'srcs', id: 'source-counts' }, Object.entries(counts).map(([k, n]) =>
          h('span', { class: 'pill ' + (k === 'tuned' ? 'tuned' : k === 'fallback' ? 'untuned' : 'building') }, k + ': ' + n))),
        h('div', { class: 'layers table-wrap' }, h('table', null, h('caption', { class: 'sr-only' }, 'Per-layer configs'),
          h('thead', null, h('tr', null, h('th', null, '#'), h('th', null, 'Layer'), h('th', null, 'Kernel'), h('th', null, 'Workload'), h('th', null, 'Source'), h('th', null, 'Config'))),
          h('tbody', null, layers.map((l, i) => h('tr', null,
            h('td', null, l && l.index != null ? l.index : i),
            h('td', null, show(pick(l, 'name', 'op', 'layer'))),
            h('td', null, show(pick(l, 'kernel', 'template', 'op'))),
            h('td', { class: 'wl' }, h('code', null, show(pick(l, 'workload', 'workload_key', 'key')))),
            h('td', null, show(pick(l, 'source', 'config_source'))),
            h('td', null, h('code', null, show(pick(l, 'config', 'cfg'))))))))));
      // tuning chart from the manifest when layers carry GFLOPS
      const pts = layers.map((l, i) => ({ label: String(pick(l, 'name', 'template') || i + 1), v: pick(l, 'gflops', 'best_gflops') }))
        .filter(p => typeof p.v === 'number');
      if (pts.length) showTuningChart(pts, 'Best GFLOPS per layer (from the manifest)');
    }
  }

  function latencyChart(m, man) {
    // one point per version we know: the catalog and the manifest only describe the newest version
    const pts = [];
    const hist = man && (pick(man, 'history', 'versions'));
    if (Array.isArray(hist)) for (const v of hist) {
      const ms = pick(v, 'latency_ms.mean', 'latency_ms', 'latency.mean_ms');
      if (typeof ms === 'number') pts.push({ label: 'v' + (v.version != null ? v.version : pts.length + 1), v: ms });
    }
    let cur = m.latency_ms;
    if (typeof cur !== 'number' && man) cur = man.__latency;
    if (typeof cur === 'number' && !pts.some(p => p.label === 'v' + m.version)) pts.push({ label: 'v' + (m.version != null ? m.version : '?'), v: cur });
    if (!pts.length) return h('p', { class: 'muted' }, 'No latency measured yet.');
    return barChart(pts, { unit: 'ms', title: 'Latency per version (ms)', id: 'latency-chart' });
  }

  function barChart(pts, o) {
    const W = 560, rowH = 22, padL = 120, padR = 70, padT = 8;
    const H = padT + pts.length * rowH + 24;
    const max = Math.max(...pts.map(p => p.v), 1e-9);
    const scale = (W - padL - padR) / max;
    const ticks = 4;
    const g = [];
    for (let i = 0; i <= ticks; i++) {
      const x = padL + (W - padL - padR) * i / ticks;
      g.push(s('line', { x1: x, x2: x, y1: padT, y2: H - 20, class: 'grid' }));
      g.push(s('text', { x, y: H - 6, 'text-anchor': 'middle' }, +(max * i / ticks).toPrecision(3)));
    }
    pts.forEach((p, i) => {
      const y = padT + i * rowH;
      const w = Math.max(1, p.v * scale);
      const label = p.label.length > 18 ? p.label.slice(0, 17) + '…' : p.label;
      g.push(s('text', { x: padL - 6, y: y + rowH / 2 + 4, 'text-anchor': 'end' }, s('title', null, p.label), label));
      g.push(s('rect', { x: padL, y: y + 3, width: w, height: rowH - 6, class: 'barfill', rx: 2 }, s('title', null, p.label + ': ' + p.v + ' ' + o.unit)));
      g.push(s('text', { x: padL + w + 4, y: y + rowH / 2 + 4 }, +p.v.toPrecision(4) + ' ' + o.unit));
    });
    g.push(s('line', { x1: padL, x2: padL, y1: padT, y2: H - 20, class: 'axis' }));
    const svg = s('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'chart', role: 'img', 'aria-label': o.title, id: o.id || '' },
      s('title', null, o.title), g);
    return svg;
  }

  function showTuningChart(pts, title) {
    const c = $('#tuning-card');
    if (!c) return;
    c.hidden = false;
    c.replaceChildren(h('h3', null, title), barChart(pts, { unit: 'GFLOPS', title, id: 'tuning-chart' }));
  }

  function updateDetailJobs(key) {
    if (!data.jobs) return;
    const [fw, net, batch] = key.split('/');
    const js = data.jobs.filter(j => j.framework === fw && j.network === net && String(j.batch) === batch);
    const tuned = js.find(j => j.progress && Array.isArray(j.progress.tasks) && j.progress.tasks.some(t => typeof t.best_gflops === 'number'));
    if (tuned) {
      const pts = tuned.progress.tasks.map((t, i) => ({ label: (t.template || 'task') + ' #' + (i + 1), v: t.best_gflops || 0 }));
      showTuningChart(pts, 'Best GFLOPS per task (job ' + tuned.id + ', ' + tuned.state + ')');
    }
  }

  /* ---------- jobs ---------- */
  function jobFraction(j) {
    if (j.state === 'succeeded') return 1;
    const p = j.progress || {};
    if (typeof p.fraction === 'number') return Math.max(0, Math.min(1, p.fraction));
    if (typeof p.done === 'number' && typeof p.total === 'number' && p.total > 0) return p.done / p.total;
    if (typeof p.trials === 'number' && typeof p.trials_total === 'number' && p.trials_total > 0) return p.trials / p.trials_total;
    if (p.build && typeof p.build.fraction === 'number') return Math.max(0, Math.min(1, p.build.fraction));
    if (Array.isArray(p.tasks) && p.tasks.length) {
      let d = 0, t = 0;
      for (const x of p.tasks) { d += x.trials || 0; t += x.budget || 0; }
      if (t > 0) return d / t;
    }
    return j.state === 'queued' ? 0 : null;
  }

  function jobItem(j) {
    const p = j.progress || {};
    const frac = jobFraction(j);
    const active = j.state === 'queued' || j.state === 'running';
    const stages = [j.stage, p.phase, p.stage, p.build && p.build.stage].filter((v, i, a) => v && a.indexOf(v) === i);
    const stage = stages.join(' › ');
    const eta = fmtDur(p.eta_s);
    const title = [j.network, j.framework, j.batch != null ? 'batch ' + j.batch : null].filter(Boolean).join(' · ');
    const pct = frac === null ? null : Math.round(frac * 100);
    const li = h('li', { class: 'job', 'data-job': j.id, 'data-state': j.state },
      h('div', { class: 'job-head' },
        h('strong', null, title || ('job ' + j.id)),
        h('span', { class: 'pill ' + j.state }, j.state),
        j.kind ? h('span', { class: 'muted small' }, j.kind) : null,
        h('span', { class: 'grow muted small' }, 'job ' + j.id),
        active ? h('button', { type: 'button', class: 'small danger', 'data-fid': 'cancel:' + j.id, 'aria-label': 'Cancel job ' + j.id, onclick: () => cancelJob(j) }, 'Cancel') : null),
      h('div', { class: 'small' },
        stage ? 'Stage: ' + stage : null,
        active && p.done != null && p.total != null ? ' · ' + p.done + '/' + p.total : null,
        active && p.task != null && p.ntasks ? ' · task ' + (p.task + 1) + '/' + p.ntasks : null,
        pct !== null ? ' · ' + pct + '%' : null,
        eta && active ? ' · ETA ' + eta : null,
        typeof j.elapsed_s === 'number' ? ' · ' + fmtDur(j.elapsed_s) + ' elapsed' : null,
        j.state === 'succeeded' && j.framework ? [' · ', h('a', { href: hrefFor({ view: 'catalog', model: j.framework + '/' + j.network + '/' + j.batch }) }, 'open model')] : null),
      pct !== null ? h('div', { class: 'bar', role: 'progressbar', 'aria-label': 'Progress of job ' + j.id, 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': pct },
        h('span', { style: 'width:' + pct + '%' })) : null,
      Array.isArray(p.tasks) && p.tasks.length && active ? h('ul', { class: 'tasks' }, p.tasks.map((t, i) => {
        const tf = t.budget > 0 ? Math.min(1, (t.trials || 0) / t.budget) : null;
        return h('li', null, (t.template || 'task') + ' #' + (i + 1) + ': ' + (t.trials != null ? t.trials : '?') + '/' + (t.budget != null ? t.budget : '?') +
          ' trials' + (typeof t.best_gflops === 'number' ? ', best ' + t.best_gflops.toFixed(1) + ' GFLOPS' : ''),
          tf !== null ? h('div', { class: 'bar small' }, h('span', { style: 'width:' + Math.round(tf * 100) + '%' })) : null);
      })) : null,
      j.error ? h('p', { class: 'error' }, String(j.error)) : null);
    return li;
  }

  function renderJobs() {
    const act = $('#jobs-active'), done = $('#jobs-done');
    const badge = $('#jobs-badge');
    if (!data.jobs) {
      if (data.jobsErr) { act.replaceChildren(h('li', { class: 'empty' }, 'Could not load jobs: ' + data.jobsErr.message)); }
      return;
    }
    const active = data.jobs.filter(j => j.state === 'queued' || j.state === 'running');
    const finished = data.jobs.filter(j => !(j.state === 'queued' || j.state === 'running')).slice(0, 20);
    keepFocus(() => {
      act.replaceChildren(...active.map(jobItem));
      done.replaceChildren(...finished.map(jobItem));
    });
    $('#jobs-active-empty').hidden = active.length !== 0;
    $('#jobs-done-empty').hidden = finished.length !== 0;
    badge.hidden = active.length === 0;
    badge.textContent = active.length;
    badge.setAttribute('aria-label', active.length + ' active');
    $('#jobs-updated').textContent = data.jobsErr ? 'Last refresh failed: ' + data.jobsErr.message : 'Last update ' + new Date().toLocaleTimeString();
    renderBuildJob();
  }

  /* ---------- cancel ---------- */
  const dialog = $('#token-dialog');
  function askToken() {
    return new Promise(resolve => {
      const input = $('#token-input');
      input.value = sessionStorage.getItem('tunehub.token') || '';
      if (typeof dialog.showModal !== 'function') { resolve(window.prompt('Bearer token') || null); return; }
      const done = (v) => { dialog.close(); resolve(v); };
      $('#token-form').onsubmit = (e) => { e.preventDefault(); done(input.value.trim() || null); };
      $('#token-cancel').onclick = () => done(null);
      dialog.oncancel = () => resolve(null);
      dialog.showModal();
      input.focus();
    });
  }
  async function cancelJob(j) {
    let token = sessionStorage.getItem('tunehub.token');
    if (!token) token = await askToken();
    if (!token) return;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await api('/jobs/' + enc(j.id), { method: 'DELETE', headers: { Authorization: 'Bearer ' + token, Accept: 'application/json' } });
        sessionStorage.setItem('tunehub.token', token);
        flash('Job ' + j.id + ' cancelled.');
        break;
      } catch (e) {
        if ((e.status === 401 || e.status === 403) && attempt === 0) {
          sessionStorage.removeItem('tunehub.token');
          token = await askToken();
          if (!token) return;
          continue;
        }
        flash('Could not cancel job ' + j.id + ': ' + e.message, true);
        break;
      }
    }
    await loadJobs(); renderJobs();
  }
  function flash(msg, bad) {
    const r = $('#jobs-updated');
    r.textContent = msg;
    r.className = bad ? 'field-error' : '';
  }

  /* ---------- build form ---------- */
  function fillNetworks() {
    const sel = $('#b-network');
    const dl = $('#network-list');
    if (!data.networks) { sel.replaceChildren(h('option', { value: '' }, 'networks unavailable')); return; }
    const cur = sel.value;
    sel.replaceChildren(h('option', { value: '' }, 'choose a network…'),
      ...data.networks.map(n => h('option', { value: n.name }, n.name + (n.input ? ' — input ' + n.input.join('×') : '') + (typeof n.flops === 'number' ? ', ' + fmtGflop(n.flops) : ''))));
    if (cur) sel.value = cur;
    dl.replaceChildren(...data.networks.map(n => h('option', { value: n.name })));
    networkHint();
    const t = data.targets;
    if (t && Array.isArray(t.targets)) {
      for (const opt of $('#b-framework').options) {
        const tt = t.targets.find(x => x.framework === opt.value);
        if (tt && tt.available === false) opt.textContent = opt.value + (opt.value === 'cuda' ? ' (GPU)' : ' (CPU)') + ' — unavailable here';
      }
      if (t.compiler_version) $('#compiler-version').textContent = 'compiler ' + t.compiler_version;
    }
    frameworkHint();
  }
  function frameworkHint() {
    const t = data.targets && Array.isArray(data.targets.targets) ? data.targets.targets.find(x => x.framework === $('#b-framework').value) : null;
    $('#b-framework-hint').textContent = t ? (t.available === false ? 'Not available here' + (t.reason ? ': ' + t.reason : '') : (t.device || '') + (t.target ? ' — ' + t.target : '')) : '';
  }
  function networkHint() {
    const n = data.networks && data.networks.find(x => x.name === $('#b-network').value);
    $('#b-network-hint').textContent = n ? [n.description, n.input ? 'input ' + n.input.join('×') : null, fmtGflop(n.flops),
      typeof n.params === 'number' ? (n.params / 1e6).toFixed(1) + 'M params' : null].filter(Boolean).join(' · ') : '';
  }
  function validateBatch() {
    const inp = $('#b-batch');
    const v = inp.value.trim();
    let msg = '';
    if (!/^\d+$/.test(v)) msg = 'Enter a whole number from 1 to 256.';
    else if (+v < 1 || +v > 256) msg = 'The batch size must be from 1 to 256.';
    $('#b-batch-err').textContent = msg;
    inp.setAttribute('aria-invalid', msg ? 'true' : 'false');
    return msg === '';
  }

  let buildJobId = null;
  function renderBuildJob() {
    const ul = $('#build-job');
    if (!buildJobId || !data.jobs) return;
    const j = data.jobs.find(x => String(x.id) === String(buildJobId));
    if (j) ul.replaceChildren(jobItem(j));
  }

  async function submitBuild(ev) {
    ev.preventDefault();
    const out = $('#build-result');
    const fw = $('#b-framework').value, net = $('#b-network').value;
    let ok = true;
    if (!net) { out.replaceChildren(h('div', { class: 'error-box' }, 'Choose a network.')); $('#b-network').focus(); ok = false; }
    if (!validateBatch()) { if (ok) $('#b-batch').focus(); ok = false; }
    if (!ok) return;
    const batch = String(+$('#b-batch').value);
    const path = '/models/' + enc(fw) + '/' + enc(net) + '/' + batch;
    const btn = $('#b-submit');
    btn.disabled = true;
    out.replaceChildren(h('p', { class: 'muted' }, 'Asking the server…'));
    $('#build-job').replaceChildren();
    buildJobId = null;
    try {
      // HEAD never queues and never downloads: a 200 means the model is already there.
      let head = null;
      try { head = await fetch(path, { method: 'HEAD', cache: 'no-store' }); serverUp(); }
      catch (e) { serverDown(); throw new HttpError(0, null, 'server unreachable'); }
      const key = fw + '/' + net + '/' + batch;
      if (head.status === 200) {
        out.replaceChildren(h('div', { class: 'ok-box' }, 'Already built: ',
          h('a', { href: hrefFor({ view: 'catalog', model: key }) }, net + ' · ' + fw + ' · batch ' + batch), '.'));
        return;
      }
      let resp;
      try { resp = await fetch(path, { headers: { Prefer: 'respond-async', Accept: 'application/json' }, cache: 'no-store' }); }
      catch (e) { serverDown(); throw new HttpError(0, null, 'server unreachable'); }
      if (resp.status === 200) {
        // published between the HEAD and the GET: do not download it here
        try { await resp.body.cancel(); } catch (e) { /* ignore */ }
        out.replaceChildren(h('div', { class: 'ok-box' }, 'Already built: ',
          h('a', { href: hrefFor({ view: 'catalog', model: key }) }, net + ' · ' + fw + ' · batch ' + batch), '.'));
        return;
      }
      let body = null;
      try { body = await resp.json(); } catch (e) { body = null; }
      if (resp.status === 202 || (resp.ok && body && body.job)) {
        const job = body && body.job || {};
        buildJobId = job.id != null ? job.id : (resp.headers.get('Location') || '').split('/').pop();
        out.replaceChildren(h('div', { class: 'ok-box', id: 'build-ok' }, (body && body.queued === false ? 'Already building' : 'Queued') +
          ': job ' + buildJobId + '. Progress updates every 2 s; the model appears in the ',
          h('a', { href: hrefFor({ view: 'catalog', model: key }) }, 'catalog'), ' when done.'));
        if (job.id != null) $('#build-job').replaceChildren(jobItem(job));
        await loadJobs(); renderJobs();
        return;
      }
      const msg = errMessage(body, resp.status);
      out.replaceChildren(h('div', { class: 'error-box', id: 'build-error', role: 'alert' }, msg));
    } catch (e) {
      out.replaceChildren(h('div', { class: 'error-box', id: 'build-error', role: 'alert' }, e.message));
    } finally {
      btn.disabled = false;
    }
  }

  /* ---------- wiring ---------- */
  document.querySelectorAll('#catalog thead th button').forEach(b => b.addEventListener('click', () => {
    const key = b.parentElement.dataset.key;
    const st = readState();
    writeState({ sort: key, dir: st.sort === key && st.dir === 'asc' ? 'desc' : 'asc' }, true);
  }));
  $('#f-framework').addEventListener('change', e => writeState({ framework: e.target.value }, true));
  $('#f-state').addEventListener('change', e => writeState({ state: e.target.value }, true));
  $('#f-network').addEventListener('input', e => writeState({ network: e.target.value.trim() }, true));
  $('#f-clear').addEventListener('click', () => writeState({ framework: '', network: '', state: '' }, true));
  $('#filters').addEventListener('submit', e => e.preventDefault());
  $('#b-network').addEventListener('change', networkHint);
  $('#b-framework').addEventListener('change', frameworkHint);
  $('#b-batch').addEventListener('input', validateBatch);
  $('#build-form').addEventListener('submit', submitBuild);
  window.addEventListener('hashchange', render);
  document.addEventListener('keydown', e => {
    if (e.key === 'Escape' && readState().model && !dialog.open) writeState({ model: '' });
  });

  let lastSig = '';
  async function refreshAll() {
    await Promise.all([loadModels(), loadJobs()]);
    if (!data.networks) await loadStatic();
    render();
  }
  async function tick() {
    await loadJobs();
    // a job changed state: refresh the catalog too
    const sig = (data.jobs || []).map(j => j.id + ':' + j.state).join(',');
    if (sig !== lastSig || data.modelsErr || data.models === null) { lastSig = sig; await loadModels(); }
    if (!data.networks) await loadStatic();
    render();
    setTimeout(tick, POLL_MS);
  }
  window.tunehub = { data, refreshAll, readState };
  (async () => {
    await Promise.all([loadStatic(), loadModels(), loadJobs()]);
    lastSig = (data.jobs || []).map(j => j.id + ':' + j.state).join(',');
    render();
    setTimeout(tick, POLL_MS);
  })();
})();
