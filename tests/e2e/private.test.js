#!/usr/bin/env node
/* End-to-end test of the catalog page (web/) against a daemon started with --private, in headless Chromium:
   the page's own files load without a token, its first read is answered 401 naming the scope read, and the
   page asks for the token once, then shows the registry (the fleet table, the network list) with it.
   Exit 0 pass, 1 fail (a missing tunehub binary too), 77 skip (no chromium, no node_modules).
   Env: TUNEHUB (the binary), CHROMIUM (default /usr/bin/chromium). */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { freePort } = require('./util');
const { spawn } = require('child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const TUNEHUB = process.env.TUNEHUB || path.join(ROOT, 'build', 'server', 'tunehub');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
if (!fs.existsSync(TUNEHUB)) {
  console.log('FAIL: tunehub binary ' + TUNEHUB + ' is missing');
  process.exit(1);
}
if (!fs.existsSync(CHROMIUM)) { console.log('SKIP: ' + CHROMIUM + ' is missing'); process.exit(77); }
let chromium;
try { ({ chromium } = require('playwright-core')); }
catch (e) { console.log('SKIP: playwright-core is not installed (cd tests/e2e && npm ci --ignore-scripts)'); process.exit(77); }

const sleep = (ms) => new Promise(r => setTimeout(r, ms));
let failures = 0;
function check(cond, what) {
  console.log((cond ? 'ok   ' : 'FAIL ') + what);
  if (!cond) failures++;
  return cond;
}
async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tunehub-e2e-private-'));
  const token = 'reader-token-' + Date.now().toString(16) + '-0123456789';
  fs.writeFileSync(path.join(tmp, 'tokens'), token + ' read\n', { mode: 0o600 });
  const port = await freePort();
  const base = 'http://127.0.0.1:' + port;
  const daemon = spawn(TUNEHUB, ['serve', '--listen', '127.0.0.1:' + port, '--data', path.join(tmp, 'data'),
    '--token-file', path.join(tmp, 'tokens'), '--private'], { stdio: 'ignore' });
  let browser = null;
  try {
    let up = false;
    for (let i = 0; i < 100 && !up; i++) {
      try { up = (await fetch(base + '/healthz')).ok; } catch (e) { await sleep(100); }
    }
    if (!up) throw new Error('the daemon did not answer /healthz');
    check((await fetch(base + '/models')).status === 401, 'an anonymous read is refused (401)');
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
    const page = await (await browser.newContext()).newPage();
    const errors = [];
    page.on('pageerror', e => errors.push(String(e)));
    const resp = await page.goto(base + '/');
    check(resp.status() === 200, 'the page itself loads without a token');
    await page.waitForSelector('#token-dialog[open]', { timeout: 10000 });
    check(/Sign in/.test(await page.textContent('#token-h')), 'its first read asks for the token ("Sign in")');
    await page.fill('#token-input', token);
    await page.click('#token-ok');
    await page.waitForFunction(() => /of 1 worker/.test(document.querySelector('#workers-status').textContent),
      null, { timeout: 15000 }).catch(() => null);
    check(/of 1 worker/.test(await page.textContent('#workers-status')),
      'with the token the page shows the fleet (' + (await page.textContent('#workers-status')) + ')');
    check(await page.evaluate(() => sessionStorage.getItem('tunehub.token')) !== null, 'the tab keeps the token');
    await sleep(5000); // polls go on with the token: no second dialog
    check(!(await page.$('#token-dialog[open]')), 'the page asks once, its polls send the token');
    check(errors.length === 0, 'no page errors' + (errors.length ? ': ' + errors.join(' | ') : ''));
  } finally {
    if (browser) await browser.close().catch(() => null);
    daemon.kill('SIGTERM');
    for (let i = 0; i < 50 && daemon.exitCode === null; i++) await sleep(100);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(() => process.exit(failures ? 1 : 0), (e) => { console.log('FAIL: ' + (e && e.stack || e)); process.exit(1); });
