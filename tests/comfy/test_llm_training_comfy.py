"""The LLM / training estimators against ComfyUI's own code (0.18.2):
- TextGenerate's KV cache: BaseGenerate.generate run on the meta device with ComfyUI's real model classes,
  every torch.empty / empty_like it makes before the first forward summed, vs llm.textgen_kv_cache_bytes;
- TrainLoraNode's adapters: each algorithm's create_train on real tensors, parameters counted, vs
  training.comfy_adapter_params; weight_adapter.base.factorization vs training.comfy_factorization.
"""
from __future__ import annotations

from vram_budget.nodes.estimator import llm
from vram_budget.nodes.estimator.llm import training as T

KV_SNIPPET = r'''
import json, torch
try:
    import comfy.ops, comfy.text_encoders.llama as L
    L.BaseGenerate.generate
except (ImportError, AttributeError) as exc:
    print(json.dumps({"skip": f"no TextGenerate in this ComfyUI ({exc})"})); raise SystemExit
class Stop(Exception):
    pass
out = {}
for cls in ("Gemma3_4B", "Gemma3_12B", "Qwen3_8B", "Qwen25_7BVLI", "Qwen3_4B"):
    if not hasattr(L, cls):
        continue
    model = getattr(L, cls)({}, torch.bfloat16, "meta", comfy.ops.manual_cast)
    def stop(*a, **k):
        raise Stop
    model.model.forward = stop
    # 0.18 makes each layer's key and value with torch.empty; 0.33 makes the value with
    # torch.empty_like(key) (comfy/text_encoders/llama.py init_kv_cache): watch both
    real, real_like, sizes = torch.empty, torch.empty_like, []
    def watch(fn):
        def spy(*a, **k):
            t = fn(*a, **k)
            sizes.append(t.numel() * t.element_size())
            return t
        return spy
    embeds = real([1, 100, model.model.config.hidden_size], device="meta", dtype=torch.bfloat16)
    torch.empty, torch.empty_like = watch(real), watch(real_like)
    try:
        model.generate(embeds=embeds, do_sample=False, max_length=256, execution_dtype=torch.bfloat16, stop_tokens=[])
    except Stop:
        pass
    finally:
        torch.empty, torch.empty_like = real, real_like
    c = model.model.config
    out[cls] = dict(bytes=sum(sizes), tensors=len(sizes), layers=c.num_hidden_layers, hidden=c.hidden_size,
                    heads=c.num_attention_heads, kv_heads=c.num_key_value_heads, head_dim=c.head_dim)
print(json.dumps(out))
'''


def test_textgenerate_kv_cache_matches_comfyui(run_in_comfy, comfy_install):
    out = run_in_comfy(KV_SNIPPET)
    if "skip" in out:
        # 0.8.0 has no TextGenerate (comfy/text_encoders/llama.py there has no BaseGenerate): nothing of it to
        # match, and no prompt of that version can use it; a version that should have it fails here
        version = tuple(int(x) for x in comfy_install[2].split(".")[:2])
        assert version < (0, 18), f"ComfyUI {comfy_install[2]}: {out['skip']}"
        return
    assert out, "no ComfyUI text-generation model class found"
    for cls, got in out.items():
        arch = dict(hidden_size=got["hidden"], layers=got["layers"], heads=got["heads"], kv_heads=got["kv_heads"],
                    head_dim=got["head_dim"])
        cfg = llm.config_from_arch(cls, arch)
        assert (cfg.kv_heads, cfg.head_dim) == (got["kv_heads"], got["head_dim"]), cls
        assert got["tensors"] == 2 * got["layers"], cls
        assert llm.textgen_kv_cache_bytes(cfg, prompt_tokens=100, max_length=256) == got["bytes"], cls


ADAPTER_SNIPPET = r'''
import json, torch
try:
    from comfy.weight_adapter import adapter_maps
    from comfy.weight_adapter.base import factorization
except ImportError as exc:
    print(json.dumps({"skip": f"no trainable adapters in this ComfyUI ({exc})"})); raise SystemExit
shapes = [(3072, 3072), (12288, 3072), (320, 4, 3, 3), (1024, 512), (360, 64), (1536, 1536, 1, 2, 2)]
counts = []
for alg, cls in adapter_maps.items():
    for shape in shapes:
        for rank in (4, 16):
            w = torch.empty(shape)
            try:
                a = cls.create_train(w, rank=rank, alpha=1.0)
            except Exception as exc:  # an algorithm that cannot adapt this shape
                counts.append([alg, list(shape), rank, None, type(exc).__name__])
                continue
            a = a.train().requires_grad_(True)
            counts.append([alg, list(shape), rank, sum(p.numel() for p in a.parameters() if p.requires_grad), None])
fact = [[d, f, list(factorization(d, f))] for d in (127, 128, 250, 360, 512, 1024, 3072, 12288) for f in (-1, 2, 4, 8, 16)]
print(json.dumps({"counts": counts, "fact": fact}))
'''


def test_trainlora_adapters_match_comfyui(run_in_comfy, comfy_install):
    old = tuple(int(x) for x in comfy_install[2].split(".")[:2]) < (0, 18)
    out = run_in_comfy(ADAPTER_SNIPPET)
    assert "skip" not in out, f"ComfyUI {comfy_install[2]}: {out.get('skip')}"  # 0.8.0 has them too
    for dim, factor, want in out["fact"]:
        assert list(T.comfy_factorization(dim, factor)) == want, (dim, factor)
    checked = 0
    for alg, shape, rank, params, error in out["counts"]:
        if params is None:
            continue
        assert T.comfy_adapter_params(tuple(shape), rank, alg, lokr_flat_kernel=old) == params, (alg, shape, rank)
        checked += 1
    assert checked >= 4 * 4 * 2
