"""Trace GroundingDINO (Swin-T OGC) with storyicon/comfyui_segment_anything's own copy of its code: a real forward.

    python bench/trace_groundingdino.py PATH_TO_A_CHECKOUT_OF_comfyui_segment_anything [WIDTH HEIGHT]

Needs a python with torch, torchvision, timm and transformers 4.x (BertModel.get_extended_attention_mask; 5.x dropped
it). No GPU, no weights, no network: the model is built from IDEA-Research's GroundingDINO_SwinT_OGC.cfg.py (written
out below, the file node.py downloads) with random weights and a BERT-base of the default BertConfig (the tokenizer
replaced by the ids of "[CLS] leaves . [SEP]"; addict and yapf, which only hold and print the config, stubbed), then
runs ONE real forward on the CPU under a TorchDispatchMode that sums the storage of every tensor alive (weights
excluded). Memory does not depend on the weights' values. The deformable attention iterates its feature maps' sizes as
numbers, which is why fake or meta tensors cannot run it and a real forward does. Default input: 1333 x 800, the
largest image RandomResize([800], max_size=1333) makes (node.py load_dino_image)."""
import json
import os
import sys
import tempfile
import time
import types

CONFIG = """batch_size = 1
modelname = "groundingdino"
backbone = "swin_T_224_1k"
position_embedding = "sine"
pe_temperatureH = 20
pe_temperatureW = 20
return_interm_indices = [1, 2, 3]
backbone_freeze_keywords = None
enc_layers = 6
dec_layers = 6
pre_norm = False
dim_feedforward = 2048
hidden_dim = 256
dropout = 0.0
nheads = 8
num_queries = 900
query_dim = 4
num_patterns = 0
num_feature_levels = 4
enc_n_points = 4
dec_n_points = 4
two_stage_type = "standard"
two_stage_bbox_embed_share = False
two_stage_class_embed_share = False
transformer_activation = "relu"
dec_pred_bbox_embed_share = True
dn_box_noise_scale = 1.0
dn_label_noise_ratio = 0.5
dn_label_coef = 1.0
dn_bbox_coef = 1.0
embed_init_tgt = True
dn_labelbook_size = 2000
max_text_len = 256
text_encoder_type = "bert-base-uncased"
use_text_enhancer = True
use_fusion_layer = True
use_checkpoint = True
use_transformer_ckpt = True
use_text_cross_attention = True
text_dropout = 0.0
fusion_dropout = 0.0
fusion_droppath = 0.1
sub_sentence_present = True
"""

root = sys.argv[1]
W, H = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (1333, 800)
cfg = os.path.join(tempfile.mkdtemp(), "GroundingDINO_SwinT_OGC.cfg.py")
with open(cfg, "w", encoding="utf-8") as f:
    f.write(CONFIG)
sys.path.insert(0, root)
import torch
from transformers import BertConfig, BertModel
from transformers.tokenization_utils_base import BatchEncoding
from local_groundingdino.util import get_tokenlizer
class FakeTokenizer:
    def convert_tokens_to_ids(self, tokens):
        return [{"[CLS]": 101, "[SEP]": 102, ".": 1012, "?": 1029}[t] for t in tokens]
    def __call__(self, captions, padding=None, return_tensors=None):
        ids = torch.tensor([[101, 3727, 1012, 102]])  # "[CLS] leaves . [SEP]"
        return BatchEncoding({"input_ids": ids, "token_type_ids": torch.zeros_like(ids),
                              "attention_mask": torch.ones_like(ids)})
get_tokenlizer.get_tokenlizer = lambda t: FakeTokenizer()
get_tokenlizer.get_pretrained_language_model = lambda t: BertModel(BertConfig())
class _Dict(dict):  # addict.Dict, as SLConfig uses it
    def __init__(self, *a, **k):
        super().__init__()
        for key, value in dict(*a, **k).items():
            self[key] = _Dict(value) if isinstance(value, dict) and not isinstance(value, _Dict) else value
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name)
    def __setattr__(self, name, value):
        self[name] = value
sys.modules["addict"] = types.SimpleNamespace(Dict=_Dict)
for _name in ("yapf", "yapf.yapflib", "yapf.yapflib.yapf_api"):  # only pretty-prints a config
    sys.modules[_name] = types.SimpleNamespace(FormatCode=lambda *a, **k: ("", None))
from local_groundingdino.util.slconfig import SLConfig
from local_groundingdino.models import build_model
args = SLConfig.fromfile(cfg)
torch.manual_seed(0)
model = build_model(args).eval()
params = sum(p.numel() for p in model.parameters()); buffers = sum(b.numel() for b in model.buffers())
from _live_tensors import LiveTensors as Track  # noqa: E402  (bench/ is the script's folder)
t0 = time.time()
image = torch.zeros(1, 3, H, W)
with torch.no_grad():
    with Track() as tr:
        out = model(image, captions=["leaves."])
print(json.dumps({"width": W, "height": H, "params": params, "buffers": buffers, "peak_bytes": tr.peak,
                  "seconds": round(time.time() - t0, 1)}))
