// ONNX Runtime (onnxruntime-node 1.30, CPU) on an exported network, the reference of the ONNX conformance
// tests (onnx_conformance.sh) and the ONNX Runtime column of scripts/bench/onnx.sh.
//
// usage: node onnx_ort.js run  MODEL.onnx BATCH INDIR OUTDIR [THREADS]
//          feeds INDIR/<input>.bin (raw little-endian, float32 or int64 as the model says) to every input,
//          runs once and writes every output to OUTDIR/<output>.bin (raw little-endian); prints a line per
//          output with its shape and max |y|
//        node onnx_ort.js time MODEL.onnx BATCH INDIR THREADS REPEAT
//          the same inputs; 3 warm-up runs, then REPEAT timed runs; prints "median_ms=X"
//
// The session runs on THREADS intra-op threads (default 2) and one inter-op thread, with every graph
// optimisation and the symbolic dimension "batch" pinned to BATCH (freeDimensionOverrides), as a user
// deploying the file at that batch would set it up. Every other dimension must be fixed in the file. Each
// input file must hold exactly the input's bytes at BATCH.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const BYTES = { float32: 4, int64: 8 };

function die(msg) {
  console.error(`onnx_ort.js: ${msg}`);
  process.exit(2);
}

async function open(file, batch, threads) {
  return ort.InferenceSession.create(file, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionProviders: ['cpu'],
    freeDimensionOverrides: { batch },
  });
}

// Every input of the session from indir/<name>.bin, its first dimension set to batch.
function feeds(session, file, batch, indir) {
  const out = {};
  session.inputNames.forEach((name, k) => {
    const meta = session.inputMetadata[k];
    if (!(meta.type in BYTES)) throw new Error(`input ${name} of ${file} is ${meta.type}, not float32 or int64`);
    const dims = meta.shape.map((d, i) => (i === 0 ? batch : d));
    if (dims.some((d) => typeof d !== 'number' || !(d > 0))) {
      throw new Error(`input ${name} of ${file} has the shape [${meta.shape}]: only the first dimension may be symbolic`);
    }
    const n = dims.reduce((a, b) => a * b, 1);
    const f = path.join(indir, `${name}.bin`);
    const buf = fs.readFileSync(f);
    if (buf.length !== n * BYTES[meta.type]) {
      throw new Error(`input ${name} (${meta.type} [${dims}]): expected ${n * BYTES[meta.type]} bytes, but ${f} has ${buf.length}`);
    }
    // a copy, so that the typed array is aligned whatever Node's buffer pool did
    const bytes = new Uint8Array(buf).buffer;
    const data = meta.type === 'int64' ? new BigInt64Array(bytes) : new Float32Array(bytes);
    out[name] = new ort.Tensor(meta.type, data, dims);
  });
  return out;
}

async function run(file, batch, indir, outdir, threads) {
  const session = await open(file, batch, threads);
  const results = await session.run(feeds(session, file, batch, indir));
  fs.mkdirSync(outdir, { recursive: true });
  for (const name of session.outputNames) {
    const t = results[name];
    if (t.dims[0] !== batch) throw new Error(`output ${name} has the shape [${t.dims}], not batch ${batch} first`);
    const d = t.data;
    fs.writeFileSync(path.join(outdir, `${name}.bin`), Buffer.from(d.buffer, d.byteOffset, d.byteLength));
    let mx = 0;
    if (t.type === 'float32') for (let i = 0; i < d.length; i++) mx = Math.max(mx, Math.abs(d[i]));
    console.log(`ort output ${name} ${t.type} [${t.dims.join(', ')}] max |y| ${mx.toPrecision(4)}`);
  }
}

async function time(file, batch, indir, threads, repeat) {
  const session = await open(file, batch, threads);
  const input = feeds(session, file, batch, indir);
  for (let i = 0; i < 3; i++) await session.run(input);
  const times = [];
  for (let i = 0; i < repeat; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(input);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  const m = times.length;
  const median = m % 2 ? times[(m - 1) / 2] : (times[m / 2 - 1] + times[m / 2]) / 2;
  console.error(`ort ${file} b${batch}: ${m} runs, median ${median.toFixed(3)} ms, min ${times[0].toFixed(3)} ms`);
  console.log(`median_ms=${median.toFixed(3)}`);
}

function whole(s, what, lo) {
  const v = Number(s);
  if (!Number.isInteger(v) || v < lo) die(`${what} must be a whole number from ${lo}, not '${s}'`);
  return v;
}

const [mode, file, batchArg, indir, ...rest] = process.argv.slice(2);
if (!['run', 'time'].includes(mode) || !file || !batchArg || !indir) {
  die('usage: onnx_ort.js run MODEL.onnx BATCH INDIR OUTDIR [THREADS] | time MODEL.onnx BATCH INDIR THREADS REPEAT');
}
const batch = whole(batchArg, 'BATCH', 1);
const job = mode === 'run'
  ? run(file, batch, indir, rest[0] || die('run needs OUTDIR'), whole(rest[1] || '2', 'THREADS', 1))
  : time(file, batch, indir, whole(rest[0] || '2', 'THREADS', 1), whole(rest[1] || '20', 'REPEAT', 1));
job.catch((e) => {
  console.error(`onnx_ort.js: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
