/* tunehub catalog page: plain JS, no build step. State lives in the URL hash
   (#view=catalog&framework=llvm&network=&state=&target=&sort=network&dir=asc&model=llvm/resnet-18/1; a model
   built for a target other than the server's own has it as a fourth part: model=llvm/resnet-18/1/x86-64-v2,
   and every URL the page builds for it carries ?target=x86-64-v2).
   Views: the catalog with a model's detail (manifest, downloads, the tuning curve from GET .../tuning and the
   latency per version from GET .../versions, both hand-made SVG), the jobs (per-task progress; live over
   GET /jobs/{id}/events for the running jobs in view, at most MAX_STREAMS, polling /jobs every 2 s where the
   server has no event stream), the networks (the zoo and the uploaded ONNX networks, with the upload form) and
   the build form. Mutations (cancel, tune, upload, delete, pinning an alias) ask for the bearer token once per tab;
   on a private server (serve --private) the first read does. */
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
      else if (k === 'style') el.style.cssText = v; /* CSSOM: allowed by the page's CSP, a style attribute is not */
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

  /* ---------- targets and model keys ----------
     A catalog row, a job and the URL name one entry by framework, network, batch and target. The target is
     the short name a client passes as ?target= ("x86-64-v2" of "llvm -mcpu=x86-64-v2", "sm_75" of
     "cuda -arch=sm_75"), or '' for the server's own target of the framework (GET /targets), which needs none. */
  function targetShort(t) {
    const m = /^\S+ -[\w-]+=(\S+)/.exec(String(t || '')); // "<framework> -<flag>=<arch>"
    return m ? m[1] : String(t || '');
  }
  function allTargets() {
    return data.targets && Array.isArray(data.targets.targets) ? data.targets.targets : [];
  }
  function targetsOf(fw) {
    return allTargets().find(x => x.framework === fw) || null;
  }
  // "llvm (CPU)": a framework as the selects show it, its device from GET /targets
  function frameworkLabel(t) {
    return t.framework + (t.device ? ' (' + String(t.device).toUpperCase() + ')' : '');
  }
  // whether a framework builds at more than one precision (its rows then show which one)
  function hasPrecisions(fw) {
    const t = targetsOf(fw);
    return !!(t && Array.isArray(t.precisions) && t.precisions.length > 1);
  }
  // '' when name (short or concrete) is the framework's native target; the short name otherwise. Before
  // /targets has answered every name is kept: the server takes its own target's name as native too.
  function targetParam(fw, name) {
    const short = name === 'native' ? '' : targetShort(name);
    const t = targetsOf(fw);
    return !short || (t && (short === t.native || short === targetShort(t.target))) ? '' : short;
  }
  // A cuda key at precision tf32 has it as a fifth part (cuda/resnet-18/1//tf32 on the native target) and
  // ?precision=tf32 on its URLs; fp32, the default, is named nowhere, so keys from before precisions still work.
  function precisionPart(p) { return p && p !== 'fp32' ? p : ''; }
  function keyString(fw, net, batch, target, precision) {
    const p = precisionPart(precision);
    return fw + '/' + net + '/' + batch + (target || p ? '/' + target : '') + (p ? '/' + p : '');
  }
  function keyOf(m) {
    return keyString(m.framework, m.network, m.batch, targetParam(m.framework, m.target), m.precision);
  }
  function parseKey(key) {
    const [fw, net, batch, target, precision] = String(key).split('/');
    return { fw, net, batch, target: targetParam(fw, target || ''), precision: precisionPart(precision) };
  }
  function normKey(key) {
    const k = parseKey(key);
    return key ? keyString(k.fw, k.net, k.batch, k.target, k.precision) : '';
  }
  // the URL of a model route for a key (string or parsed), with ?target= when it is not native
  function modelUrl(key, sub, params) {
    const k = typeof key === 'string' ? parseKey(key) : key;
    const q = new URLSearchParams();
    for (const [n, v] of Object.entries(Object.assign({}, params, { target: k.target, precision: k.precision })))
      if (v !== '' && v !== null && v !== undefined) q.set(n, v);
    const qs = q.toString();
    return '/models/' + enc(k.fw) + '/' + enc(k.net) + '/' + enc(k.batch) + (sub ? '/' + sub : '') + (qs ? '?' + qs : '');
  }
  // why the server cannot tune the key's target ('' when it can): it measures only on its own CPU and device
  function notTunableHere(key) {
    const k = parseKey(key);
    const t = targetsOf(k.fw);
    if (!k.target) return '';
    return 'This server measures only its own ' + k.fw + ' target' + (t ? ' (' + t.native + ')' : '') + ': ' + k.target +
      ' is served as the untuned cross-compiled build, and tuning it waits for a worker with that target.';
  }
  // "squeezenet_v1.1 · llvm · batch 1" and, for another target, " · x86-64-v2"; for tf32, " · tf32"
  function keyTitle(key) {
    const k = parseKey(key);
    return k.net + ' · ' + k.fw + ' · batch ' + k.batch + (k.target ? ' · ' + k.target : '') +
      (k.precision ? ' · ' + k.precision : '');
  }
  // the file name the server's Content-Disposition gives: <net>_<fw>[-<target>][-tf32]_b<batch>[_v<version>]
  function fileBase(key, version) {
    const k = parseKey(key);
    return k.net + '_' + k.fw + (k.target ? '-' + k.target : '') + (k.precision ? '-' + k.precision : '') + '_b' +
      k.batch + (version != null ? '_v' + version : '');
  }
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
  // a private server (serve --private) answers every read 401 naming the scope read: the page then asks for the
  // token once (one dialog for all the reads in flight), keeps it for the tab and sends it with every request
  let readTokenAsk = null;
  function authorized(o, token) {
    return Object.assign({}, o, { headers: Object.assign({}, o.headers, { Authorization: 'Bearer ' + token }) });
  }
  async function api(path, opts, retried) {
    let o = Object.assign({ headers: { Accept: 'application/json' }, cache: 'no-store' }, opts || {});
    const stored = sessionStorage.getItem('tunehub.token');
    if (stored && !o.headers.Authorization) o = authorized(o, stored);
    let resp;
    try {
      resp = await fetch(path, o);
    } catch (e) {
      serverDown(e);
      throw new HttpError(0, null, 'server unreachable');
    }
    serverUp();
    let body = null;
    const text = await resp.text();
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
    if (resp.status === 401 && !retried && (o.method || 'GET') === 'GET' && body && body.error && body.error.scope === 'read') {
      if (!readTokenAsk) readTokenAsk = askToken('Sign in').finally(() => { readTokenAsk = null; });
      const token = await readTokenAsk;
      if (token) {
        const r = await api(path, authorized(o, token), true);
        sessionStorage.setItem('tunehub.token', token);
        return r;
      }
    }
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
  const DEFAULTS = { view: 'catalog', framework: '', network: '', state: '', target: '', sort: 'network', dir: 'asc', model: '' };
  function readState() {
    const p = new URLSearchParams(location.hash.replace(/^#/, ''));
    const st = {};
    for (const k of Object.keys(DEFAULTS)) st[k] = p.get(k) || DEFAULTS[k];
    st.model = normKey(st.model); // a shared link may name the native target explicitly
    if (!['catalog', 'jobs', 'networks', 'build'].includes(st.view)) st.view = 'catalog';
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
    fillFrameworks();
    fillNetworks();
  }

  /* ---------- views ---------- */
  function render() {
    const st = readState();
    for (const v of ['catalog', 'jobs', 'networks', 'build']) {
      $('#view-' + v).hidden = st.view !== v;
      const a = $('#nav-' + v);
      if (st.view === v) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
    $('#f-framework').value = st.framework;
    if (document.activeElement !== $('#f-network')) $('#f-network').value = st.network;
    $('#f-state').value = st.state;
    fillTargetFilter(st);
    renderCatalog(st);
    renderDetail(st);
    renderJobs();
    renderNetworks();
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
      (!st.state || m.state === st.state) &&
      targetMatches(m, st.target));
    rows.sort((a, b) => {
      const c = cmp(a, b, st.sort);
      const r = st.dir === 'desc' ? -c : c;
      return r || cmp(a, b, 'network') || cmp(a, b, 'batch');
    });
    empty.hidden = data.models.length !== 0;
    $('#empty-curl').textContent = 'curl -f --retry 100 --retry-max-time 3600 -o squeezenet.tar ' + ORIGIN + '/models/' +
      ((allTargets()[0] || {}).framework || '{framework}') + '/squeezenet_v1.1/1';
    $('#catalog').hidden = data.models.length === 0;
    if (data.models.length === 0) status.textContent = '';
    else if (rows.length === 0) status.textContent = 'No model matches these filters (' + data.models.length + ' in all).';
    else status.textContent = rows.length === data.models.length ? rows.length + ' model' + (rows.length === 1 ? '' : 's')
      : rows.length + ' of ' + data.models.length + ' models';
    if (data.modelsErr) status.textContent += ' (last refresh failed: ' + data.modelsErr.message + ')';
    const sig = JSON.stringify([rows, st.model, !!data.targets]); // the keys depend on the native targets
    if (sig === catalogSig) return;
    catalogSig = sig;
    keepFocus(() => body.replaceChildren(...rows.map(m => {
      const key = keyOf(m);
      const tr = h('tr', { class: key === st.model ? 'selected' : null, 'data-key': key },
        h('td', { 'data-label': 'Framework' }, m.framework),
        h('td', { 'data-label': 'Network' }, h('a', { href: hrefFor({ view: 'catalog', model: key }), class: 'model-link', 'data-fid': 'm:' + key }, m.network),
          m.source === 'onnx' ? [' ', h('span', { class: 'pill onnx', title: 'an uploaded ONNX network' }, 'onnx')] : null),
        h('td', { class: 'num', 'data-label': 'Batch' }, m.batch),
        h('td', { class: 'target', 'data-label': 'Target', title: m.target || null }, targetCell(m),
          hasPrecisions(m.framework) ? [' ', h('span', { class: 'pill precision', title: m.precision === 'tf32'
            ? 'tensor cores, fp32 accumulation' : 'IEEE fp32 with FMA' }, m.precision || 'fp32')] : null),
        h('td', { 'data-label': 'State' }, h('span', { class: 'pill ' + m.state }, m.state)),
        h('td', { class: 'num', 'data-label': 'Version' }, m.version != null ? 'v' + m.version : '—'),
        h('td', { 'data-label': 'Tuned' }, m.state === 'ready' ? h('span', { class: 'pill ' + (m.tuned ? 'tuned' : 'untuned') }, m.tuned ? 'tuned' : 'untuned') : '—'),
        h('td', { class: 'num', 'data-label': 'Latency' }, fmtMs(m.latency_ms)),
        h('td', { class: 'num', 'data-label': 'Size' }, m.size != null ? fmtBytes(m.size) : '—'),
        h('td', { 'data-label': 'Published' }, m.published_at ? h('time', { datetime: m.published_at }, fmtDate(m.published_at)) : '—'));
      return tr;
    })));
  }

  // a row's target: its short name, marked native when it is the server's own
  function targetCell(m) {
    const short = targetShort(m.target);
    if (!short) return '—';
    return targetParam(m.framework, m.target) ? h('code', null, short)
      : [h('code', null, short), ' ', h('span', { class: 'pill native', title: 'this server\'s own ' + m.framework + ' target' }, 'native')];
  }
  // the catalog's target filter, as GET /models?target= reads it: "native" is each framework's own target,
  // another name matches the rows built for it
  function targetMatches(m, want) {
    if (!want) return true;
    if (want === 'native') return !targetParam(m.framework, m.target);
    return targetShort(m.target) === want;
  }
  let targetFilterSig = '';
  function fillTargetFilter(st) {
    const sel = $('#f-target');
    const names = new Set((data.models || []).map(m => targetShort(m.target)).filter(Boolean));
    const natives = ((data.targets && data.targets.targets) || []).map(t => t.native).filter(Boolean);
    for (const n of natives) names.delete(n); // listed as "native"
    if (st.target && st.target !== 'native') names.add(st.target); // a shared link's filter shows as it is
    const list = [...names].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
    const sig = JSON.stringify([list, natives]);
    if (sig !== targetFilterSig) {
      targetFilterSig = sig;
      sel.replaceChildren(h('option', { value: '' }, 'any'),
        h('option', { value: 'native' }, 'native' + (natives.length ? ' (' + natives.join(', ') + ')' : '')),
        ...list.map(n => h('option', { value: n }, n)));
    }
    sel.value = st.target;
  }

  /* ---------- detail ---------- */
  let detailKey = null;
  function renderDetail(st) {
    const sec = $('#detail');
    if (!st.model) { sec.hidden = true; detailKey = null; return; }
    sec.hidden = false;
    const m = data.models && data.models.find(x => keyOf(x) === st.model);
    $('#detail-h').textContent = keyTitle(st.model);
    $('#detail-close').href = hrefFor({ model: '' });
    const body = $('#detail-body');
    const mkey = st.model + '@' + (m ? m.version : '');
    if (detailKey === mkey && body.dataset.state === (m ? m.state : 'none')) { refreshDetailLive(st.model); return; }
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
    loadDetailData(st.model);
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
    const key = keyOf(m);
    const path = modelUrl(key);
    const url = ORIGIN + path;
    const fname = fileBase(key);
    const cross = parseKey(key).target;
    const kids = [];
    const summary = h('dl', { class: 'kv' },
      h('dt', null, 'State'), h('dd', null, h('span', { class: 'pill ' + m.state }, m.state)),
      m.version != null && [h('dt', null, 'Version'), h('dd', null, 'v' + m.version + (m.versions ? ' (' + m.versions + ' published)' : ''))],
      m.state === 'ready' && [h('dt', null, 'Tuned'), h('dd', null, m.tuned ? 'yes' : 'no (fallback configs)')],
      m.target && [h('dt', null, 'Target'), h('dd', { id: 'detail-target' }, m.target,
        h('span', { class: 'muted small' }, cross ? ' (cross-compiled; ?target=' + cross + ')' : ' (this server\'s own)'))],
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
          h('a', { class: 'button secondary', id: 'dl-so', href: modelUrl(key, '', { format: 'so' }), download: fname + '.so' }, 'Download .so'),
          h('a', { class: 'button secondary', id: 'dl-manifest', href: modelUrl(key, 'manifest'), target: '_blank', rel: 'noopener' }, 'Manifest JSON')),
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
        h('div', { class: 'card full', id: 'tuning-card' }, h('div', { id: 'tuning-body' }, h('h3', null, 'Tuning curve'), h('p', { class: 'muted' }, 'Loading the tuning records…')),
          (targetsOf(m.framework) || {}).tuning_curve ? tuneForm(key) : null),
        h('div', { class: 'card full', id: 'versions-card' }, h('h3', null, 'Latency per version'), h('p', { class: 'muted' }, 'Loading the versions…'))),
      h('div', { class: 'grid' },
        h('div', { class: 'card', id: 'manifest-card' }, h('h3', null, 'Manifest'), h('p', { class: 'muted' }, m.state === 'ready' ? 'Loading the manifest…' : 'No manifest until the model is published.')),
        h('div', { class: 'card', id: 'layers-card', hidden: true })));
  }

  async function loadManifest(m) {
    const k = keyOf(m) + '@' + m.version;
    let man = manifests.get(k);
    if (!man) {
      try { man = (await api(modelUrl(keyOf(m), 'manifest'))).body || {}; }
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
    // every input and output ("inputs"/"outputs"; older bundles have only "input"/"output")
    const ios = (v, one) => Array.isArray(v) && v.length ? v.map(o => [o.name, io(o)].filter(Boolean).join(' ')).join(', ') : io(pick(man, one));
    add(Array.isArray(pick(man, 'inputs')) && pick(man, 'inputs').length > 1 ? 'Inputs' : 'Input', ios(pick(man, 'inputs'), 'input'));
    add(Array.isArray(pick(man, 'outputs')) && pick(man, 'outputs').length > 1 ? 'Outputs' : 'Output', ios(pick(man, 'outputs'), 'output'));
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
    }
  }

  /* ---------- detail: versions, latency chart, tuning curve ---------- */
  const detailData = { key: null, versions: null, tuning: null, tuningAt: 0, focus: null, tableOpen: false, running: false };

  // loads what the detail charts need for the model on screen; the answers are dropped if the user moved on
  async function loadDetailData(key, what) {
    if (detailData.key !== key) Object.assign(detailData, { key, versions: null, tuning: null, tuningAt: 0, focus: null, tableOpen: false, running: false });
    else if (!what) { renderVersions(key); renderTuning(key); } // a rebuilt card shows what we have until the answers come
    const jobs = [];
    if (!what || what === 'versions') jobs.push(api(modelUrl(key, 'versions')).then(r => r.body, e => e).then(v => {
      if (detailData.key !== key) return;
      detailData.versions = v;
      renderVersions(key);
    }));
    if (!what || what === 'tuning') {
      detailData.tuningAt = Date.now();
      jobs.push(api(modelUrl(key, 'tuning', { points: 200 })).then(r => r.body, e => e).then(t => {
        if (detailData.key !== key) return;
        detailData.tuning = t;
        renderTuning(key);
      }));
    }
    await Promise.all(jobs);
  }

  // while a job of the model on screen runs, its tuning records grow: refresh the curve every 5 s
  function refreshDetailLive(key) {
    if (!data.jobs || detailData.key !== key) return;
    const running = data.jobs.some(j => keyOf(j) === key && j.state === 'running');
    // while running: every 5 s; when the job has just ended: once more, for the final records and to drop the note
    if ((running && Date.now() - detailData.tuningAt > 5000) || (!running && detailData.running)) loadDetailData(key, 'tuning');
    detailData.running = running;
  }

  // "nice" axis ticks: about n steps of 1, 2 or 5 × 10^k covering [lo, hi]
  function niceTicks(lo, hi, n) {
    if (!(hi > lo)) hi = lo + 1;
    const raw = (hi - lo) / Math.max(1, n);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(f => f * mag).find(st => st >= raw) || 10 * mag;
    const out = [];
    const max = Math.ceil(hi / step - 1e-9) * step;
    for (let v = Math.ceil(lo / step - 1e-9) * step; v <= max + step * 1e-9; v += step) out.push(+v.toPrecision(12));
    return { ticks: out, step, max };
  }
  function fmtNum(v) { return Math.abs(v) >= 100 ? String(Math.round(v)) : String(+v.toPrecision(3)); }
  let chartSeq = 0;

  // a plot frame with ticks, grid and axis labels; returns {svg, X, Y, layer} for the caller to draw into
  function chartFrame(o) {
    // drawn about as wide as the screen allows, so the text keeps its size when the SVG is scaled to fit (phones)
    const W = Math.max(320, Math.min(o.width || 900, window.innerWidth - 60));
    const H = window.innerWidth < 640 ? Math.round((o.height || 320) * 0.85) : (o.height || 320);
    const L = 58, R = 16, T = 14, B = 46;
    const id = 'c' + (++chartSeq);
    const X = v => L + (v - o.x0) / (o.x1 - o.x0 || 1) * (W - L - R);
    const Y = v => H - B - (v - o.y0) / (o.y1 - o.y0 || 1) * (H - T - B);
    const g = [];
    for (const t of o.yticks) {
      g.push(s('line', { x1: L, x2: W - R, y1: Y(t), y2: Y(t), class: 'gridline' }));
      g.push(s('text', { x: L - 6, y: Y(t) + 4, 'text-anchor': 'end' }, fmtNum(t)));
    }
    for (const t of o.xticks || []) {
      g.push(s('line', { x1: X(t.v), x2: X(t.v), y1: H - B, y2: H - B + 5, class: 'axis' }));
      g.push(s('text', { x: X(t.v), y: H - B + 18, 'text-anchor': 'middle' }, t.label));
    }
    g.push(s('line', { x1: L, x2: L, y1: T, y2: H - B, class: 'axis' }));
    g.push(s('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, class: 'axis' }));
    g.push(s('text', { x: L + (W - L - R) / 2, y: H - 6, 'text-anchor': 'middle', class: 'axis-label' }, o.xLabel));
    g.push(s('text', { x: 14, y: T + (H - T - B) / 2, 'text-anchor': 'middle', class: 'axis-label',
      transform: 'rotate(-90 14 ' + (T + (H - T - B) / 2) + ')' }, o.yLabel));
    const layer = s('g', { class: 'plot' });
    const svg = s('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'chart', role: 'img', id: o.id,
      'aria-labelledby': id + '-t ' + id + '-d', preserveAspectRatio: 'xMidYMid meet' },
    s('title', { id: id + '-t' }, o.title), s('desc', { id: id + '-d' }, o.desc), g, layer);
    return { svg, X, Y, layer };
  }

  function versionFile(key, v, so) {
    return fileBase(key, v.version) + (so ? '.so' : '.tar');
  }

  function renderVersions(key) {
    const card = $('#versions-card');
    if (!card) return;
    const v = detailData.versions;
    const head = h('h3', null, 'Latency per version');
    if (v === null) { card.replaceChildren(head, h('p', { class: 'muted' }, 'Loading the versions…')); return; }
    if (v instanceof Error) {
      card.replaceChildren(head, h('p', { class: v.status === 404 ? 'empty' : 'error' },
        v.status === 404 ? 'No version is published yet.' : 'Could not load the versions: ' + v.message));
      return;
    }
    const vs = Array.isArray(v.versions) ? v.versions : [];
    const retired = (Array.isArray(v.aliases) ? v.aliases : []).filter(a => a.retired);
    const parts = [head, h('div', { class: 'versions-row' }, latencyChart(vs), versionsTable(key, vs))];
    if (retired.length) parts.push(h('p', { class: 'muted small', id: 'aliases-retired' }, 'Retired aliases (their version is no longer served; move or delete them): ',
      retired.map((a, i) => [i ? ', ' : '', h('code', null, a.alias), ' → v' + a.version])));
    parts.push(aliasForm(key, vs));
    card.replaceChildren(...parts);
  }

  // PUT .../aliases/{name} {"version": N} with the token (the tuning's dialog); the server's answer as it is
  const ALIAS_RE = /^(?!b[0-9])[a-z](?:(?!\.\.)[a-z0-9._-]){0,63}$/;
  function aliasForm(key, vs) {
    const form = h('form', { class: 'tune-form alias-form', id: 'alias-form', novalidate: true, 'aria-label': 'Pin an alias to a version' },
      h('label', { for: 'alias-name' }, 'Alias'),
      h('input', { id: 'alias-name', name: 'alias', type: 'text', placeholder: 'prod', autocomplete: 'off', spellcheck: 'false' }),
      h('label', { for: 'alias-version' }, 'pins'),
      h('select', { id: 'alias-version', name: 'version' }, vs.slice().reverse().map(v => h('option', { value: v.version }, 'v' + v.version))),
      h('button', { type: 'submit', class: 'small' }, 'Pin'),
      h('span', { class: 'muted small' }, 'Needs the server\'s token. Moves the alias if it exists; ?alias= and the OCI tag follow it.'),
      h('div', { id: 'alias-result', class: 'small', 'aria-live': 'polite' }));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const out = $('#alias-result', form), nameIn = $('#alias-name', form);
      const name = nameIn.value.trim(), version = +$('#alias-version', form).value;
      if (!ALIAS_RE.test(name)) {
        nameIn.setAttribute('aria-invalid', 'true');
        out.replaceChildren(h('span', { class: 'field-error' }, 'Use 1–64 lowercase letters, digits, ".", "_" or "-", starting with a letter, not "b" and a digit.'));
        nameIn.focus();
        return;
      }
      nameIn.setAttribute('aria-invalid', 'false');
      const path = modelUrl(key, 'aliases/' + enc(name));
      try {
        const r = await withToken('Pin alias', token => api(path, { method: 'PUT', body: JSON.stringify({ version }),
          headers: { Authorization: 'Bearer ' + token, Accept: 'application/json', 'Content-Type': 'application/json' } }));
        if (!r) return;
        await loadDetailData(key, 'versions');
        const o = $('#alias-result');
        if (o) o.replaceChildren(h('span', { class: 'ok-text', id: 'alias-ok' }, name + ' → v' + r.body.version +
          (r.body.previous ? ' (was v' + r.body.previous + ')' : '')));
      } catch (err) {
        out.replaceChildren(h('span', { class: 'field-error', id: 'alias-error', role: 'alert' }, err.message));
      }
    });
    return form;
  }

  function latencyChart(vs) {
    const pts = vs.filter(x => typeof x.latency_ms === 'number');
    if (!pts.length) return h('p', { class: 'muted' }, 'No latency measured yet.');
    // the spread of the timing rounds (min..max of the rounds' means), drawn as a whisker over the bar
    const sp = p => p.latency_spread_ms && typeof p.latency_spread_ms.min === 'number' ? p.latency_spread_ms : null;
    const spreadText = p => sp(p) ? ' (rounds ' + fmtNum(sp(p).min) + '–' + fmtNum(sp(p).max) + ')' : '';
    const ny = niceTicks(0, Math.max(...pts.map(p => sp(p) ? Math.max(sp(p).max, p.latency_ms) : p.latency_ms)) * 1.08, 5);
    const desc = pts.map(p => 'v' + p.version + ' ' + fmtMs(p.latency_ms) + spreadText(p) + ' ' + (p.tuned ? 'tuned' : 'untuned')).join('; ');
    const n = vs.length;
    const f = chartFrame({ id: 'latency-chart', title: 'Median latency per version (ms), with the spread of its timing rounds; tuned versions in green', desc,
      x0: 0, x1: n, y0: 0, y1: ny.max, yticks: ny.ticks, width: 520, height: 260,
      xticks: vs.map((p, i) => ({ v: i + 0.5, label: 'v' + p.version })), xLabel: 'version', yLabel: 'latency (ms)' });
    const bw = Math.min(56, (f.X(1) - f.X(0)) * 0.6);
    vs.forEach((p, i) => {
      if (typeof p.latency_ms !== 'number') return;
      const cx = f.X(i + 0.5), y = f.Y(p.latency_ms);
      const lbl = 'v' + p.version + ': ' + fmtMs(p.latency_ms) + spreadText(p) + (p.tuned ? ', tuned' : ', untuned');
      f.layer.append(s('rect', { x: cx - bw / 2, y, width: bw, height: Math.max(1, f.Y(0) - y), rx: 2,
        class: 'vbar ' + (p.tuned ? 'tuned' : 'untuned'), 'data-version': p.version, 'data-tuned': p.tuned ? 1 : 0 }, s('title', null, lbl)));
      let top = y;
      if (sp(p)) {
        const y1 = f.Y(sp(p).max), y0 = f.Y(sp(p).min), w = bw / 4;
        top = Math.min(y, y1);
        f.layer.append(s('path', { d: `M${cx},${y0}V${y1}M${cx - w},${y0}H${cx + w}M${cx - w},${y1}H${cx + w}`,
          class: 'spread', 'data-version': p.version }, s('title', null, lbl)));
      }
      f.layer.append(s('text', { x: cx, y: top - 5, 'text-anchor': 'middle', class: 'value' }, fmtNum(p.latency_ms) + (p.tuned ? ' ★' : '')));
    });
    return h('figure', { class: 'fig' }, f.svg,
      h('figcaption', { class: 'legend small' },
        h('span', null, h('i', { class: 'sw tuned', 'aria-hidden': 'true' }), 'tuned (★)'),
        h('span', null, h('i', { class: 'sw untuned', 'aria-hidden': 'true' }), 'untuned (stored, transferred or fallback configs)')));
  }

  function versionsTable(key, vs) {
    const sp = v => v.latency_spread_ms && typeof v.latency_spread_ms.min === 'number' ? v.latency_spread_ms : null;
    const rows = vs.slice().reverse().map(v => h('tr', { 'data-version': v.version },
      h('td', { class: 'num' }, h('strong', null, 'v' + v.version), v.job != null ? h('div', { class: 'muted small' }, 'job ' + v.job) : null),
      h('td', null, h('span', { class: 'pill ' + (v.tuned ? 'tuned' : 'untuned') }, v.tuned ? 'tuned' : 'untuned')),
      h('td', { class: 'aliases' }, (v.aliases || []).length ? v.aliases.map(a => h('span', { class: 'pill alias', title: 'GET ?alias=' + a + ', OCI tag :' + a }, a)) : '—'),
      h('td', { class: 'num' }, fmtMs(v.latency_ms), sp(v) ? h('div', { class: 'muted small spread' }, fmtNum(sp(v).min) + '–' + fmtNum(sp(v).max) + ' ms, ' + sp(v).rounds + ' rounds') : null),
      h('td', null, v.published_at ? h('time', { datetime: v.published_at }, fmtDate(v.published_at)) : '—'),
      h('td', null, v.digest ? [h('code', { title: v.digest }, v.digest.replace(/^sha256:/, '').slice(0, 12) + '…'), ' ',
        (() => { const b = h('button', { type: 'button', class: 'small secondary', 'aria-label': 'Copy the digest of v' + v.version, onclick: () => copyText(v.digest, b) }, 'Copy'); return b; })()] : '—'),
      h('td', { class: 'num' }, fmtBytes(v.size)),
      h('td', { class: 'dls' }, v.digest ? h('a', { href: '/blobs/' + v.digest, download: versionFile(key, v, false), class: 'dl-version', 'aria-label': 'Download v' + v.version + ' .tar' }, '.tar') : null,
        v.so_digest ? [' ', h('a', { href: '/blobs/' + v.so_digest, download: versionFile(key, v, true), 'aria-label': 'Download v' + v.version + ' .so' }, '.so')] : null)));
    return h('div', { class: 'table-wrap versions' }, h('table', { id: 'versions-table' },
      h('caption', { class: 'sr-only' }, 'Published versions, newest first, with downloads by digest'),
      h('thead', null, h('tr', null, ['Version', 'Tuned', 'Aliases', 'Latency', 'Published', 'Digest', 'Size', 'Download'].map((t, i) =>
        h('th', { scope: 'col', class: [0, 3, 6].includes(i) ? 'num' : null }, t)))),
      h('tbody', null, rows)));
  }

  // a short label for a task: "#3 conv2d 64→16 55² k1"
  function taskLabel(t) {
    const w = String(t.workload || '');
    const m = /\bc(\d+) h(\d+) w(\d+) oc(\d+).*?\bk(\d+)x(\d+) s(\d+)x/.exec(w);
    const tmpl = String(t.template || 'task').replace(/_nchwc$/, '').replace(/^conv2d$/, 'conv').replace(/^depthwise$/, 'dw');
    const n = t.idx != null ? t.idx : t.task;
    if (m) return '#' + n + ' ' + tmpl + ' ' + m[1] + '→' + m[4] + ' ' + m[2] + (m[2] === m[3] ? '²' : '×' + m[3]) + ' k' + m[5] + (m[7] !== '1' ? ' s' + m[7] : '');
    return '#' + n + ' ' + tmpl;
  }
  // best-so-far of a task after x trials, from its thinned curve (undefined before its first valid trial)
  function curveAt(curve, x) {
    let v;
    for (const [tr, g] of curve) { if (tr <= x) v = g; else break; }
    return v;
  }
  const TOP_N = 6;

  function renderTuning(key) {
    const card = $('#tuning-body');
    if (!card) return;
    const net = parseKey(key).net;
    const t = detailData.tuning;
    const running = (data.jobs || []).find(j => j.state === 'running' && keyOf(j) === key);
    const head = h('div', { class: 'card-head' }, h('h3', null, 'Tuning curve'),
      running ? h('span', { class: 'live small' }, h('a', { href: hrefFor({ view: 'jobs', model: '' }) }, 'job ' + running.id), ' is running; the curve refreshes every 5 s') : null);
    if (t === null) { card.replaceChildren(head, h('p', { class: 'muted' }, 'Loading the tuning records…')); return; }
    if (t instanceof Error) {
      card.replaceChildren(head, h('p', { class: t.status === 501 ? 'empty' : 'error', id: 'tuning-empty' },
        t.status === 501 ? t.message : 'Could not load the tuning records: ' + t.message));
      return;
    }
    const all = (Array.isArray(t.tasks) ? t.tasks : []).map((x, i) => Object.assign({ idx: i + 1 }, x));
    const tasks = all.filter(x => Array.isArray(x.curve) && x.curve.length);
    if (!tasks.length) {
      const why = notTunableHere(key);
      if (why) {
        card.replaceChildren(head, h('div', { class: 'empty', id: 'tuning-empty' },
          h('p', null, h('strong', null, 'Not tuned'), ' — no tuning records for ' + net + ' on this target. ' + why)));
        return;
      }
      card.replaceChildren(head, h('div', { class: 'empty', id: 'tuning-empty' },
        h('p', null, h('strong', null, 'Not tuned yet'), ' — no tuning records for ' + net + ' on this target. POST ', h('code', null, modelUrl(key, 'tune')), ' (with the token) or request ', h('code', null, '?tuned=1'), '.'),
        copyRow('Tune it', 'curl -f -X POST -H "Authorization: Bearer $TUNEHUB_TOKEN" -d \'{"trials":64}\' ' + shq(ORIGIN + modelUrl(key, 'tune')), 'curl-tune'),
        copyRow('Or wait for a tuned build', 'curl -f -o ' + fileBase(key) + '_tuned.tar ' + shq(ORIGIN + modelUrl(key, '', { tuned: 1, wait: 600 })), 'curl-tuned')));
      return;
    }
    const work = x => (x.gflop || 0) * (x.count || 1);
    const ranked = tasks.slice().sort((a, b) => work(b) - work(a));
    const top = new Set(ranked.slice(0, TOP_N).map(x => x.task));
    const xmax = Math.max(1, ...tasks.map(x => Math.max(x.trials || 0, x.curve[x.curve.length - 1][0])));
    // whole-network estimate after x trials per task: total work over the summed time of each task at its best so far
    const xs = [...new Set(tasks.flatMap(x => x.curve.map(p => p[0])))].sort((a, b) => a - b);
    const total = [];
    for (const x of xs) {
      let wsum = 0, tsum = 0, ok = true;
      for (const k of tasks) {
        const g = curveAt(k.curve, x);
        if (!(g > 0)) { ok = false; break; }
        wsum += work(k); tsum += work(k) / g;
      }
      if (ok && tsum > 0) total.push([x, wsum / tsum]);
    }
    if (total.length) total.push([xmax, total[total.length - 1][1]]);
    const ymaxRaw = Math.max(...tasks.map(x => x.best_gflops || 0), ...total.map(p => p[1]));
    const ny = niceTicks(0, ymaxRaw * 1.05, 5);
    const nx = niceTicks(0, xmax, Math.min(8, xmax));
    const best = ranked[0];
    const fin = total.length ? total[total.length - 1][1] : null;
    const desc = tasks.length + ' tuned tasks of ' + all.length + ', ' + (t.trials || 0) + ' trials in all. Best task ' + taskLabel(best) + ' at ' +
      fmtNum(best.best_gflops) + ' GFLOPS. ' + (fin ? 'Whole network estimate ' + fmtNum(fin) + ' GFLOPS.' : '') + ' The data table below has every task.';
    // trials count from 1: the axis starts there, so a short run still fills the width
    const xt = nx.ticks.filter(v => v >= 1 && (v === 1 || v - 1 >= nx.step / 2));
    if (xt[0] !== 1) xt.unshift(1);
    const f = chartFrame({ id: 'tuning-chart', title: 'Best GFLOPS against trials, per task', desc,
      x0: 1, x1: Math.max(2, nx.max), y0: 0, y1: ny.max, yticks: ny.ticks, xticks: xt.map(v => ({ v, label: String(v) })),
      xLabel: 'trials (per task)', yLabel: 'best GFLOPS' });
    const stepPoints = (curve, end) => {
      const out = [];
      curve.forEach(([x, y], i) => {
        if (i) out.push([x, curve[i - 1][1]]);
        out.push([x, y]);
      });
      if (end > curve[curve.length - 1][0]) out.push([end, curve[curve.length - 1][1]]);
      const xy = out.map(([x, y]) => f.X(x).toFixed(1) + ',' + f.Y(y).toFixed(1));
      return xy.filter((p, i) => i === 0 || p !== xy[i - 1]).join(' ');
    };
    const colour = new Map(ranked.slice(0, TOP_N).map((x, i) => [x.task, 'c' + i]));
    // the others first (underneath), then the top tasks, then the total on top
    for (const k of ranked.slice().reverse()) {
      const cls = 'series ' + (top.has(k.task) ? colour.get(k.task) : 'other');
      f.layer.append(s('polyline', { points: stepPoints(k.curve, k.trials || 0), class: cls, 'data-task': k.task, fill: 'none' },
        s('title', null, taskLabel(k) + ': best ' + fmtNum(k.best_gflops) + ' GFLOPS after ' + k.trials + ' trials')));
      if (k.curve.length === 1 && !(k.trials > k.curve[0][0])) // a single point: draw a dot so it shows
        f.layer.append(s('circle', { cx: f.X(k.curve[0][0]), cy: f.Y(k.curve[0][1]), r: 3, class: 'dot ' + cls.replace('series ', '') }));
    }
    if (total.length) {
      f.layer.append(s('polyline', { points: stepPoints(total, xmax), class: 'total', fill: 'none' },
        s('title', null, 'Whole network (estimate): ' + fmtNum(fin) + ' GFLOPS')));
    }
    if (detailData.focus != null) f.svg.setAttribute('data-focus', detailData.focus);
    const legendBtn = (task, cls, label) => h('button', { type: 'button', class: 'legend-item', 'data-series': task, 'data-fid': 'legend:' + task, 'aria-pressed': String(detailData.focus === task),
      onclick: () => {
        detailData.focus = detailData.focus === task ? null : task;
        const svg = $('#tuning-chart');
        for (const el of svg.querySelectorAll('.hl')) el.classList.remove('hl');
        if (detailData.focus === null) svg.removeAttribute('data-focus');
        else {
          svg.setAttribute('data-focus', task);
          for (const el of svg.querySelectorAll(task === 'total' ? '.total' : task === 'other' ? '.other' : '[data-task="' + task + '"]')) el.classList.add('hl');
        }
        for (const b of card.querySelectorAll('.legend-item')) b.setAttribute('aria-pressed', String(String(detailData.focus) === b.dataset.series));
      } }, h('i', { class: 'sw ' + cls, 'aria-hidden': 'true' }), label);
    const legend = h('div', { class: 'legend small', role: 'group', 'aria-label': 'Highlight a line' },
      ranked.slice(0, TOP_N).map(k => legendBtn(k.task, colour.get(k.task), taskLabel(k) + ' · ' + fmtNum(k.best_gflops))),
      ranked.length > TOP_N ? legendBtn('other', 'other', (ranked.length - TOP_N) + ' smaller tasks') : null,
      total.length ? legendBtn('total', 'total', 'whole network (est.) · ' + fmtNum(fin)) : null);
    if (detailData.focus != null) for (const el of f.svg.querySelectorAll(detailData.focus === 'total' ? '.total' : detailData.focus === 'other' ? '.other' : '[data-task="' + detailData.focus + '"]')) el.classList.add('hl');
    const table = h('details', { class: 'data-table', open: detailData.tableOpen, ontoggle: (e) => { detailData.tableOpen = e.target.open; } },
      h('summary', { 'data-fid': 'tuning-table' }, 'Data table (' + all.length + ' tasks)'),
      h('div', { class: 'table-wrap' }, h('table', { id: 'tuning-table' },
        h('caption', { class: 'sr-only' }, 'Tuning records per task'),
        h('thead', null, h('tr', null, ['Task', 'Workload', 'Calls', 'GFLOP', 'Trials', 'Valid', 'Best GFLOPS'].map((x, i) =>
          h('th', { scope: 'col', class: i >= 2 ? 'num' : null }, x)))),
        h('tbody', null, all.map(k => h('tr', { 'data-task': k.task },
          h('td', null, taskLabel(k)), h('td', { class: 'wl' }, h('code', null, k.workload)),
          h('td', { class: 'num' }, k.count), h('td', { class: 'num' }, typeof k.gflop === 'number' ? k.gflop.toFixed(4) : '—'),
          h('td', { class: 'num' }, k.trials), h('td', { class: 'num' }, k.valid),
          h('td', { class: 'num' }, k.valid ? fmtNum(k.best_gflops) : '—')))))));
    keepFocus(() => card.replaceChildren(head,
      h('p', { class: 'muted small' }, (t.trials || 0) + ' trials over ' + tasks.length + ' of ' + all.length + ' tasks' +
        (fin ? '; whole network ≈ ' + fmtNum(fin) + ' GFLOPS at the best configs (time-weighted)' : '') + '. Lines step up when a trial beats the best so far.'),
      h('figure', { class: 'fig' }, f.svg), legend, table));
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
  const isActive = j => j.state === 'queued' || j.state === 'running';

  // what each job published: from its SSE "published" events and from the versions route (which names the job)
  const jobEvents = new Map();      // job id -> [{kind, version, tuned, digest, at}]
  const keyVersions = new Map();    // model key -> {version: newest catalog version seen, list: [...]}
  function addPublished(id, ev) {
    const list = jobEvents.get(String(id)) || [];
    if (!list.some(x => x.version === ev.version)) { list.push(ev); list.sort((a, b) => a.version - b.version); }
    jobEvents.set(String(id), list);
  }
  async function refreshJobVersions() {
    if (!data.jobs || !data.models) return;
    const keys = new Set(data.jobs.slice(0, 20).map(keyOf));
    const fetches = [];
    for (const key of keys) {
      const m = data.models.find(x => keyOf(x) === key);
      if (!m || m.version == null) continue;
      const kv = keyVersions.get(key);
      if (kv && kv.version === m.version) continue;
      keyVersions.set(key, { version: m.version, list: kv ? kv.list : [] });
      fetches.push(api(modelUrl(key, 'versions')).then(r => {
        const vs = r.body && Array.isArray(r.body.versions) ? r.body.versions : [];
        keyVersions.get(key).list = vs;
        for (const v of vs) if (v.job != null) addPublished(v.job, { version: v.version, tuned: !!v.tuned, digest: v.digest, at: v.published_at });
      }, () => { keyVersions.delete(key); }));
    }
    if (fetches.length) { await Promise.all(fetches); renderJobsSoon(); }
  }

  /* live updates: one EventSource per running job in view (at most MAX_STREAMS), polling /jobs as the fallback */
  const MAX_STREAMS = 3;
  const streams = new Map();        // job id -> EventSource
  const sse = { state: 'unknown', events: 0, failures: 0 }; // state: unknown | yes | no (the server has no /events)
  const sseCount = new Map();       // job id -> events received
  const sseFailed = new Map();      // job id -> when its stream last failed (refused, cap reached): poll it for a while
  document.body.dataset.sse = sse.state;
  function jobsInView() {
    const st = readState();
    if (!data.jobs) return [];
    let js = [];
    if (st.view === 'jobs') js = data.jobs.filter(isActive);
    else if (st.view === 'build' && buildJobId != null) js = data.jobs.filter(j => String(j.id) === String(buildJobId) && isActive(j));
    else if (st.view === 'catalog' && st.model) js = data.jobs.filter(j => isActive(j) && keyOf(j) === st.model);
    return js.filter(j => j.state === 'running' || streams.has(String(j.id))).slice(0, MAX_STREAMS);
  }
  function syncStreams() {
    if (typeof EventSource !== 'function' || sse.state === 'no') return;
    const want = new Set(jobsInView().map(j => String(j.id)));
    for (const [id, es] of streams) if (!want.has(id)) { es.close(); streams.delete(id); }
    for (const id of want) if (!streams.has(id) && !(Date.now() - (sseFailed.get(id) || 0) < 15000)) openStream(id);
  }
  function jobById(id) { return data.jobs && data.jobs.find(j => String(j.id) === String(id)); }
  function openStream(id) {
    const es = new EventSource('/jobs/' + enc(id) + '/events');
    let opened = false;
    streams.set(id, es);
    const got = (kind, fn) => es.addEventListener(kind, (e) => {
      let d = null;
      try { d = JSON.parse(e.data); } catch (err) { return; }
      sse.events++;
      sseCount.set(id, (sseCount.get(id) || 0) + 1);
      document.body.dataset.sseEvents = sse.events;
      const j = jobById(id);
      fn(d, j);
      renderJobsSoon();
    });
    es.onopen = () => {
      opened = true;
      if (sse.state !== 'yes') { sse.state = 'yes'; document.body.dataset.sse = 'yes'; renderJobsSoon(); }
    };
    got('progress', (d, j) => { if (j && d && typeof d === 'object') { j.progress = d; if (j.state === 'queued') j.state = 'running'; } });
    got('stage', (d, j) => { if (j && d && d.stage) { j.stage = d.stage; if (j.state === 'queued') j.state = 'running'; } });
    got('published', (d) => {
      if (d && typeof d.version === 'number') addPublished(id, { version: d.version, tuned: !!d.tuned, digest: d.digest, at: new Date().toISOString() });
      loadModels().then(() => render());
    });
    got('done', (d, j) => {
      if (j && d && d.state) { j.state = d.state; if (d.error) j.error = d.error; }
      es.close(); streams.delete(id);
      Promise.all([loadJobs(), loadModels()]).then(() => render());
    });
    es.onerror = () => {
      if (es.readyState !== EventSource.CLOSED) return; // EventSource reconnects by itself (with Last-Event-ID)
      streams.delete(id);
      sseFailed.set(id, Date.now());
      if (!opened && sse.state === 'unknown') {
        // the first stream never opened: this server has no /jobs/{id}/events (404); poll instead
        sse.state = 'no';
        document.body.dataset.sse = 'no';
        for (const [, other] of streams) other.close();
        streams.clear();
        renderJobsSoon();
      }
    };
  }
  let renderPending = null;
  function renderJobsSoon() {
    if (renderPending) return;
    renderPending = setTimeout(() => { renderPending = null; renderJobs(); }, 250);
  }

  const openTasks = new Set(); // finished jobs whose task list the user opened
  function taskList(j, p) {
    const tasks = p.tasks;
    const done = tasks.filter(t => t.state === 'done').length;
    const items = tasks.map((t, i) => {
      const tf = t.budget > 0 ? Math.min(1, (t.trials || 0) / t.budget) : null;
      const label = taskLabel(Object.assign({ idx: i + 1 }, t));
      const running = p.task === i && isActive(j);
      return h('li', { class: 'task' + (running ? ' current' : ''), 'data-task': i + 1, 'data-state': t.state || '' },
        h('div', { class: 'task-head' },
          h('span', { class: 'task-name', title: t.workload || '' }, label),
          t.state ? h('span', { class: 'task-state ' + t.state }, t.state) : null),
        tf !== null ? h('div', { class: 'bar small', role: 'progressbar', 'aria-label': label + ' trials', 'aria-valuemin': 0, 'aria-valuemax': t.budget, 'aria-valuenow': t.trials || 0 },
          h('span', { style: 'width:' + Math.round(tf * 100) + '%' })) : null,
        h('div', { class: 'muted' }, (t.trials != null ? t.trials : '?') + '/' + (t.budget != null ? t.budget : '?') + ' trials · ',
          typeof t.best_gflops === 'number' && t.best_gflops > 0 ? 'best ' + fmtNum(t.best_gflops) + ' GFLOPS'
            : t.state === 'pending' ? (t.trials ? 'stored; waiting' : 'waiting') : 'no valid trial yet',
          typeof t.current_gflops === 'number' && running && t.current_gflops > 0 ? ' · last ' + fmtNum(t.current_gflops) : null,
          t.errors ? ' · ' + t.errors + ' error' + (t.errors === 1 ? '' : 's') : null));
    });
    const ul = h('ul', { class: 'tasks', 'aria-label': 'Tasks of job ' + j.id }, items);
    if (isActive(j)) return ul;
    const det = h('details', { class: 'task-details', open: openTasks.has(String(j.id)),
      ontoggle: (e) => { if (e.target.open) openTasks.add(String(j.id)); else openTasks.delete(String(j.id)); } },
    h('summary', { 'data-fid': 'tasks:' + j.id }, tasks.length + ' tasks (' + done + ' done)'), ul);
    return det;
  }

  // a running job's elapsed time from its start (the listed figure is as old as the last poll)
  function elapsedOf(j) {
    const t0 = isActive(j) && j.started_at ? Date.parse(j.started_at) : NaN;
    if (!isNaN(t0)) return Math.max(0, (Date.now() - t0) / 1000);
    return typeof j.elapsed_s === 'number' ? j.elapsed_s : null;
  }

  function jobItem(j) {
    const p = j.progress || {};
    const frac = jobFraction(j);
    const active = isActive(j);
    const stages = (isActive(j) ? [j.stage, p.phase, p.stage, p.build && p.build.stage] : [j.stage]).filter((v, i, a) => v && a.indexOf(v) === i);
    const stage = stages.join(' › ');
    const eta = fmtDur(p.eta_s);
    const modelKey = keyOf(j);
    const title = j.network && j.framework && j.batch != null ? keyTitle(modelKey) : '';
    const pct = frac === null ? null : Math.round(frac * 100);
    const live = streams.has(String(j.id));
    const pubs = jobEvents.get(String(j.id)) || [];
    const tuning = typeof p.trials_total === 'number' && p.trials_total > 0;
    const li = h('li', { class: 'job', 'data-job': j.id, 'data-state': j.state, 'data-sse-events': sseCount.get(String(j.id)) || 0, 'data-published': pubs.map(x => x.version).join(',') },
      h('div', { class: 'job-head' },
        h('strong', null, title || ('job ' + j.id)),
        h('span', { class: 'pill ' + j.state }, j.state),
        j.kind ? h('span', { class: 'muted small' }, j.kind) : null,
        live ? h('span', { class: 'live small', title: 'live updates over Server-Sent Events' }, 'live') : null,
        h('span', { class: 'grow muted small' }, 'job ' + j.id),
        active ? h('button', { type: 'button', class: 'small danger', 'data-fid': 'cancel:' + j.id, 'aria-label': 'Cancel job ' + j.id, onclick: () => cancelJob(j) }, 'Cancel') : null),
      h('div', { class: 'small' },
        stage ? h('span', { class: 'stage' }, 'Stage: ' + stage) : null,
        active && p.done != null && p.total != null ? ' · ' + p.done + '/' + p.total : null,
        active && p.task != null && p.ntasks ? ' · task ' + Math.min(p.task + 1, p.ntasks) + '/' + p.ntasks : null,
        tuning ? ' · ' + (p.trials || 0) + '/' + p.trials_total + ' trials' : null,
        pct !== null ? ' · ' + pct + '%' : null,
        eta && active ? h('span', { class: 'eta' }, ' · ETA ' + eta) : null,
        elapsedOf(j) !== null ? ' · ' + fmtDur(elapsedOf(j)) + ' elapsed' : null,
        j.state === 'succeeded' && j.framework ? [' · ', h('a', { href: hrefFor({ view: 'catalog', model: modelKey }) }, 'open model')] : null),
      pct !== null ? h('div', { class: 'bar', role: 'progressbar', 'aria-label': 'Progress of job ' + j.id, 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': pct },
        h('span', { style: 'width:' + pct + '%' })) : null,
      active && p.build && typeof p.build.fraction === 'number' && tuning ? h('div', { class: 'small build-phase' },
        (p.phase === 'rebuild' ? 'Rebuilding with the tuned configs: ' : 'Quick build: ') + (p.build.stage || '') +
        (p.build.total ? ' ' + p.build.done + '/' + p.build.total : ''),
        h('div', { class: 'bar small', role: 'progressbar', 'aria-label': 'Build of job ' + j.id, 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': Math.round(p.build.fraction * 100) },
          h('span', { style: 'width:' + Math.round(p.build.fraction * 100) + '%' }))) : null,
      pubs.length ? h('ol', { class: 'events small', 'aria-label': 'Published by job ' + j.id }, pubs.map(x => h('li', { 'data-version': x.version },
        'Published ', h('a', { href: hrefFor({ view: 'catalog', model: modelKey }) }, 'v' + x.version), ' ',
        h('span', { class: 'pill ' + (x.tuned ? 'tuned' : 'untuned') }, x.tuned ? 'tuned' : 'untuned'),
        x.at ? [' ', h('time', { datetime: x.at, class: 'muted' }, fmtDate(x.at))] : null))) : null,
      Array.isArray(p.tasks) && p.tasks.length ? taskList(j, p) : null,
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
    syncStreams();
    const active = data.jobs.filter(isActive);
    const finished = data.jobs.filter(j => !isActive(j)).slice(0, 20);
    keepFocus(() => {
      act.replaceChildren(...active.map(jobItem));
      done.replaceChildren(...finished.map(jobItem));
    });
    $('#jobs-active-empty').hidden = active.length !== 0;
    $('#jobs-done-empty').hidden = finished.length !== 0;
    badge.hidden = active.length === 0;
    badge.textContent = active.length;
    badge.setAttribute('aria-label', active.length + ' active');
    const mode = $('#jobs-mode');
    mode.textContent = streams.size ? 'Live (Server-Sent Events) for ' + streams.size + ' running job' + (streams.size === 1 ? '' : 's') + '; the list refreshes every ' + (LIST_MS_SSE / 1000) + ' s.'
      : sse.state === 'no' ? 'Updated every 2 s (this server has no event stream).' : 'Updated every 2 s.';
    mode.dataset.mode = streams.size ? 'sse' : 'poll';
    if (!flashUntil || Date.now() > flashUntil) {
      const up = $('#jobs-updated');
      up.className = '';
      up.textContent = data.jobsErr ? 'Last refresh failed: ' + data.jobsErr.message : 'Last update ' + new Date().toLocaleTimeString();
    }
    renderBuildJob();
  }

  /* ---------- token, cancel, tune ---------- */
  const dialog = $('#token-dialog');
  function askToken(what) {
    $('#token-h').textContent = what || 'Cancel job';
    $('#token-ok').textContent = what || 'Cancel job';
    return new Promise(resolve => {
      const input = $('#token-input');
      input.value = sessionStorage.getItem('tunehub.token') || '';
      if (typeof dialog.showModal !== 'function') { resolve(window.prompt('Bearer token') || null); return; }
      const done = (v) => { dialog.close(); resolve(v); };
      $('#token-form').onsubmit = (e) => { e.preventDefault(); done(input.value.trim() || null); };
      $('#token-cancel').onclick = () => done(null);
      dialog.oncancel = () => resolve(null);
      $('#token-cancel').textContent = what ? 'Not now' : 'Keep running';
      dialog.showModal();
      input.focus();
    });
  }
  // POST .../tune with the token (asked once per tab); the server's answer is shown as it is
  async function tuneModel(key, form) {
    const out = $('#tune-result', form);
    const trialsIn = $('input[name="trials"]', form);
    const v = trialsIn.value.trim();
    if (!/^\d+$/.test(v) || +v < 1) {
      trialsIn.setAttribute('aria-invalid', 'true');
      out.replaceChildren(h('span', { class: 'field-error' }, 'Enter a whole number of trials per task (1 or more).'));
      trialsIn.focus();
      return;
    }
    trialsIn.setAttribute('aria-invalid', 'false');
    out.replaceChildren();
    const path = modelUrl(key, 'tune');
    let token = sessionStorage.getItem('tunehub.token');
    if (!token) token = await askToken('Start tuning');
    if (!token) return;
    const btn = $('button[type="submit"]', form);
    btn.disabled = true;
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        try {
          const r = await api(path, { method: 'POST', body: JSON.stringify({ trials: +v }),
            headers: { Authorization: 'Bearer ' + token, Accept: 'application/json', 'Content-Type': 'application/json' } });
          sessionStorage.setItem('tunehub.token', token);
          const job = r.body && r.body.job || {};
          out.replaceChildren(h('span', { class: 'ok-text', id: 'tune-ok' }, (r.body && r.body.queued === false ? 'Already queued: ' : 'Queued: '),
            h('a', { href: hrefFor({ view: 'jobs', model: '' }) }, 'job ' + job.id), '. The curve follows it live.'));
          await loadJobs(); render();
          return;
        } catch (e) {
          if ((e.status === 401 || e.status === 403) && attempt === 0) {
            sessionStorage.removeItem('tunehub.token');
            token = await askToken('Start tuning');
            if (!token) return;
            continue;
          }
          out.replaceChildren(h('span', { class: 'field-error', id: 'tune-error', role: 'alert' }, e.message));
          return;
        }
      }
    } finally { btn.disabled = false; }
  }
  function tuneForm(key) {
    // another target: the form still asks (POST .../tune?target=), and the server answers why it queues nothing
    const cross = parseKey(key).target;
    const form = h('form', { class: 'tune-form', id: 'tune-form', novalidate: true, 'aria-label': 'Tune this model' },
      h('label', { for: 'tune-trials' }, 'Trials per task'),
      h('input', { id: 'tune-trials', name: 'trials', type: 'number', min: 1, step: 1, value: 64, inputmode: 'numeric' }),
      h('button', { type: 'submit', class: 'small' }, 'Tune'),
      h('span', { class: 'muted small', id: 'tune-hint' }, cross ? 'This server does not measure ' + cross + ' (above); it answers a request with why.'
        : 'Needs the server\'s token. Tasks resume from their stored trials; the tuned build is published as a new version.'),
      h('div', { id: 'tune-result', class: 'small', 'aria-live': 'polite' }));
    form.addEventListener('submit', (e) => { e.preventDefault(); tuneModel(key, form); });
    return form;
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
  let flashUntil = 0;
  function flash(msg, bad) {
    flashUntil = Date.now() + 6000;
    const r = $('#jobs-updated');
    r.textContent = msg;
    r.className = bad ? 'field-error' : '';
  }

  /* ---------- networks: the list, upload, delete ---------- */
  const NAME_RE = /^[a-z0-9][a-z0-9._-]{0,62}$/;
  function fmtCount(n) {
    if (typeof n !== 'number') return '—';
    return n >= 1e6 ? (n / 1e6).toFixed(2) + 'M' : n >= 1e4 ? (n / 1e3).toFixed(1) + 'k' : String(n);
  }
  let networksSig = '';
  async function reloadNetworks() {
    try { data.networks = (await api('/networks')).body.networks || []; } catch (e) { /* keep the last list */ }
    networksSig = '';
    fillNetworks();
    render();
  }
  function renderNetworks() {
    const body = $('#networks-body');
    const status = $('#networks-status');
    if (!data.networks) { body.replaceChildren(); status.textContent = 'Loading the networks…'; return; }
    const nets = data.networks;
    const up = nets.filter(n => n.source === 'onnx').length;
    status.textContent = nets.length + ' networks: ' + (nets.length - up) + ' from the zoo, ' + up + ' uploaded.';
    const sig = JSON.stringify(nets);
    if (sig === networksSig) return;
    networksSig = sig;
    keepFocus(() => body.replaceChildren(...nets.map(n => {
      const onnx = n.source === 'onnx';
      const details = onnx
        ? ['version ' + n.version, ' · ', h('code', { class: 'digest', title: n.digest }, String(n.digest || '').slice(0, 19) + '…'),
          typeof n.size === 'number' ? ' · ' + fmtBytes(n.size) : null, n.shapes ? [' · shapes ', h('code', null, n.shapes)] : null,
          Array.isArray(n.ops) && n.ops.length ? h('div', { class: 'muted small ops' }, n.ops.map(o => o.op_type + ' ×' + o.count).join(', ')) : null]
        : [n.description || ''];
      return h('tr', { 'data-name': n.name, 'data-source': n.source || 'zoo' },
        h('td', { 'data-label': 'Name' }, h('strong', null, n.name)),
        h('td', { 'data-label': 'Source' }, h('span', { class: 'pill ' + (onnx ? 'onnx' : 'untuned') }, onnx ? 'uploaded (ONNX)' : 'zoo')),
        h('td', { class: 'io', 'data-label': 'Inputs' }, netInputs(n) || '—'),
        h('td', { class: 'num', 'data-label': 'GFLOPs' }, typeof n.flops === 'number' ? String(+(n.flops / 1e9).toPrecision(3)) : '—'),
        h('td', { class: 'num', 'data-label': 'Params' }, fmtCount(n.params)),
        h('td', { class: 'details', 'data-label': 'Details' }, details),
        h('td', { 'data-label': 'Actions' }, onnx ? h('button', { type: 'button', class: 'small secondary net-delete', 'data-fid': 'del:' + n.name,
          'aria-label': 'Delete network ' + n.name, onclick: () => deleteNetwork(n.name) }, 'Delete') : null));
    })));
  }
  // a mutation with the token (asked once per tab, asked again once after a 401)
  async function withToken(what, call) {
    let token = sessionStorage.getItem('tunehub.token');
    if (!token) token = await askToken(what);
    if (!token) return null;
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await call(token);
        sessionStorage.setItem('tunehub.token', token);
        return r;
      } catch (e) {
        if ((e.status === 401 || e.status === 403) && attempt === 0) {
          sessionStorage.removeItem('tunehub.token');
          token = await askToken(what);
          if (!token) return null;
          continue;
        }
        throw e;
      }
    }
  }
  async function uploadNetwork(ev) {
    ev.preventDefault();
    const out = $('#upload-result');
    const fileIn = $('#u-file'), nameIn = $('#u-name');
    const file = fileIn.files && fileIn.files[0];
    const name = nameIn.value.trim(), shapes = $('#u-shapes').value.trim();
    const fileMsg = file ? '' : 'Choose an ONNX file.';
    const zoo = data.networks && data.networks.some(n => n.name === name && n.source !== 'onnx');
    const nameMsg = !name ? 'Enter a name.' : !NAME_RE.test(name) ? 'Use 1–63 lowercase letters, digits, ".", "_" or "-", starting with a letter or digit.'
      : zoo ? '"' + name + '" is a zoo network; choose another name.' : '';
    $('#u-file-err').textContent = fileMsg;
    $('#u-name-err').textContent = nameMsg;
    fileIn.setAttribute('aria-invalid', fileMsg ? 'true' : 'false');
    nameIn.setAttribute('aria-invalid', nameMsg ? 'true' : 'false');
    if (fileMsg || nameMsg) { (fileMsg ? fileIn : nameIn).focus(); return; }
    const path = '/networks/' + enc(name) + (shapes ? '?shapes=' + enc(shapes) : '');
    const btn = $('#u-submit');
    btn.disabled = true;
    out.replaceChildren(h('p', { class: 'muted' }, 'Uploading ' + file.name + ' (' + fmtBytes(file.size) + ') and checking it…'));
    try {
      const r = await withToken('Upload network', (token) => api(path, { method: 'PUT', body: file,
        headers: { Authorization: 'Bearer ' + token, Accept: 'application/json', 'Content-Type': 'application/octet-stream' } }));
      if (!r) { out.replaceChildren(); return; }
      const n = r.body || {};
      const what = r.status === 200 ? 'Unchanged (the same file): ' : n.version > 1 ? 'Uploaded as version ' + n.version + ': ' : 'Uploaded: ';
      out.replaceChildren(h('div', { class: 'ok-box', id: 'upload-ok' }, what, h('strong', null, n.name), ' — ',
        [netInputs(n), typeof n.flops === 'number' ? +(n.flops / 1e9).toPrecision(3) + ' GFLOPs' : null, fmtCount(n.params) + ' params',
          Array.isArray(n.ops) ? n.ops.length + ' op types' : null].filter(Boolean).join(' · '),
        '. ', h('a', { href: hrefFor({ view: 'build' }), id: 'upload-build', onclick: () => { setTimeout(() => { $('#b-network').value = n.name; networkHint(); }, 0); } }, 'Request a build'), '.'));
      fileIn.value = '';
      await reloadNetworks();
    } catch (e) {
      out.replaceChildren(h('div', { class: 'error-box', id: 'upload-error', role: 'alert' }, e.message));
    } finally {
      btn.disabled = false;
    }
  }
  async function deleteNetwork(name) {
    const out = $('#upload-result');
    try {
      const r = await withToken('Delete network', (token) => api('/networks/' + enc(name), { method: 'DELETE',
        headers: { Authorization: 'Bearer ' + token, Accept: 'application/json' } }));
      if (!r) return;
      out.replaceChildren(h('div', { class: 'ok-box', id: 'delete-ok' }, 'Deleted ' + name + ' (' + (r.body.deleted_versions || 0) + ' model versions).'));
      await reloadNetworks();
      await loadModels(); render();
    } catch (e) {
      out.replaceChildren(h('div', { class: 'error-box', id: 'delete-error', role: 'alert' }, 'Could not delete ' + name + ': ' + e.message));
    }
  }

  /* ---------- build form ---------- */
  // the frameworks of GET /targets into the catalog filter (after "any") and the build form (the first selected)
  function fillFrameworks() {
    const ts = allTargets();
    if (!ts.length) return;
    const f = $('#f-framework'), b = $('#b-framework'), fcur = f.value, bcur = b.value;
    f.replaceChildren(h('option', { value: '' }, 'any'), ...ts.map(t => h('option', { value: t.framework }, frameworkLabel(t))));
    b.replaceChildren(...ts.map(t => h('option', { value: t.framework }, frameworkLabel(t))));
    f.value = fcur;
    b.value = ts.some(t => t.framework === bcur) ? bcur : ts[0].framework;
  }
  function fillNetworks() {
    const sel = $('#b-network');
    const dl = $('#network-list');
    if (!data.networks) { sel.replaceChildren(h('option', { value: '' }, 'networks unavailable')); return; }
    const cur = sel.value;
    sel.replaceChildren(h('option', { value: '' }, 'choose a network…'),
      ...data.networks.map(n => h('option', { value: n.name }, n.name + (netInputs(n) ? ' — ' + netInputs(n) : '') + (typeof n.flops === 'number' ? ', ' + fmtGflop(n.flops) : ''))));
    if (cur) sel.value = cur;
    dl.replaceChildren(...data.networks.map(n => h('option', { value: n.name })));
    networkHint();
    const t = data.targets;
    if (t && Array.isArray(t.targets)) {
      for (const opt of $('#b-framework').options) {
        const tt = t.targets.find(x => x.framework === opt.value);
        if (tt && tt.available === false) opt.textContent = frameworkLabel(tt) + ' — unavailable here';
      }
      if (t.compiler_version) $('#compiler-version').textContent = 'compiler ' + t.compiler_version;
    }
    frameworkHint();
  }
  function frameworkHint() {
    const t = targetsOf($('#b-framework').value);
    $('#b-framework-hint').textContent = t ? (t.available === false ? 'Not available here' + (t.reason ? ': ' + t.reason : '') : (t.device || '') + (t.target ? ' — ' + t.target : '')) : '';
    fillBuildTargets();
  }
  // the build form's targets: the framework's valid_targets from GET /targets, native (the default) first
  function fillBuildTargets() {
    const sel = $('#b-target');
    const t = targetsOf($('#b-framework').value);
    const valid = t && Array.isArray(t.valid_targets) ? t.valid_targets : ['native'];
    const cur = sel.value || 'native';
    sel.replaceChildren(...valid.map(n => h('option', { value: n }, n === 'native' && t && t.native ? 'native (' + t.native + ')' : n)));
    sel.value = valid.includes(cur) ? cur : 'native';
    targetHint();
  }
  function targetHint() {
    const fw = $('#b-framework').value, name = $('#b-target').value;
    const cross = targetParam(fw, name);
    $('#b-target-hint').textContent = cross
      ? 'Cross-compiled for ' + cross + ': published untuned, since this server measures only its own target. ' +
        'A bundle refuses a CPU without the features it needs.'
      : 'This server\'s own target: a miss builds, and can be tuned, here.';
  }
  // a network's inputs as "input_ids int64[batch×128], ..." (GET /networks "inputs"; older servers: "input")
  function ioText(t) {
    return t && Array.isArray(t.shape) ? [t.name, (t.dtype || '') + '[' + t.shape.join('×') + ']'].filter(Boolean).join(' ') : '';
  }
  function netInputs(n) {
    if (n && Array.isArray(n.inputs) && n.inputs.length) return (n.inputs.length > 1 ? 'inputs ' : 'input ') + n.inputs.map(ioText).join(', ');
    return n && Array.isArray(n.input) ? 'input ' + n.input.join('×') : '';
  }
  function networkHint() {
    const n = data.networks && data.networks.find(x => x.name === $('#b-network').value);
    const outs = n && Array.isArray(n.outputs) && n.outputs.length ? (n.outputs.length > 1 ? 'outputs ' : 'output ') + n.outputs.map(ioText).join(', ') : null;
    $('#b-network-hint').textContent = n ? [n.description, netInputs(n) || null, outs, fmtGflop(n.flops),
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
    const key = normKey(fw + '/' + net + '/' + batch + '/' + $('#b-target').value);
    const path = modelUrl(key);
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
      if (head.status === 200) {
        out.replaceChildren(h('div', { class: 'ok-box' }, 'Already built: ',
          h('a', { href: hrefFor({ view: 'catalog', model: key }) }, keyTitle(key)), '.'));
        return;
      }
      let resp;
      try { resp = await fetch(path, { headers: { Prefer: 'respond-async', Accept: 'application/json' }, cache: 'no-store' }); }
      catch (e) { serverDown(); throw new HttpError(0, null, 'server unreachable'); }
      if (resp.status === 200) {
        // published between the HEAD and the GET: do not download it here
        try { await resp.body.cancel(); } catch (e) { /* ignore */ }
        out.replaceChildren(h('div', { class: 'ok-box' }, 'Already built: ',
          h('a', { href: hrefFor({ view: 'catalog', model: key }) }, keyTitle(key)), '.'));
        return;
      }
      let body = null;
      try { body = await resp.json(); } catch (e) { body = null; }
      if (resp.status === 202 || (resp.ok && body && body.job)) {
        const job = body && body.job || {};
        buildJobId = job.id != null ? job.id : (resp.headers.get('Location') || '').split('/').pop();
        out.replaceChildren(h('div', { class: 'ok-box', id: 'build-ok' }, (body && body.queued === false ? 'Already building' : 'Queued') +
          ': job ' + buildJobId + '. Its progress follows below; the model appears in the ',
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

  /* ---------- the fleet: GET /workers, on its own poll (the rest of the page does not wait for it) ---------- */
  const FLEET_MS = 5000;
  let fleetSig = '';
  async function loadWorkers() {
    try { data.workers = (await api('/workers')).body; data.workersErr = null; }
    catch (e) { data.workersErr = e; }
  }
  function workerState(w) {
    if (w.alive) return 'alive';
    return w.stopped_at ? 'stopped' : 'silent';
  }
  function workerJobs(w) {
    if (!w.jobs || !w.jobs.length) return '—';
    return w.jobs.map(j => h('div', null,
      h('a', { href: hrefFor({ view: 'jobs' }) }, 'job ' + j.id), ' ', j.kind + ' ' + keyOf(j),
      h('span', { class: 'muted small' }, ' (attempt ' + j.attempt + (j.stage ? ', ' + j.stage : '') +
        ', lease ' + (fmtDur(j.lease_left_s) || 'over') + ')')));
  }
  function renderWorkers() {
    const sec = $('#workers-section');
    const doc = data.workers;
    const ws = doc && Array.isArray(doc.workers) ? doc.workers : [];
    sec.hidden = ws.length === 0;
    if (!ws.length) return;
    const alive = ws.filter(w => w.alive).length;
    $('#workers-status').textContent = alive + ' of ' + ws.length + ' worker' + (ws.length === 1 ? '' : 's') + ' alive' +
      (doc.shared ? ' on the shared store' : ' (this daemon\'s own scheduler)') +
      (data.workersErr ? ' (last refresh failed: ' + data.workersErr.message + ')' : '');
    const sig = JSON.stringify(ws.map(w => [w.name, w.alive, w.stopped_at, w.targets, w.slots, w.jobs,
      Math.round(w.heartbeat_age_s || 0)]));
    if (sig === fleetSig) return;
    fleetSig = sig;
    keepFocus(() => $('#workers-body').replaceChildren(...ws.map(w => {
      const state = workerState(w);
      return h('tr', { class: w.alive ? null : 'gone', 'data-worker': w.name },
        h('td', { 'data-label': 'Worker' }, w.name),
        h('td', { 'data-label': 'Host' }, w.host || h('span', { class: 'muted', title: 'shown to token holders' }, 'hidden')),
        h('td', { 'data-label': 'Targets' }, (w.targets || []).length
          ? w.targets.map(t => h('code', { class: 'target' }, t)) : h('span', { class: 'muted' }, 'any job that needs no target')),
        h('td', { class: 'num', 'data-label': 'Slots' }, w.slots),
        h('td', { 'data-label': 'Running' }, workerJobs(w)),
        h('td', { 'data-label': 'Last heartbeat' }, w.heartbeat_at
          ? h('time', { datetime: w.heartbeat_at, title: fmtDate(w.heartbeat_at) }, (fmtDur(w.heartbeat_age_s) || '0 s') + ' ago') : '—'),
        h('td', { 'data-label': 'State' }, h('span', { class: 'pill ' + state }, state)));
    })));
  }
  async function fleetTick() {
    try { await loadWorkers(); renderWorkers(); }
    finally { setTimeout(fleetTick, FLEET_MS); }
  }
  fleetTick();

  /* ---------- wiring ---------- */
  document.querySelectorAll('#catalog thead th button').forEach(b => b.addEventListener('click', () => {
    const key = b.parentElement.dataset.key;
    const st = readState();
    writeState({ sort: key, dir: st.sort === key && st.dir === 'asc' ? 'desc' : 'asc' }, true);
  }));
  $('#f-framework').addEventListener('change', e => writeState({ framework: e.target.value }, true));
  $('#f-state').addEventListener('change', e => writeState({ state: e.target.value }, true));
  $('#f-network').addEventListener('input', e => writeState({ network: e.target.value.trim() }, true));
  $('#f-target').addEventListener('change', e => writeState({ target: e.target.value }, true));
  $('#f-clear').addEventListener('click', () => writeState({ framework: '', network: '', state: '', target: '' }, true));
  $('#filters').addEventListener('submit', e => e.preventDefault());
  $('#b-network').addEventListener('change', networkHint);
  $('#b-framework').addEventListener('change', frameworkHint);
  $('#b-target').addEventListener('change', targetHint);
  $('#b-batch').addEventListener('input', validateBatch);
  $('#build-form').addEventListener('submit', submitBuild);
  $('#upload-form').addEventListener('submit', uploadNetwork);
  window.addEventListener('hashchange', render);
  document.addEventListener('keydown', e => {
    if (e.key === 'Escape' && readState().model && !dialog.open) writeState({ model: '' });
  });

  let lastSig = '', lastJobsAt = 0, polls = 0;
  const LIST_MS_SSE = 10000; // with live streams the job list itself only needs an occasional refresh
  async function refreshAll() {
    await Promise.all([loadModels(), loadJobs()]);
    if (!data.networks) await loadStatic();
    render();
  }
  async function tick() {
    try {
      if (!streams.size || Date.now() - lastJobsAt >= LIST_MS_SSE || data.jobsErr) {
        await loadJobs();
        lastJobsAt = Date.now();
        document.body.dataset.polls = ++polls;
      }
      // a job changed state, or one is running (it may publish v1 and later v2): refresh the catalog too
      const sig = (data.jobs || []).map(j => j.id + ':' + j.state).join(',');
      if (sig !== lastSig || data.modelsErr || data.models === null || (data.jobs || []).some(isActive)) { lastSig = sig; await loadModels(); }
      if (!data.networks) await loadStatic();
      render();
      await refreshJobVersions();
    } finally {
      setTimeout(tick, POLL_MS);
    }
  }
  window.tunehub = { data, refreshAll, readState };
  (async () => {
    await Promise.all([loadStatic(), loadModels(), loadJobs()]);
    lastSig = (data.jobs || []).map(j => j.id + ':' + j.state).join(',');
    lastJobsAt = Date.now();
    render();
    refreshJobVersions();
    setTimeout(tick, POLL_MS);
  })();
})();
