"""The shipped GPT in the student's browser: ONNX graphs exported from the model the app traces.

`toyviz export web` writes two graphs next to the checkpoint (checkpoints/gpt/web/):

- prefill.onnx: ids (1, T) → logits (T, V), attention (L, H, T, T), keys and values (L, H, T, d_head);
- step.onnx: one new id (1, 1) and the cached keys/values (L, H, P, d_head) → the next-token logits (V,)
  and the keys/values grown to P + 1.

Neither graph holds a weight: each reads its fp16 weights straight out of the checkpoint's
model.safetensors (ONNX external data at the tensor's byte offset), so the browser downloads the
weights once, the graphs stay a few hundred KB, and a graph whose recorded sha256 is not the
checkpoint's is stale. onnx/onnxscript (export) and onnxruntime (checks) are development
dependencies only; the app itself never imports them.
"""
