// Builds dist/: the page's script (esbuild bundle of src/ with onnxruntime-web) and onnxruntime's wasm,
// gzipped because Gradio's file route sends files uncompressed (the page unpacks it).
import { build } from "esbuild";
import { createReadStream, createWriteStream, mkdirSync } from "node:fs";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";

mkdirSync("dist", { recursive: true });
await build({
  entryPoints: ["src/main.js"], bundle: true, minify: true, format: "iife", target: "es2022",
  outfile: "dist/toyviz.js", logLevel: "warning",
  logOverride: { "empty-import-meta": "silent" },   // ort looks for its wasm by url only when not handed the bytes
});
await pipeline(createReadStream("node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.wasm"),
               createGzip({ level: 9 }), createWriteStream("dist/ort-wasm-simd-threaded.wasm.gz"));
