"""What the model files are, when their headers are not at hand (wing 2; imports only the floor and families/).

- catalogue: well-known public files by name, with their published sizes and sources
- published: the catalogue first, else the size an official template publishes
- name_infer: a file known only by its name -> kind, family, parameter count and precision
- llm_quant: the byte layouts of quantised weight formats (GGUF mixes, NF4, AWQ / GPTQ, FP8)
- media: the pixel size (and an animation's frames) of an input image from its header
- video_header: an input video's frame size, frame count and rate from its container header (MP4 / MOV,
  Matroska / WebM, GIF)
"""
