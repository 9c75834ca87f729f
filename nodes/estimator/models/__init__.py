"""What the model files are, when their headers are not at hand (wing 2; imports only the floor and families/).

- catalogue: well-known public files by name, with their published sizes and sources
- published: the catalogue first, else the size an official template publishes
- name_infer: a file known only by its name -> kind, family, parameter count and precision
- llm_quant: the byte layouts of quantised weight formats (GGUF mixes, NF4, AWQ / GPTQ, FP8)
- media: the pixel size of an input image from its header
"""
