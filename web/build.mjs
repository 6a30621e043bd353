// Builds dist/: the page's script (esbuild bundle of src/main.js) with the model's worker inside it
// (src/worker.js and onnxruntime-web, started from a Blob: no request of its own), and onnxruntime's
// wasm, gzipped because Gradio's file route sends files uncompressed (the worker unpacks it).
import { build } from "esbuild";
import { createReadStream, createWriteStream, mkdirSync } from "node:fs";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";

const common = {
  bundle: true, minify: true, format: "iife", target: "es2022", logLevel: "warning",
  logOverride: { "empty-import-meta": "silent" },   // ort looks for its wasm by url only when not handed the bytes
};
mkdirSync("dist", { recursive: true });
const worker = await build({ ...common, entryPoints: ["src/worker.js"], write: false });
await build({ ...common, entryPoints: ["src/main.js"], outfile: "dist/toyviz.js",
              define: { WORKER_SOURCE: JSON.stringify(worker.outputFiles[0].text) } });
await pipeline(createReadStream("node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.wasm"),
               createGzip({ level: 9 }), createWriteStream("dist/ort-wasm-simd-threaded.wasm.gz"));
