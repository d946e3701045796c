// ONNX Runtime (onnxruntime-node) baseline for scripts/bench/models.sh and transformers.sh.
// usage: node models_ort.js MODEL.onnx THREADS REPEAT [N,C,H,W]   -> prints "median_ms=X"
// Every input of the model is fed: float32 inputs with uniform(-1, 1), int64 inputs (token ids, token
// types, attention masks) with 1, which is valid for every embedding and attends to every position. The
// optional shape replaces the first input's shape (CNN exports); other shapes come from the model.
'use strict';
const ort = require('onnxruntime-node');

async function main() {
  const [file, threads = '2', repeat = '20', shapeArg] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(file, {
    intraOpNumThreads: Number(threads),
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionProviders: ['cpu'],
  });
  const feeds = {};
  session.inputNames.forEach((name, k) => {
    const meta = session.inputMetadata && session.inputMetadata[k];
    const dims = k === 0 && shapeArg ? shapeArg.split(',').map(Number) : meta && meta.shape ? meta.shape.map(Number) : null;
    if (!dims || dims.some((d) => !Number.isFinite(d) || d <= 0)) throw new Error(`cannot read the static shape of input ${name} of ${file}`);
    const n = dims.reduce((a, b) => a * b, 1);
    if (meta && meta.type === 'int64') {
      feeds[name] = new ort.Tensor('int64', new BigInt64Array(n).fill(1n), dims);
    } else {
      const data = new Float32Array(n);
      for (let i = 0; i < n; i++) data[i] = Math.random() * 2 - 1;
      feeds[name] = new ort.Tensor('float32', data, dims);
    }
  });
  for (let i = 0; i < 3; i++) await session.run(feeds);
  const times = [];
  for (let i = 0; i < Number(repeat); i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  const m = times.length;
  const median = m % 2 ? times[(m - 1) / 2] : (times[m / 2 - 1] + times[m / 2]) / 2;
  console.error(`ort ${file}: ${m} runs, median ${median.toFixed(3)} ms, min ${times[0].toFixed(3)} ms`);
  console.log(`median_ms=${median.toFixed(3)}`);
}

main().catch((e) => { console.error(e && e.stack ? e.stack : e); process.exit(1); });
