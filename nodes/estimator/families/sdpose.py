"""SDPose (ComfyUI 0.33.0: comfy/ldm/modules/sdpose.py, comfy_extras/nodes_sdpose.py): whole-body pose keypoints
from an SD 2 UNet with a heatmap head, shipped as one checkpoint (UNet + head + the SD KL VAE).

- Detection (model_detection.py:1268-1270): the SD UNet config read as for SD 2 (context 1024, linear
  transformer projections) plus ``heatmap_head = True`` when ``heatmap_head.conv_layers.0.weight`` is in the
  file; the UNet builds ``HeatmapHead`` with its defaults (openaimodel.py:834-835).
- HeatmapHead (ldm/modules/sdpose.py:6-64): input_size (768, 1024), heatmap_scale 4; ConvTranspose2d 640->640
  k4 no bias (6,553,600), Conv2d 640->640 k1 (410,240), final Conv2d 640->133 k1 (85,253); InstanceNorm2d
  without affine weights: 7,049,093 parameters.
- SDPoseKeypointExtractor (nodes_sdpose.py:461-580): every image (or bbox crop) is stretched to 768 x 1024
  (:483-492), VAE-encoded (:551 / :558 / :570) and run through ONE UNet forward (comfy.sample.sample, steps=1,
  cfg=1.0, :507-514; cfg 1 skips the uncond, samplers.py:610) with the Lotus null conditioning (nodes_lotus.py:
  [1, 2, 1024]); the head then decodes the 640-channel output-block feature.
- The checkpoint's VAE: CheckpointLoaderSimple -> load_state_dict_guess_config takes the first_stage_model.
  keys (sd.py:2210, supported_models_base.py:45) and VAE.__init__ builds the default SD1.x/SD2.x AutoencoderKL
  (sd.py:661-690: ch 128, ch_mult 1,2,4,4, z 4) for SD's KL keys: the class and config of 'vae-kl4'.
  The file is not read here: that it holds SD 2's KL VAE rests on the size, 1.79 GB published
  (1,921,997,865 bytes, data/template_models.json) against 1,913,227,360 bytes for SD 2 UNet + head + KL VAE
  at 2 bytes a parameter (0.5 % for the header and any task embedding).
"""
from __future__ import annotations

from ._spec import DIFFUSION, VAE, Family, _r

ORDER = 151  # "sdpose" shares no pattern with another family's name rules

# SD 2 UNet 865,910,724 (supported_models.py SD20 unet_config; the same count tests/helpers_models.spec_unet("sd2")
# builds from ComfyUI's key layout); LotusD's 4-wide task embedding (label_emb, 1,646,080) is not counted: whether
# the SDPose file has it is not known without its header
P_SDPOSE_HEAD = 640 * 640 * 16 + (640 * 640 + 640) + (640 * 133 + 133)  # 7,049,093 (ldm/modules/sdpose.py:37-64)
P_SDPOSE_UNET = 865_910_724 + P_SDPOSE_HEAD
P_SDPOSE_VAE = 83_653_863  # SD KL VAE (stable_diffusion.py CHECKPOINT_SPLITS)
P_SDPOSE = P_SDPOSE_UNET + P_SDPOSE_VAE

# HeatmapHead defaults (ldm/modules/sdpose.py:10-21; openaimodel.py:835 passes none): the extractor's model size
SDPOSE_INPUT_WIDTH, SDPOSE_INPUT_HEIGHT = 768, 1024  # nodes_sdpose.py:483-484 (heatmap 192 x 256, x 4)

FAMILIES = {
    "sdpose": Family(DIFFUSION, "SDPose (SD 2 UNet + heatmap head)", dict(
        model_channels=320, hidden_size=320, channel_mult=(1, 2, 4, 4), transformer_depth=(1, 1, 1, 0), depth=16,
        heads=None, head_dim=64, context_dim=1024, in_channels=4, out_channels=4, latent_channels=4,
        spatial_compression=8, heatmap_channels=640, keypoints=133, input_size=(768, 1024), heatmap_scale=4,
        # a UNet attends at the full latent resolution at its first level (as memory.latent_tokens counts SD 1.5 /
        # SD 2): no patching, so the traced SD UNet profile is read at H x W latent tokens
        patch_size=(1, 1))),
}

# The SD 2 UNet's working memory: the traced SD UNet profile, as for 'sd2' and 'lotus-d' (stable_diffusion.py)
WORKING_MEMORY_ALIAS = {"sdpose": "sd15"}

# LotusConditioning (nodes_lotus.py:19-24): prompt_embeds [1, 2, 1024], the context of every forward
TEXT_TOKENS = {"sdpose": 2}

# LotusD / SD20 (supported_models.py:110, :531): memory_usage_factor 1.0
MEMORY_USAGE_FACTOR = {"sdpose": 1.0}

# The all-in-one checkpoint (no text encoder: the Lotus conditioning is inlined in the node)
CHECKPOINT_SPLITS = {
    "sdpose": {"model": (P_SDPOSE_UNET, DIFFUSION, "sdpose", "SDPose UNet + heatmap head"),
               "vae": (P_SDPOSE_VAE, VAE, "vae-kl4", "SD 2 KL VAE")},
}

NAME_RULES = {
    DIFFUSION: (_r(r"sdpose", "sdpose", "SDPose (SD 2 UNet + heatmap head)", P_SDPOSE_UNET,
                   "SD 2 UNet 865,910,724 + heatmap head 7,049,093 (families/sdpose.py)"),),
}
