#!/usr/bin/env node
/* End-to-end test of the catalog page (web/) against the real daemon, in headless Chromium.
   Exit 0 pass, 1 fail (a missing tunehub binary too: the same build makes it), 77 skip (no
   chromium, no node_modules).
   Env: TUNEHUB (the binary), E2E_ARTIFACTS (screenshots; default build/e2e-artifacts),
        CHROMIUM (default /usr/bin/chromium), E2E_HEADED=1 to watch. */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { freePort } = require('./util');
const crypto = require('crypto');
const { spawn, spawnSync } = require('child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const TUNEHUB = process.env.TUNEHUB || path.join(ROOT, 'build', 'server', 'tunehub');
const ARTIFACTS = path.resolve(process.env.E2E_ARTIFACTS || path.join(ROOT, 'build', 'e2e-artifacts'));
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

function skip(why) { console.log('SKIP: ' + why); process.exit(77); }
// The binary comes from the build that registered this test: missing means that build is broken,
// not that this host lacks an optional tool, so it fails (before the skips: no host hides it).
if (!fs.existsSync(TUNEHUB)) {
  console.log('FAIL: tunehub binary ' + TUNEHUB + ' is missing');
  process.exit(1);
}
if (!fs.existsSync(CHROMIUM)) skip(CHROMIUM + ' is missing (apt-get install -y chromium)');
let chromium;
try { ({ chromium } = require('playwright-core')); }
catch (e) { skip('playwright-core is not installed (cd tests/e2e && npm ci --ignore-scripts)'); }

const sha256 = (buf) => crypto.createHash('sha256').update(buf).digest('hex');
const sleep = (ms) => new Promise(r => setTimeout(r, ms));
const t0 = Date.now();
function log(...a) { console.log('[' + ((Date.now() - t0) / 1000).toFixed(1) + 's]', ...a); }
let failures = 0;
function check(cond, what) {
  if (cond) log('ok   ' + what);
  else { failures++; log('FAIL ' + what); }
  return cond;
}

let daemon = null, browser = null, tmp = null;
async function cleanup() {
  if (browser) { try { await browser.close(); } catch (e) { /* ignore */ } browser = null; }
  if (daemon && daemon.exitCode === null) {
    daemon.kill('SIGTERM');
    for (let i = 0; i < 50 && daemon.exitCode === null; i++) await sleep(100);
    if (daemon.exitCode === null) daemon.kill('SIGKILL');
  }
  if (tmp) { try { fs.rmSync(tmp, { recursive: true, force: true }); } catch (e) { /* ignore */ } }
}

// the latency-per-version chart and the version list show what GET .../versions reports (query: '?target=...')
async function checkVersions(page, base, key, where, query) {
  const api = await (await fetch(base + '/models/' + key + '/versions' + (query || ''))).json();
  const want = api.versions.map(v => String(v.version));
  await page.waitForFunction((n) => document.querySelectorAll('#latency-chart rect.vbar').length === n, want.length, { timeout: 10000 })
    .catch(() => null);
  const bars = await page.$$eval('#latency-chart rect.vbar', rs => rs.map(r => r.dataset.version + ':' + r.dataset.tuned));
  check(JSON.stringify(bars) === JSON.stringify(api.versions.map(v => v.version + ':' + (v.tuned ? 1 : 0))),
    where + ': the latency chart has one bar per version, tuned marked (' + bars.join(' ') + ')');
  // each measured version's spread of timing rounds is drawn as a whisker
  const spreads = await page.$$eval('#latency-chart path.spread', ps => ps.map(p => p.dataset.version));
  const measured = api.versions.filter(v => v.latency_spread_ms && typeof v.latency_spread_ms.min === 'number');
  check((query || measured.length > 0) && JSON.stringify(spreads) === JSON.stringify(measured.map(v => String(v.version))),
    where + ': the chart shows the rounds\' spread of every measured version (' + spreads.join(' ') + ')');
  const rows = await page.$$eval('#versions-table tbody tr', rs => rs.map(r => r.dataset.version));
  check(JSON.stringify(rows.slice().reverse()) === JSON.stringify(want), where + ': the version list shows v' + want.join(', v'));
  const hrefs = await page.$$eval('#versions-table a.dl-version', as => as.map(a => a.getAttribute('href')));
  check(api.versions.every(v => hrefs.includes('/blobs/' + v.digest)), where + ': each version downloads by digest');
  return api;
}

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tunehub-e2e-'));
  const dataDir = path.join(tmp, 'data');
  const tokenFile = path.join(tmp, 'token');
  const token = crypto.randomBytes(16).toString('hex');
  fs.writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
  // tuning records before the daemon starts, so the detail view has a tuning curve (one line per task);
  // 2 trials per task (36 measurements) keep the whole test near two minutes and still give each line 2 points
  const seed = spawnSync(TUNEHUB, ['tune', 'llvm', 'squeezenet_v1.1', '1', '--trials', '2', '--data', dataDir],
    { encoding: 'utf8', timeout: 300000 });
  if (!check(seed.status === 0, 'seed tuning records with the CLI (tune squeezenet_v1.1 --trials 2)'))
    throw new Error('tunehub tune failed: ' + (seed.error || '') + (seed.stderr || '').slice(-2000));
  const port = await freePort();
  const base = 'http://127.0.0.1:' + port;
  const logFile = path.join(ARTIFACTS, 'daemon.log');
  const out = fs.openSync(logFile, 'w');
  // --max-batch 8: batch 9 passes the page's 1..256 check and is refused by the server
  daemon = spawn(TUNEHUB, ['serve', '--listen', '127.0.0.1:' + port, '--data', dataDir, '--max-batch', '8', '--on-miss', 'build',
    '--token-file', tokenFile],
    { stdio: ['ignore', out, out] });
  daemon.on('exit', (c, s) => log('daemon exited', c, s));
  let up = false;
  for (let i = 0; i < 100 && !up; i++) {
    try { up = (await fetch(base + '/healthz')).ok; } catch (e) { await sleep(100); }
  }
  if (!up) throw new Error('the daemon did not answer /healthz; see ' + logFile);
  log('daemon up at ' + base);

  // a real build, finished before the page opens
  const key = 'llvm/squeezenet_v1.1/1';
  const q = await fetch(base + '/models/' + key, { headers: { Prefer: 'respond-async' } });
  check(q.status === 202 || q.status === 200, 'request a build of ' + key + ' (HTTP ' + q.status + ')');
  await q.arrayBuffer();
  const w = await fetch(base + '/models/' + key + '?wait=600');
  const direct = Buffer.from(await w.arrayBuffer());
  if (!check(w.status === 200, 'wait for the build (HTTP ' + w.status + ', ' + direct.length + ' bytes)'))
    throw new Error('the build of ' + key + ' did not finish: ' + direct.toString('utf8', 0, 300));
  const directSha = sha256(direct);
  const catalog = await (await fetch(base + '/models')).json();
  const row = catalog.models.find(m => m.framework + '/' + m.network + '/' + m.batch === key);
  check(row && row.digest === 'sha256:' + directSha, 'catalog digest equals the sha256 of the download');

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: !process.env.E2E_HEADED,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const ctx = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  const consoleErrors = [];
  page.on('console', m => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', e => consoleErrors.push(String(e)));
  const shot = async (name, p) => { const f = path.join(ARTIFACTS, name + '.png'); await (p || page).screenshot({ path: f, fullPage: true }); log('screenshot ' + f); };

  // 1. catalog lists the model
  await page.goto(base + '/');
  const rowSel = `#catalog-body tr[data-key="${key}"]`;
  await page.waitForSelector(rowSel, { timeout: 15000 });
  check(true, 'the catalog lists ' + key);
  check(/v1/.test(await page.textContent(rowSel)), 'the row shows version v1');
  await shot('01-catalog');

  // 2. filters narrow the list and live in the URL
  await page.fill('#f-network', 'resnet');
  await page.waitForFunction(() => document.querySelectorAll('#catalog-body tr').length === 0);
  check(/No model matches/.test(await page.textContent('#catalog-status')), 'a network filter with no match empties the list');
  check(/network=resnet/.test(await page.evaluate(() => location.hash)), 'the filter is in the URL');
  await shot('02-catalog-filtered-empty');
  await page.fill('#f-network', 'squeeze');
  await page.waitForSelector(rowSel);
  await page.selectOption('#f-framework', 'cuda');
  await page.waitForFunction(() => document.querySelectorAll('#catalog-body tr').length === 0);
  check(true, 'the framework filter cuda hides the llvm model');
  await page.selectOption('#f-framework', 'llvm');
  await page.waitForSelector(rowSel);
  // a shared link restores the filters
  const shared = page.url();
  const page2 = await ctx.newPage();
  await page2.goto(shared);
  await page2.waitForSelector(rowSel);
  check(await page2.inputValue('#f-network') === 'squeeze' && await page2.inputValue('#f-framework') === 'llvm',
    'a shared URL restores the filters');
  await page2.close();
  // sort by a column (keyboard)
  await page.focus('#catalog thead th[data-key="latency_ms"] button');
  await page.keyboard.press('Enter');
  check(/sort=latency_ms/.test(await page.evaluate(() => location.hash)), 'sorting by a column is in the URL');

  // 3. detail view shows the digest and the manifest
  await page.click(rowSel + ' a.model-link');
  await page.waitForSelector('#detail:not([hidden]) #digest');
  check((await page.textContent('#digest')).trim() === row.digest, 'the detail view shows the digest');
  check(/model=/.test(await page.evaluate(() => location.hash)), 'the selected model is in the URL');
  await page.waitForSelector('#manifest-kv', { timeout: 10000 });
  check(/znver|x86|llvm/.test(await page.textContent('#manifest-card')), 'the manifest card shows the target');
  const curlWait = await page.textContent('#curl-wait');
  check(curlWait.includes('curl -f --retry 100 --retry-max-time 3600 -o') && curlWait.includes('/models/' + key),
    'the waiting curl command is shown');
  check((await page.textContent('#curl-digest')).includes('/blobs/' + row.digest), 'the by-digest curl command is shown');
  // the tuning curve: one polyline with points per task that has records, as the API reports them
  const tuning = await (await fetch(base + '/models/' + key + '/tuning?points=200')).json();
  const curved = tuning.tasks.filter(t => t.curve.length > 0);
  check(curved.length > 0, 'the tuning API reports ' + curved.length + ' tasks with records after the seed');
  await page.waitForSelector('#tuning-chart polyline.series', { timeout: 10000, state: 'attached' });
  const lines = await page.$$eval('#tuning-chart polyline.series', ps => ps.map(p => ({ task: p.dataset.task, n: p.getAttribute('points').trim().split(/\s+/).filter(xy => /^-?[\d.]+,-?[\d.]+$/.test(xy)).length })));
  check(lines.length === curved.length && lines.every(l => l.n >= 1),
    'the tuning chart has one polyline with points per task (' + lines.length + ' lines, API ' + curved.length + ' tasks)');
  check(curved.every(t => lines.some(l => l.task === String(t.task))), 'every task of the API has its line');
  check(/Best GFLOPS/i.test(await page.textContent('#tuning-chart title')) && (await page.textContent('#tuning-chart desc')).length > 20,
    'the tuning chart has a title and a description');
  check(await page.$$eval('#tuning-table tbody tr', r => r.length) === tuning.tasks.length, 'the data table lists every task');
  await checkVersions(page, base, key, 'the detail');
  await shot('03-detail');

  // 4. a download through the page's link gives the same bytes as a direct fetch
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 60000 }), page.click('#dl-tar')]);
  const dlPath = path.join(ARTIFACTS, 'download.tar');
  await dl.saveAs(dlPath);
  const pageSha = sha256(fs.readFileSync(dlPath));
  check(pageSha === directSha, 'the page download has the same sha256 as a direct fetch (' + pageSha.slice(0, 12) + ')');
  fs.rmSync(dlPath, { force: true });
  const blob = Buffer.from(await (await fetch(base + '/blobs/' + row.digest)).arrayBuffer());
  check(sha256(blob) === directSha, 'the by-digest URL gives the same bytes');

  // 5. build form: client-side validation, then a miss queues a job whose progress reaches done
  await page.goto(base + '/#view=build');
  await page.waitForSelector('#b-network option[value="mobilenet"]', { state: 'attached' });
  await page.selectOption('#b-network', 'mobilenet');
  check(/GFLOPs/.test(await page.textContent('#b-network-hint')), 'the network hint shows GFLOPs');
  await page.selectOption('#b-network', 'bert');
  check((await page.textContent('#b-network-hint')).includes('input_ids int64[batch×128], token_type_ids int64'),
    'the network hint lists bert\'s inputs with their dtypes and shapes');
  await page.selectOption('#b-network', 'mobilenet');
  await page.fill('#b-batch', '0');
  await page.click('#b-submit');
  check((await page.textContent('#b-batch-err')).length > 0, 'batch 0 is refused by the client check');
  await page.fill('#b-batch', '1');
  await page.click('#b-submit');
  await page.waitForSelector('#build-ok', { timeout: 15000 });
  check(true, 'the build request was queued: ' + (await page.textContent('#build-ok')).trim());
  await page.waitForSelector('#build-job li.job', { timeout: 10000 });
  await shot('04-build-queued');
  const jp = await ctx.newPage();
  await jp.goto(base + '/#view=jobs');
  await jp.waitForSelector('#jobs-active li.job, #jobs-done li.job', { timeout: 10000 });
  await shot('05-jobs', jp);
  await jp.close();
  const seen = new Set();
  const deadline = Date.now() + 600000;
  let state = '';
  while (Date.now() < deadline) {
    state = await page.getAttribute('#build-job li.job', 'data-state');
    const now = await page.getAttribute('#build-job .bar', 'aria-valuenow').catch(() => null);
    if (now !== null) seen.add(now);
    if (state === 'succeeded' || state === 'failed' || state === 'cancelled') break;
    await sleep(500);
  }
  check(state === 'succeeded', 'the build job ends succeeded (progress seen: ' + [...seen].join(',') + ')');
  check(await page.getAttribute('#build-job .bar', 'aria-valuenow') === '100', 'its progress bar reaches 100%');
  await shot('06-build-done');
  // the catalog picks it up
  await page.goto(base + '/#view=catalog');
  await page.waitForSelector('#catalog-body tr[data-key="llvm/mobilenet/1"]', { timeout: 10000 });
  check(true, 'the new model appears in the catalog');
  // a model without tuning records says so, with the commands that tune it
  await page.click('#catalog-body tr[data-key="llvm/mobilenet/1"] a.model-link');
  await page.waitForSelector('#tuning-empty', { timeout: 10000 });
  check(/not tuned yet/i.test(await page.textContent('#tuning-empty')) && (await page.textContent('#curl-tune')).includes('/models/llvm/mobilenet/1/tune'),
    'an untuned model shows the empty tuning state with the tune command');
  await page.waitForSelector('#latency-chart rect.vbar[data-tuned="0"]', { state: 'attached', timeout: 10000 });
  check(true, 'its only version is marked untuned in the latency chart');
  await shot('06b-detail-untuned');

  // 5b. a tune job (token) shows per-task bars in the jobs view, live over its event stream (SSE), and reaches
  // done with v2. The daemon serves /jobs/{id}/events: a stream that does not answer is a failure, never a
  // quiet fall-back to polling (section 8 checks the page with the server gone).
  const noTok = await fetch(base + '/models/' + key + '/tune', { method: 'POST', body: '{"trials":3}' });
  check(noTok.status === 401, 'POST .../tune without the token is refused (HTTP ' + noTok.status + ')');
  await noTok.arrayBuffer();
  // the detail view's Tune form: a wrong token is asked again, the right one queues the job;
  // one trial per task more than the seed, so the job really measures, with live per-task progress
  await page.goto(base + '/#model=' + encodeURIComponent(key));
  await page.waitForSelector('#tune-form');
  await page.fill('#tune-trials', '3');
  await page.click('#tune-form button[type="submit"]');
  await page.waitForSelector('#token-dialog[open]');
  await page.fill('#token-input', 'wrong-token');
  await page.click('#token-ok');
  await page.waitForFunction(() => document.querySelector('#token-dialog').open && document.querySelector('#token-input').value === '', null, { timeout: 10000 });
  check(true, 'a wrong token is refused and asked again');
  await page.fill('#token-input', token);
  await page.click('#token-ok');
  await page.waitForSelector('#tune-ok', { timeout: 10000 });
  const okText = await page.textContent('#tune-ok');
  const tuneId = +((/job (\d+)/.exec(okText) || [])[1]);
  if (!check(tuneId > 0, 'the Tune form queued a tune job: ' + okText.trim()))
    throw new Error('could not queue a tune job: ' + okText);
  const ev = await fetch(base + '/jobs/' + tuneId + '/events', { signal: AbortSignal.timeout(3000) }).catch(() => null);
  const hasSse = !!ev && ev.status === 200 && /text\/event-stream/.test(ev.headers.get('content-type') || '');
  if (ev && ev.body) await ev.body.cancel().catch(() => null);
  check(hasSse, 'GET /jobs/' + tuneId + '/events answers 200 text/event-stream (' +
    (ev ? 'HTTP ' + ev.status + ', ' + (ev.headers.get('content-type') || 'no content type') : 'no answer in 3 s') + ')');
  const tp = await ctx.newPage();
  await tp.goto(base + '/#view=jobs');
  const jobSel = `#jobs-active li.job[data-job="${tuneId}"]`;
  await tp.waitForSelector(jobSel + ' li.task .bar', { timeout: 120000 });
  const ntasks = await tp.$$eval(jobSel + ' li.task', l => l.length);
  check(ntasks > 1, 'the running tune job shows a progress bar per task (' + ntasks + ' tasks)');
  await tp.waitForFunction((sel) => { const el = document.querySelector(sel); return el && /trials/.test(el.textContent) && /Stage:/.test(el.textContent); }, jobSel, { timeout: 30000 }).catch(() => null);
  check(/Stage:/.test(await tp.textContent(jobSel)) && /\d+\/\d+ trials/.test(await tp.textContent(jobSel)), 'the job shows its stage and trials done');
  await shot('05b-jobs-tune-running', tp);
  const doneSel = `li.job[data-job="${tuneId}"][data-state="succeeded"]`;
  await tp.waitForSelector(doneSel, { timeout: 300000, state: 'attached' });
  check(true, 'the tune job reaches succeeded in the jobs view');
  const tjob = await (await fetch(base + '/jobs/' + tuneId)).json();
  check(Array.isArray(tjob.progress && tjob.progress.tasks) && tjob.progress.tasks.length === ntasks, 'one task bar per task of the job (' + ntasks + ')');
  const vers = await (await fetch(base + '/models/' + key + '/versions')).json();
  const mine = vers.versions.filter(v => v.job === tuneId).map(v => String(v.version));
  // a tune job publishes a quick build, then the tuned one: the page lists both
  await tp.waitForFunction(([sel, want]) => { const el = document.querySelector(sel); return el && want.every(v => (el.dataset.published || '').split(',').includes(v)); },
    [doneSel, mine], { timeout: 10000 }).catch(() => null);
  const shownPub = (await tp.getAttribute(doneSel, 'data-published')) || '';
  check(mine.length > 0 && mine.every(v => shownPub.split(',').includes(v)), 'the job shows what it published (v' + shownPub + '; API v' + mine.join(', v') + ')');
  const nsse = +(await tp.evaluate(() => document.body.dataset.sseEvents || 0));
  check(nsse > 0 && await tp.evaluate(() => document.body.dataset.sse) === 'yes', 'the page received ' + nsse + ' Server-Sent Events');
  await tp.click(doneSel + ' details.task-details summary');
  await shot('05c-jobs-tune-done', tp);
  await tp.close();
  // the detail view now has both versions
  await page.goto(base + '/#model=' + encodeURIComponent(key));
  await page.waitForSelector('#tuning-chart polyline.series', { timeout: 10000, state: 'attached' });
  const after = await checkVersions(page, base, key, 'after tuning');
  check(after.versions.length >= 2, 'the tune job added a version (' + after.versions.length + ' in all)');
  await shot('03b-detail-after-tune');

  // 5c. pin an alias to the oldest version from the versions card (the token of the tuning's dialog)
  const oldest = String(after.versions[0].version);
  await page.fill('#alias-name', 'B1');
  await page.click('#alias-form button[type="submit"]');
  await page.waitForSelector('#alias-result .field-error');
  check(await page.getAttribute('#alias-name', 'aria-invalid') === 'true', 'a name against the alias rule is refused in the page');
  await page.fill('#alias-name', 'prod');
  await page.selectOption('#alias-version', oldest);
  await page.click('#alias-form button[type="submit"]');
  await page.waitForSelector('#alias-ok', { timeout: 10000 });
  const pinned = await page.$$eval('#versions-table tbody tr', rs => rs.map(r => r.dataset.version + ':' +
    [...r.querySelectorAll('.pill.alias')].map(p => p.textContent).join(',')));
  check(pinned.includes(oldest + ':prod') && pinned.filter(x => x.endsWith(':prod')).length === 1,
    'the versions table shows prod on v' + oldest + ' (' + pinned.join(' ') + ')');
  const byAlias = await fetch(base + '/models/' + key + '?alias=prod', { method: 'HEAD' });
  check(byAlias.status === 200 && byAlias.headers.get('x-tunehub-version') === oldest,
    '?alias=prod serves v' + oldest + ' (HTTP ' + byAlias.status + ', v' + byAlias.headers.get('x-tunehub-version') + ')');
  check(!/\bnull\b/.test(await page.textContent('#versions-card')), 'the versions card shows no "null"');
  await (await page.$('#versions-card')).screenshot({ path: path.join(ARTIFACTS, '03c-detail-alias.png') });

  // 5d. a model built for another target than the server's (x86-64-v2) is its own entry: the build form picks the
  // target from /targets, the catalog shows and filters it, and its detail (URL state, downloads, manifest,
  // versions, tuning, tune and alias forms) acts on that entry, never on the native one of the same network
  const tgt = 'x86-64-v2';
  const xkey = key + '/' + tgt;
  const targets = await (await fetch(base + '/targets')).json();
  const llvmT = targets.targets.find(t => t.framework === 'llvm');
  check(llvmT && llvmT.native !== tgt && llvmT.valid_targets.includes(tgt), '/targets lists ' + tgt + ' as valid and not native (' + (llvmT && llvmT.native) + ')');
  await page.goto(base + '/#view=build');
  await page.waitForSelector('#b-network option[value="squeezenet_v1.1"]', { state: 'attached' });
  await page.waitForSelector('#b-target option[value="' + tgt + '"]', { state: 'attached', timeout: 10000 });
  check(await page.inputValue('#b-target') === 'native', 'the build form\'s target defaults to native');
  check(await page.$$eval('#b-target option', os => os.length) === llvmT.valid_targets.length, 'the build form offers every valid llvm target of /targets');
  // the frameworks come from /targets too (issue 37: the page names none), in its order, the first selected
  const fws = targets.targets.map(t => t.framework);
  const offered = await page.$$eval('#b-framework option', os => os.map(o => o.value));
  const filters = await page.$$eval('#f-framework option', os => os.map(o => o.value));
  check(JSON.stringify(offered) === JSON.stringify(fws) && await page.inputValue('#b-framework') === fws[0] &&
    JSON.stringify(filters) === JSON.stringify([''].concat(fws)),
    'the framework selects offer the frameworks of /targets (' + offered + '; filter ' + filters + ')');
  await page.selectOption('#b-network', 'squeezenet_v1.1');
  await page.fill('#b-batch', '1');
  await page.selectOption('#b-target', tgt);
  check(/Cross-compiled for x86-64-v2/.test(await page.textContent('#b-target-hint')), 'the target hint says the build is cross-compiled');
  await page.click('#b-submit');
  await page.waitForSelector('#build-ok', { timeout: 15000 });
  const okHref = await page.getAttribute('#build-ok a', 'href');
  check(new URLSearchParams(okHref.replace(/^#/, '')).get('model') === xkey, 'the queued build links to the ' + tgt + ' entry (' + okHref + ')');
  const xw = await fetch(base + '/models/' + key + '?target=' + tgt + '&wait=600');
  const xdirect = Buffer.from(await xw.arrayBuffer());
  if (!check(xw.status === 200, 'the ' + tgt + ' build finishes (HTTP ' + xw.status + ')'))
    throw new Error('the build for ' + tgt + ' did not finish: ' + xdirect.toString('utf8', 0, 300));
  const xcat = await (await fetch(base + '/models?target=' + tgt)).json();
  const xrow = xcat.models.find(m => m.network === 'squeezenet_v1.1' && m.batch === 1);
  check(xrow && xrow.target === 'llvm -mcpu=' + tgt && xrow.digest === 'sha256:' + sha256(xdirect) && xrow.digest !== row.digest,
    'the catalog API has the ' + tgt + ' entry with its own digest');
  await page.goto(base + '/#view=catalog');
  const xrowSel = `#catalog-body tr[data-key="${xkey}"]`;
  await page.waitForSelector(xrowSel, { timeout: 15000 });
  check((await page.textContent(xrowSel + ' td.target')).trim() === tgt, 'the catalog row shows the target ' + tgt);
  check(/native/.test(await page.textContent(rowSel + ' td.target')), 'the native row is marked native');
  await page.selectOption('#f-target', tgt);
  await page.waitForFunction((sel) => document.querySelectorAll('#catalog-body tr').length === 1 && document.querySelector(sel), xrowSel, { timeout: 5000 }).catch(() => null);
  check(await page.$$eval('#catalog-body tr', rs => rs.map(r => r.dataset.key).join(' ')) === xkey && /target=x86-64-v2/.test(await page.evaluate(() => location.hash)),
    'the target filter ' + tgt + ' keeps only its row, and is in the URL');
  await page.selectOption('#f-target', 'native');
  await page.waitForFunction((sel) => !document.querySelector(sel), xrowSel, { timeout: 5000 }).catch(() => null);
  check(await page.$(xrowSel) === null && await page.$(rowSel) !== null, 'the target filter native hides the ' + tgt + ' row and keeps the native one');
  await page.selectOption('#f-target', '');
  await page.waitForSelector(xrowSel);
  await shot('11-catalog-targets');
  await page.click(xrowSel + ' a.model-link');
  await page.waitForSelector('#detail:not([hidden]) #detail-target');
  const xhash = new URLSearchParams((await page.evaluate(() => location.hash)).replace(/^#/, ''));
  check(xhash.get('model') === xkey, 'the URL names the ' + tgt + ' entry (model=' + xhash.get('model') + ')');
  const checkXDetail = async (p, where) => {
    await p.waitForSelector('#detail:not([hidden]) #detail-target', { timeout: 10000 });
    check((await p.textContent('#detail-target')).includes('llvm -mcpu=' + tgt) && (await p.textContent('#detail-h')).includes(tgt),
      where + ': the detail shows the target ' + tgt);
    check((await p.textContent('#digest')).trim() === xrow.digest, where + ': the detail shows the ' + tgt + ' entry\'s digest');
    for (const id of ['dl-tar', 'dl-so', 'dl-manifest']) {
      const u = new URL(await p.getAttribute('#' + id, 'href'), base);
      check(u.searchParams.get('target') === tgt, where + ': #' + id + ' carries ?target=' + tgt + ' (' + u.pathname + u.search + ')');
    }
  };
  await checkXDetail(page, 'the ' + tgt + ' detail');
  check((await page.getAttribute('#dl-tar', 'download')) === 'squeezenet_v1.1_llvm-' + tgt + '_b1.tar', 'the download is named with the target');
  check((await page.textContent('#curl-name')).includes('/models/' + key + '?target=' + tgt), 'the curl command names the target');
  await page.waitForSelector('#manifest-kv', { timeout: 10000 });
  check((await page.textContent('#manifest-kv')).includes(tgt), 'the manifest card shows the ' + tgt + ' manifest');
  const [xdl] = await Promise.all([page.waitForEvent('download', { timeout: 60000 }), page.click('#dl-tar')]);
  const xdlPath = path.join(ARTIFACTS, 'download-' + tgt + '.tar');
  await xdl.saveAs(xdlPath);
  check(sha256(fs.readFileSync(xdlPath)) === sha256(xdirect), 'the page downloads the ' + tgt + ' bundle (same sha256 as a direct fetch)');
  fs.rmSync(xdlPath, { force: true });
  await checkVersions(page, base, key, 'the ' + tgt + ' detail', '?target=' + tgt);
  // no records for a target this server cannot measure: the tuning card says why, and the Tune form's POST
  // reaches that entry (the server answers that it queues nothing)
  await page.waitForSelector('#tuning-empty', { timeout: 10000 });
  check(/measures only its own/.test(await page.textContent('#tuning-empty')), 'the tuning card says the target is not tunable here');
  const tuneApi = await (await fetch(base + '/models/' + key + '/tune?target=' + tgt, { method: 'POST', body: '{"trials":1}',
    headers: { Authorization: 'Bearer ' + token } })).json();
  await page.fill('#tune-trials', '1');
  await page.click('#tune-form button[type="submit"]');
  const answer = await page.waitForSelector('#tune-error, #tune-ok, #token-dialog[open]', { timeout: 10000 });
  if (await answer.evaluate(el => el.id === 'token-dialog')) {
    await page.fill('#token-input', token);
    await page.click('#token-ok');
    await page.waitForSelector('#tune-error, #tune-ok', { timeout: 10000 });
  }
  check(await page.$('#tune-error') && (await page.textContent('#tune-error')).trim() === tuneApi.error.message,
    'the Tune form asks for the ' + tgt + ' entry and shows the server\'s refusal: "' + tuneApi.error.message + '"');
  // an alias pinned from its versions card is that entry's
  await page.fill('#alias-name', 'edge');
  await page.click('#alias-form button[type="submit"]');
  await page.waitForSelector('#alias-ok, #alias-error', { timeout: 10000 });
  const xAlias = await fetch(base + '/models/' + key + '?alias=edge&target=' + tgt, { method: 'HEAD' });
  const nAlias = await fetch(base + '/models/' + key + '?alias=edge', { method: 'HEAD' });
  check(await page.$('#alias-ok') && xAlias.status === 200 && nAlias.status === 404,
    'the alias form pins edge on the ' + tgt + ' entry only (HTTP ' + xAlias.status + ' with ?target=, ' + nAlias.status + ' without)');
  await shot('12-detail-target');
  // a reload and a shared link open the same entry
  await page.reload();
  await checkXDetail(page, 'after a reload');
  const shared2 = await ctx.newPage();
  await shared2.goto(page.url());
  await checkXDetail(shared2, 'a shared link');
  await shared2.close();

  // 6. a batch the client allows but the server refuses shows the server's message as it is
  const serverMsg = (await (await fetch(base + '/models/llvm/mobilenet/9', { headers: { Prefer: 'respond-async' } })).json()).error.message;
  await page.goto(base + '/#view=build');
  await page.waitForSelector('#b-network option[value="mobilenet"]', { state: 'attached' });
  await page.selectOption('#b-network', 'mobilenet');
  await page.fill('#b-batch', '9');
  await page.click('#b-submit');
  await page.waitForSelector('#build-error', { timeout: 10000 });
  const shown = (await page.textContent('#build-error')).trim();
  check(shown === serverMsg, 'the server\'s error is shown as it is: "' + shown + '"');
  await shot('07-build-error');

  // 7. phone layout
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true });
  const pp = await phone.newPage();
  await pp.goto(base + '/#model=' + encodeURIComponent(key));
  await pp.waitForSelector('#digest');
  const overflow = await pp.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 1, 'no horizontal overflow on a phone (' + overflow + 'px)');
  await shot('08-phone-detail', pp);
  await pp.waitForSelector('#tuning-chart', { state: 'attached' });
  await (await pp.$('#tuning-card')).screenshot({ path: path.join(ARTIFACTS, '08b-phone-tuning.png') });
  await (await pp.$('#versions-card')).screenshot({ path: path.join(ARTIFACTS, '08c-phone-versions.png') });
  await pp.goto(base + '/#view=jobs');
  await pp.waitForSelector('#jobs-done li.job');
  const jobsOverflow = await pp.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(jobsOverflow <= 1, 'no horizontal overflow of the jobs view on a phone (' + jobsOverflow + 'px)');
  await shot('08d-phone-jobs', pp);
  await phone.close();

  // 7b. networks: an uploaded ONNX network beside the zoo, through the upload form (the token dialog as for tuning)
  const onnxFile = path.join(tmp, 'tiny.onnx');
  const ex = spawnSync('/usr/bin/python3', [path.join(ROOT, 'tests', 'integration', 'onnx_models.py'), 'tiny', onnxFile, '1'],
    { encoding: 'utf8', timeout: 180000 });
  if (check(ex.status === 0, 'export a small ONNX network with torch' + (ex.status === 0 ? '' : ': ' + (ex.stderr || '').slice(-500)))) {
    await page.goto(base + '/#view=networks');
    await page.waitForSelector('#networks-body tr[data-name="resnet-18"][data-source="zoo"]', { timeout: 10000 });
    check(true, 'the networks view lists the zoo');
    await page.fill('#u-name', 'Tiny');
    await page.click('#u-submit');
    check(/Choose an ONNX file/.test(await page.textContent('#u-file-err')), 'the upload form asks for a file');
    await page.setInputFiles('#u-file', onnxFile);
    await page.click('#u-submit');
    check(/lowercase/.test(await page.textContent('#u-name-err')), 'a bad name is refused by the client check');
    await page.fill('#u-name', 'tiny');
    await page.evaluate(() => sessionStorage.removeItem('tunehub.token'));
    await page.click('#u-submit');
    await page.waitForSelector('#token-dialog[open]');
    check(/Upload network/.test(await page.textContent('#token-h')), 'the upload asks for the token in the tuning\'s dialog');
    await page.fill('#token-input', token);
    await page.click('#token-ok');
    await page.waitForSelector('#upload-ok', { timeout: 60000 });
    check(/Uploaded/.test(await page.textContent('#upload-ok')), 'the upload is stored: ' + (await page.textContent('#upload-ok')).trim());
    const upRow = '#networks-body tr[data-name="tiny"][data-source="onnx"]';
    await page.waitForSelector(upRow, { timeout: 10000 });
    const upText = await page.textContent(upRow);
    check(/version 1/.test(upText) && /Conv/.test(upText) && /uploaded/i.test(upText), 'the uploaded network has its row: version, ops, source');
    const apiNet = await (await fetch(base + '/networks/tiny')).json();
    check(apiNet.source === 'onnx' && apiNet.digest === 'sha256:' + sha256(fs.readFileSync(onnxFile)), 'the API has the same file (by digest)');
    await shot('10-networks-uploaded');
    // a file the server refuses: its message as it is, and no row
    const junk = path.join(tmp, 'junk.onnx');
    fs.writeFileSync(junk, 'this is not an ONNX model');
    await page.fill('#u-name', 'junk');
    await page.setInputFiles('#u-file', junk);
    await page.click('#u-submit');
    await page.waitForSelector('#upload-error', { timeout: 30000 });
    const apiErr = await (await fetch(base + '/networks/junk', { method: 'PUT', body: 'this is not an ONNX model',
      headers: { Authorization: 'Bearer ' + token } })).json();
    check((await page.textContent('#upload-error')).trim() === apiErr.error.message, 'a refused file shows the server\'s message');
    check(await page.$('#networks-body tr[data-name="junk"]') === null, 'a refused file has no row');
    // the build form offers it, and its model in the catalog is marked as an upload
    await page.goto(base + '/#view=build');
    await page.waitForSelector('#b-network option[value="tiny"]', { state: 'attached', timeout: 10000 });
    check(true, 'the build form offers the uploaded network');
    const tb = await fetch(base + '/models/llvm/tiny/1?wait=600');
    await tb.arrayBuffer();
    check(tb.status === 200, 'the uploaded network builds (HTTP ' + tb.status + ')');
    await page.goto(base + '/#view=catalog');
    await page.waitForSelector('#catalog-body tr[data-key="llvm/tiny/1"] .pill.onnx', { timeout: 15000 });
    check(true, 'its model is in the catalog, marked onnx');
    // delete from the networks view
    await page.goto(base + '/#view=networks');
    await page.click(upRow + ' button.net-delete');
    await page.waitForSelector('#delete-ok', { timeout: 10000 });
    await page.waitForFunction(() => !document.querySelector('#networks-body tr[data-name="tiny"]'), null, { timeout: 10000 }).catch(() => null);
    check(await page.$(upRow) === null && (await fetch(base + '/networks/tiny')).status === 404, 'the delete button removes it');
  }

  // 7b. precision (issue 25): where this server builds cuda, fp32 and tf32 of squeezenet on sm_80 are two rows,
  // each showing its precision, and the tf32 entry's detail links carry ?precision=tf32
  const cudaT = ((await (await fetch(base + '/targets')).json()).targets || []).find(t => t.framework === 'cuda');
  if (cudaT && cudaT.available) {
    for (const p of ['tf32', 'fp32']) {
      const r = await fetch(base + '/models/cuda/squeezenet_v1.1/1?target=sm_80&precision=' + p + '&wait=600');
      await r.arrayBuffer();
      check(r.status === 200, 'the cuda ' + p + ' build finishes (HTTP ' + r.status + ')');
    }
    await page.goto(base + '/#view=catalog');
    const tfSel = '#catalog-body tr[data-key="cuda/squeezenet_v1.1/1/sm_80/tf32"]';
    const fpSel = '#catalog-body tr[data-key="cuda/squeezenet_v1.1/1/sm_80"]';
    await page.waitForSelector(tfSel, { timeout: 15000 });
    check((await page.textContent(tfSel + ' .pill.precision')).trim() === 'tf32', 'the tf32 row shows tf32');
    check((await page.textContent(fpSel + ' .pill.precision')).trim() === 'fp32', 'the fp32 row of the same key shows fp32');
    await page.click(tfSel + ' a.model-link');
    await page.waitForSelector('#detail:not([hidden]) #dl-tar');
    const u = new URL(await page.getAttribute('#dl-tar', 'href'), base);
    check(u.searchParams.get('precision') === 'tf32' && u.searchParams.get('target') === 'sm_80',
      'the tf32 detail downloads the tf32 entry (' + u.pathname + u.search + ')');
    check((await page.getAttribute('#dl-tar', 'download')) === 'squeezenet_v1.1_cuda-sm_80-tf32_b1.tar',
      'the tf32 download is named as the server names it');
    await shot('12-catalog-precision');
  }

  // 8. server unreachable: the loaded page polls, sees the failure and says so
  await page.goto(base + '/#view=catalog');
  await page.waitForSelector('#catalog-body tr');
  daemon.kill('SIGTERM');
  await page.waitForSelector('#banner:not([hidden])', { timeout: 15000 });
  check(/unreachable/i.test(await page.textContent('#banner')), 'the page says the server is unreachable');
  await shot('09-unreachable');

  check(consoleErrors.filter(e => !/Failed to load resource|ERR_CONNECTION_REFUSED|net::/.test(e)).length === 0,
    'no script errors in the console' + (consoleErrors.length ? ': ' + consoleErrors.join(' | ') : ''));
}

main().then(async () => {
  await cleanup();
  log(failures ? failures + ' check(s) failed' : 'all checks passed');
  process.exit(failures ? 1 : 0);
}, async (e) => {
  log('ERROR ' + (e && e.stack || e));
  await cleanup();
  process.exit(1);
});
