// ONNX Runtime per-node profile for scripts/bench/layers.sh.
// usage: node layers_ort.js MODEL.onnx THREADS REPEAT N,C,H,W
// Prints one line per node, in graph order: "KEY<TAB>MEDIAN_MS<TAB>NODE", where KEY names the layer by its
// shapes the way layers.sh names tunehub's layers ("conv c64 h56 w56 oc64 oh56 ow56 k3", "max_pool ...").
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require('onnxruntime-node');

function key(a) {
  const ins = (a.input_type_shape || []).map((s) => s.float || []);
  const out = ((a.output_type_shape || [])[0] || {}).float || [];
  const x = ins[0] || [];
  const hw = (v) => `h${v[2]} w${v[3]}`;
  if (a.op_name === 'Conv' || a.op_name === 'FusedConv') {
    const w = ins[1] || [];
    return `conv c${x[1]} ${hw(x)} oc${out[1]} oh${out[2]} ow${out[3]} k${w[2]}`;
  }
  if (a.op_name === 'MaxPool') return `max_pool c${x[1]} ${hw(x)} oh${out[2]} ow${out[3]}`;
  if (a.op_name === 'GlobalAveragePool') return `global_avg_pool c${x[1]} ${hw(x)}`;
  if (a.op_name === 'Gemm' || a.op_name === 'MatMul') return `dense c${x[1]} oc${out[1]}`;
  return `other ${a.op_name}`;
}

async function main() {
  const [file, threads = '2', repeat = '10', shapeArg] = process.argv.slice(2);
  const prefix = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tunehub-ortprof-')), 'p');
  const session = await ort.InferenceSession.create(file, {
    intraOpNumThreads: Number(threads),
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionProviders: ['cpu'],
    enableProfiling: true,
    profileFilePrefix: prefix,
  });
  const dims = shapeArg.split(',').map(Number);
  const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
  for (let i = 0; i < data.length; i++) data[i] = Math.random() * 2 - 1;
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', data, dims) };
  const warm = 3;
  for (let i = 0; i < warm + Number(repeat); i++) await session.run(feeds);
  await session.endProfiling();
  const dir = path.dirname(prefix);
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
  if (files.length !== 1) throw new Error(`expected one profile in ${dir}, found ${files.length}`);
  const events = JSON.parse(fs.readFileSync(path.join(dir, files[0]), 'utf8'));
  fs.rmSync(dir, { recursive: true, force: true });
  const nodes = new Map();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    if (!nodes.has(e.name)) nodes.set(e.name, { key: key(e.args), dur: [] });
    nodes.get(e.name).dur.push(e.dur / 1e3);
  }
  for (const [name, n] of nodes) {
    const d = n.dur.slice(warm).sort((a, b) => a - b);
    if (d.length === 0) continue;
    const m = d.length % 2 ? d[(d.length - 1) / 2] : (d[d.length / 2 - 1] + d[d.length / 2]) / 2;
    console.log(`${n.key}\t${m.toFixed(4)}\t${name.replace(/_kernel_time$/, '')}`);
  }
}

main().catch((e) => { console.error(e && e.stack ? e.stack : e); process.exit(1); });
